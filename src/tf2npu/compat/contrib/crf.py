"""``tf.contrib.crf``: a linear-chain CRF layer (loss and decoding), absent from TF 2.15.

BERT/BiLSTM + CRF taggers (named-entity recognition) call ``crf_log_likelihood`` for the loss
and ``crf_decode`` / ``viterbi_decode`` for the tags. Written for tf2npu on the v1 graph API
with the same signatures, results and variable (``transitions``) as TF 1.15 contrib:

* a sequence's score is the sum of its unary potentials ``inputs[t, tag_t]`` for ``t < len``
  plus the transitions ``T[tag_t, tag_t+1]`` for ``t + 1 < len``;
* the log-partition is the forward algorithm over the first ``len`` steps; a length of 0
  gives a score and a log-partition of 0;
* decoding is Viterbi; ``crf_decode`` pads tags past a sequence's length with 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _mask(tf: Any, lengths: Any, steps: Any, dtype: Any) -> Any:
    return tf.cast(tf.sequence_mask(lengths, steps), dtype)


def crf_unary_score(tag_indices: Any, sequence_lengths: Any, inputs: Any) -> Any:
    """Sum of ``inputs[b, t, tag_indices[b, t]]`` over ``t < sequence_lengths[b]``: ``[B]``."""
    import tensorflow.compat.v1 as tf

    num_tags = tf.shape(inputs)[2]
    picked = tf.reduce_sum(inputs * tf.one_hot(tag_indices, num_tags, dtype=inputs.dtype), 2)
    mask = _mask(tf, sequence_lengths, tf.shape(tag_indices)[1], inputs.dtype)
    return tf.reduce_sum(picked * mask, 1)


def crf_binary_score(tag_indices: Any, sequence_lengths: Any, transition_params: Any) -> Any:
    """Sum of ``transition_params[tag_t, tag_t+1]`` over ``t + 1 < sequence_lengths[b]``."""
    import tensorflow.compat.v1 as tf

    pairs = tf.stack([tag_indices[:, :-1], tag_indices[:, 1:]], axis=2)
    scores = tf.gather_nd(transition_params, pairs)  # [B, T-1]
    mask = _mask(tf, sequence_lengths, tf.shape(tag_indices)[1], transition_params.dtype)
    return tf.reduce_sum(scores * mask[:, 1:], 1)


def crf_sequence_score(
    inputs: Any, tag_indices: Any, sequence_lengths: Any, transition_params: Any
) -> Any:
    """Unnormalised score of the tag sequences: unary plus binary score, ``[B]``."""
    return crf_unary_score(tag_indices, sequence_lengths, inputs) + crf_binary_score(
        tag_indices, sequence_lengths, transition_params
    )


def crf_log_norm(inputs: Any, sequence_lengths: Any, transition_params: Any) -> Any:
    """Log of the partition function (forward algorithm over each sequence's length), ``[B]``."""
    import tensorflow.compat.v1 as tf

    inputs = tf.convert_to_tensor(inputs)
    sequence_lengths = tf.cast(sequence_lengths, tf.int32)
    steps = tf.shape(inputs)[1]

    def body(t: Any, alpha: Any) -> tuple[Any, Any]:
        scores = tf.reduce_logsumexp(alpha[:, :, None] + transition_params[None], 1)
        moved = scores + inputs[:, t]
        return t + 1, tf.where(t < sequence_lengths, moved, alpha)

    _, alpha = tf.while_loop(lambda t, _: t < steps, body, [tf.constant(1), inputs[:, 0]])
    log_norm = tf.reduce_logsumexp(alpha, 1)
    return tf.where(sequence_lengths <= 0, tf.zeros_like(log_norm), log_norm)


def crf_log_likelihood(
    inputs: Any, tag_indices: Any, sequence_lengths: Any, transition_params: Any = None
) -> tuple[Any, Any]:
    """Log-likelihood of ``tag_indices`` under the CRF, and the transition matrix.

    Without ``transition_params`` a ``[num_tags, num_tags]`` variable named ``transitions`` is
    created in the current variable scope (default initializer), as in TF 1.15.
    """
    import tensorflow.compat.v1 as tf

    inputs = tf.convert_to_tensor(inputs)
    if transition_params is None:
        num_tags = tf.compat.dimension_value(inputs.shape[2])
        transition_params = tf.get_variable("transitions", [num_tags, num_tags])
    score = crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params)
    return score - crf_log_norm(inputs, sequence_lengths, transition_params), transition_params


def viterbi_decode(score: Any, transition_params: Any) -> tuple[list[int], float]:
    """Best tag sequence for one sequence's ``[T, N]`` scores (NumPy, outside the graph)."""
    score = np.asarray(score)
    trellis = np.zeros_like(score)
    backpointers = np.zeros_like(score, dtype=np.int32)
    trellis[0] = score[0]
    for t in range(1, score.shape[0]):
        candidates = np.expand_dims(trellis[t - 1], 1) + transition_params
        trellis[t] = score[t] + np.max(candidates, 0)
        backpointers[t] = np.argmax(candidates, 0)
    path = [int(np.argmax(trellis[-1]))]
    for pointers in backpointers[1:][::-1]:
        path.append(int(pointers[path[-1]]))
    path.reverse()
    return path, float(np.max(trellis[-1]))


def crf_decode(potentials: Any, transition_params: Any, sequence_length: Any) -> tuple[Any, Any]:
    """In-graph Viterbi: best tags ``[B, T]`` (int32, 0 past each length) and their scores."""
    import tensorflow.compat.v1 as tf

    potentials = tf.convert_to_tensor(potentials)
    sequence_length = tf.cast(sequence_length, tf.int32)
    steps = tf.shape(potentials)[1]
    pointers = tf.TensorArray(tf.int32, size=steps)

    def forward(t: Any, score: Any, ta: Any) -> tuple[Any, Any, Any]:
        candidates = score[:, :, None] + transition_params[None]
        moved = tf.reduce_max(candidates, 1) + potentials[:, t]
        ta = ta.write(t - 1, tf.argmax(candidates, 1, output_type=tf.int32))
        return t + 1, tf.where(t < sequence_length, moved, score), ta

    _, last, pointers = tf.while_loop(
        lambda t, *_: t < steps, forward, [tf.constant(1), potentials[:, 0], pointers]
    )
    pointers = pointers.write(steps - 1, tf.zeros_like(potentials[:, 0], tf.int32))
    best_last = tf.argmax(last, 1, output_type=tf.int32)
    final = tf.maximum(sequence_length - 1, 0)
    rows = tf.range(tf.shape(potentials)[0])

    def backward(t: Any, nxt: Any, ta: Any) -> tuple[Any, Any, Any]:
        from_pointer = tf.gather_nd(pointers.read(t), tf.stack([rows, nxt], 1))
        tag = tf.where(t < final, from_pointer, tf.zeros_like(from_pointer))
        tag = tf.where(tf.equal(t, final), best_last, tag)
        return t - 1, tag, ta.write(t, tag)

    _, _, tags = tf.while_loop(
        lambda t, *_: t >= 0,
        backward,
        [steps - 1, tf.zeros_like(best_last), tf.TensorArray(tf.int32, size=steps)],
    )
    return tf.transpose(tags.stack()), tf.reduce_max(last, 1)

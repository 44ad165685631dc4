"""TF 1.15's ``BeamSearchDecoder``, ``tile_batch`` and ``gather_tree``.

Each step, for every batch entry, the ``beam_width`` hypotheses are extended by every word:
a hypothesis's log-probability is the sum of its words' log-softmax; a finished hypothesis can
only extend with ``end_token`` at no cost. Candidates are ranked by

    score = log_prob / lp(length) + coverage_penalty_weight * cp      (cp only when finished)
    lp(length) = ((5 + length) / 6) ** length_penalty_weight           (Wu et al. 2016)
    cp = sum over memory of log(min(accumulated attention, 1))         (0 where never attended)

and the best ``beam_width`` continue (``top_k`` over ``beam * vocab``; parent = index //
vocab, word = index % vocab). ``finalize`` backtracks the parent pointers with
:func:`gather_tree`. ``gather_tree`` is written here on graph ops: TF 2.15 has no
``GatherTree`` kernel (TF 1.15 had it in contrib).
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np
import tensorflow.compat.v1 as tf

from tf2npu.compat.contrib.rnn.base import KerasLayer, assert_like_rnncell
from tf2npu.compat.contrib.seq2seq.decoder import Decoder, rnn_output_size
from tf2npu.compat.contrib.seq2seq.wrapper import AttentionWrapperState


class BeamSearchDecoderState(
    collections.namedtuple(
        "BeamSearchDecoderState",
        ("cell_state", "log_probs", "finished", "lengths", "accumulated_attention_probs"),
    )
):
    """The beam search's loop state, ``[batch, beam, ...]`` for every field."""


class BeamSearchDecoderOutput(
    collections.namedtuple("BeamSearchDecoderOutput", ("scores", "predicted_ids", "parent_ids"))
):
    """One step: each beam's score, its new word and the beam it extends."""


class FinalBeamSearchDecoderOutput(
    collections.namedtuple(
        "FinalBeamDecoderOutput", ["predicted_ids", "beam_search_decoder_output"]
    )
):
    """``predicted_ids`` (backtracked, ``[time, batch, beam]`` before the final transpose)
    and the raw per-step ``BeamSearchDecoderOutput``."""


def _tile_one(t: Any, multiplier: int) -> Any:
    t = tf.convert_to_tensor(t, name="t")
    if t.shape.ndims is None or t.shape.ndims < 1:
        raise ValueError("t must have statically known rank")
    shape = tf.shape(t)
    tiling = [1] * (t.shape.ndims + 1)
    tiling[1] = multiplier
    static_batch = tf.compat.dimension_value(t.shape[0])
    tiled = tf.tile(tf.expand_dims(t, 1), tiling)
    tiled = tf.reshape(tiled, tf.concat(([shape[0] * multiplier], shape[1:]), 0))
    tiled.set_shape(
        tf.TensorShape([None if static_batch is None else static_batch * multiplier]).concatenate(
            t.shape[1:]
        )
    )
    return tiled


def tile_batch(t: Any, multiplier: int, name: str | None = None) -> Any:
    """Repeat each batch entry ``multiplier`` times in place: ``[a, b] -> [a, a, b, b]``."""
    flat = tf.nest.flatten(t)
    with tf.name_scope(name, "tile_batch", [*flat, multiplier]):
        return tf.nest.map_structure(lambda x: _tile_one(x, multiplier), t)


def gather_tree(
    step_ids: Any,
    parent_ids: Any,
    max_sequence_lengths: Any,
    end_token: Any,
    name: str | None = None,
) -> Any:
    """Backtrack beams: ``[max_time, batch, beam]`` ids of the full hypothesis of each beam.

    As TF 1.15's kernel: beam ``k``'s last step ``len - 1`` (``len`` = the batch entry's
    ``max_sequence_lengths``, at most ``max_time``) is ``step_ids[len - 1, :, k]``; earlier
    steps follow ``parent_ids``. Steps from ``len`` on, and every step after the first
    ``end_token``, are ``end_token``; an out-of-range parent gives -1 at that step and
    ``end_token`` below it.
    """
    with tf.name_scope(name, "GatherTree", [step_ids, parent_ids, max_sequence_lengths]):
        step_ids = tf.convert_to_tensor(step_ids, name="step_ids")
        parent_ids = tf.cast(parent_ids, step_ids.dtype)
        end_token = tf.cast(end_token, step_ids.dtype)
        shape = tf.shape(step_ids)
        max_time, beam_width = shape[0], shape[2]
        lengths = tf.minimum(tf.cast(max_sequence_lengths, tf.int32), max_time)
        start = tf.tile(tf.range(beam_width, dtype=step_ids.dtype)[None], [shape[1], 1])

        def body(t: Any, parent: Any, broken: Any, out: Any) -> tuple[Any, Any, Any, Any]:
            live = tf.logical_and((t < lengths)[:, None], tf.logical_not(broken))
            in_range = tf.logical_and(parent >= 0, parent < tf.cast(beam_width, parent.dtype))
            safe = tf.where(in_range, parent, tf.zeros_like(parent))
            picked = tf.where(in_range, tf.batch_gather(step_ids[t], safe), -tf.ones_like(safe))
            value = tf.where(live, picked, tf.fill(tf.shape(picked), end_token))
            follow = tf.logical_and(live, in_range)
            next_parent = tf.where(follow, tf.batch_gather(parent_ids[t], safe), parent)
            broken = tf.logical_or(broken, tf.logical_and(live, tf.logical_not(in_range)))
            return t - 1, next_parent, broken, out.write(t, value)

        loop_vars = [
            max_time - 1,
            start,
            tf.zeros_like(start, dtype=tf.bool),
            tf.TensorArray(step_ids.dtype, size=max_time),
        ]
        _, _, _, out = tf.while_loop(lambda t, *_: t >= 0, body, loop_vars, back_prop=False)
        beams = out.stack()
        seen_end = tf.cumsum(tf.cast(tf.equal(beams, end_token), tf.int32), axis=0, exclusive=True)
        beams = tf.where(seen_end > 0, tf.fill(tf.shape(beams), end_token), beams)
        beams.set_shape(step_ids.shape)
        return beams


def gather_tree_from_array(t: Any, parent_ids: Any, sequence_length: Any) -> Any:
    """Reorder a stacked ``[time, batch * beam, ...]`` array along the backtracked beams."""
    max_time = tf.compat.dimension_value(parent_ids.shape[0]) or tf.shape(parent_ids)[0]
    batch_size = tf.compat.dimension_value(parent_ids.shape[1]) or tf.shape(parent_ids)[1]
    beam_width = tf.compat.dimension_value(parent_ids.shape[2]) or tf.shape(parent_ids)[2]
    beam_ids = tf.tile(tf.range(beam_width)[None, None], [max_time, batch_size, 1])
    max_lengths = tf.cast(tf.reduce_max(sequence_length, axis=1), tf.int32)
    sorted_ids = gather_tree(beam_ids, parent_ids, max_lengths, beam_width + 1)
    in_bound = tf.transpose(tf.sequence_mask(sequence_length, maxlen=max_time), perm=[2, 0, 1])
    sorted_ids = tf.where(in_bound, sorted_ids, beam_ids)
    time_ind = tf.tile(tf.reshape(tf.range(max_time), [-1, 1, 1]), [1, batch_size, beam_width])
    batch_ind = tf.tile(tf.reshape(tf.range(batch_size), [-1, 1, 1]), [1, max_time, beam_width])
    batch_ind = tf.transpose(batch_ind, perm=[1, 0, 2])
    indices = tf.stack([time_ind, batch_ind, sorted_ids], -1)
    final_shape = tf.shape(t)
    gathered = tf.gather_nd(tf.reshape(t, [max_time, batch_size, beam_width, -1]), indices)
    return tf.reshape(gathered, final_shape)


def _length_penalty(lengths: Any, weight: Any) -> Any:
    weight = tf.convert_to_tensor(weight, name="penalty_factor")
    weight.set_shape(())
    static = tf.get_static_value(weight)
    if static is not None and static == 0:
        return 1.0
    return tf.div((5.0 + tf.cast(lengths, tf.float32)) ** weight, (5.0 + 1.0) ** weight)


def _scores(
    log_probs: Any, lengths: Any, length_weight: Any, coverage_weight: Any, finished: Any, acc: Any
) -> Any:
    scores = log_probs / tf.cast(_length_penalty(lengths, length_weight), log_probs.dtype)
    coverage_weight = tf.convert_to_tensor(coverage_weight, name="coverage_penalty_weight")
    if coverage_weight.shape.ndims != 0:
        raise ValueError(
            f"coverage_penalty_weight should be a scalar, but saw shape: {coverage_weight.shape}"
        )
    if tf.get_static_value(coverage_weight) == 0.0:
        return scores
    if acc is None:
        raise ValueError(
            "accumulated_attention_probs can be None only if coverage penalty is disabled."
        )
    acc = tf.where(tf.equal(acc, 0.0), tf.ones_like(acc), acc)
    penalty = tf.reduce_sum(tf.log(tf.minimum(acc, 1.0)), 2) * tf.cast(finished, tf.float32)
    return scores + tf.expand_dims(penalty * coverage_weight, 2)


def _mean_alignments(state: Any) -> Any:
    probs = state.alignments
    if isinstance(probs, tuple):
        probs = tf.reduce_mean(tf.concat([tf.expand_dims(p, -1) for p in probs], -1), -1)
    return probs


def get_attention_probs(cell_state: Any, coverage_penalty_weight: float) -> Any:
    """Mean alignments of the attention states in ``cell_state`` (None when no coverage)."""
    if coverage_penalty_weight == 0.0:
        return None
    states = [cell_state] if isinstance(cell_state, AttentionWrapperState) else []
    if not states and isinstance(cell_state, tuple):
        states = [s for s in cell_state if isinstance(s, AttentionWrapperState)]
    if not states:
        raise ValueError("coverage_penalty_weight must be 0.0 if no cell is attentional.")
    probs = [_mean_alignments(s) for s in states]
    if len(probs) == 1:
        return probs[0]
    return tf.reduce_mean(tf.concat([tf.expand_dims(p, -1) for p in probs], -1), -1)


def _mask_probs(probs: Any, eos_token: Any, finished: Any) -> Any:
    """Finished beams can only emit ``eos_token``, at log-probability 0."""
    vocab = tf.shape(probs)[2]
    row = tf.one_hot(
        eos_token,
        vocab,
        dtype=probs.dtype,
        on_value=tf.convert_to_tensor(0.0, dtype=probs.dtype),
        off_value=probs.dtype.min,
    )
    finished_probs = tf.tile(tf.reshape(row, [1, 1, -1]), tf.concat([tf.shape(finished), [1]], 0))
    mask = tf.tile(tf.expand_dims(finished, 2), [1, 1, vocab])
    return tf.where(mask, finished_probs, probs)


def _gather(
    indices: Any, source: Any, batch_size: Any, range_size: Any, shape: Any, name: Any = None
) -> Any:
    """``source[b, indices[b, k]]`` through a flat gather, keeping the static shape."""
    with tf.name_scope(name, "tensor_gather_helper"):
        offsets = tf.expand_dims(tf.range(batch_size) * range_size, 1)
        flat = tf.gather(tf.reshape(source, shape), tf.reshape(indices + offsets, [-1]))
        out = tf.reshape(flat, tf.shape(source)[: 1 + len(shape)], name="output")
        static_batch = tf.get_static_value(batch_size)
        out.set_shape(tf.TensorShape([static_batch]).concatenate(source.shape[1 : 1 + len(shape)]))
        return out


def _maybe_gather(indices: Any, source: Any, batch_size: Any, range_size: Any, shape: Any) -> Any:
    if isinstance(source, tf.TensorArray):
        return source
    _check_ndims(source)
    if source.shape.ndims >= len(shape):
        return _gather(indices, source, batch_size, range_size, shape)
    return source


def _check_ndims(t: Any) -> None:
    if t.shape.ndims is None:
        raise ValueError(f"Expected tensor ({t}) to have known rank, but ndims == None.")


def _beam_search_step(
    time: Any,
    logits: Any,
    next_cell_state: Any,
    beam_state: BeamSearchDecoderState,
    batch_size: Any,
    beam_width: int,
    end_token: Any,
    length_penalty_weight: Any,
    coverage_penalty_weight: Any,
) -> tuple[BeamSearchDecoderOutput, BeamSearchDecoderState]:
    static_batch = tf.get_static_value(batch_size)
    finished_before = beam_state.finished
    not_finished = tf.logical_not(finished_before)
    step_log_probs = _mask_probs(tf.nn.log_softmax(logits), end_token, finished_before)
    total = tf.expand_dims(beam_state.log_probs, 2) + step_log_probs
    vocab = tf.compat.dimension_value(logits.shape[-1]) or tf.shape(logits)[-1]
    lengths_to_add = tf.one_hot(
        indices=tf.fill([batch_size, beam_width], end_token),
        depth=vocab,
        on_value=np.int64(0),
        off_value=np.int64(1),
        dtype=tf.int64,
    ) * tf.expand_dims(tf.cast(not_finished, tf.int64), 2)
    new_lengths = lengths_to_add + tf.expand_dims(beam_state.lengths, 2)
    accumulated = None
    attention = get_attention_probs(next_cell_state, coverage_penalty_weight)
    if attention is not None:
        attention *= tf.expand_dims(tf.cast(not_finished, tf.float32), 2)
        accumulated = beam_state.accumulated_attention_probs + attention
    scores = _scores(
        total,
        new_lengths,
        length_penalty_weight,
        coverage_penalty_weight,
        finished_before,
        accumulated,
    )
    scores_flat = tf.reshape(scores, [batch_size, -1])
    k = tf.convert_to_tensor(beam_width, dtype=tf.int32, name="beam_width")
    next_scores, word_indices = tf.nn.top_k(scores_flat, k=k)
    next_scores.set_shape([static_batch, beam_width])
    word_indices.set_shape([static_batch, beam_width])
    next_log_probs = _gather(
        word_indices, total, batch_size, beam_width * vocab, [-1], name="next_beam_probs"
    )
    next_word_ids = tf.cast(tf.mod(word_indices, vocab, name="next_beam_word_ids"), tf.int32)
    next_beam_ids = tf.cast(word_indices / vocab, tf.int32, name="next_beam_parent_ids")
    parent_finished = _gather(next_beam_ids, finished_before, batch_size, beam_width, [-1])
    next_finished = tf.logical_or(
        parent_finished, tf.equal(next_word_ids, end_token), name="next_beam_finished"
    )
    next_lengths = _gather(next_beam_ids, beam_state.lengths, batch_size, beam_width, [-1])
    next_lengths += tf.cast(tf.logical_not(parent_finished), tf.int64)
    next_accumulated: Any = ()
    if accumulated is not None:
        next_accumulated = _gather(
            next_beam_ids,
            accumulated,
            batch_size,
            beam_width,
            [batch_size * beam_width, -1],
            name="next_accumulated_attention_probs",
        )
    next_cell_state = tf.nest.map_structure(
        lambda s: _maybe_gather(
            next_beam_ids, s, batch_size, beam_width, [batch_size * beam_width, -1]
        ),
        next_cell_state,
    )
    state = BeamSearchDecoderState(
        cell_state=next_cell_state,
        log_probs=next_log_probs,
        lengths=next_lengths,
        finished=next_finished,
        accumulated_attention_probs=next_accumulated,
    )
    output = BeamSearchDecoderOutput(
        scores=next_scores, predicted_ids=next_word_ids, parent_ids=next_beam_ids
    )
    return output, state


class BeamSearchDecoder(Decoder):
    """Beam search over ``cell`` (TF 1.15 API): tile the memory and the initial state with
    :func:`tile_batch` to ``batch * beam_width`` first."""

    def __init__(
        self,
        cell: Any,
        embedding: Any,
        start_tokens: Any,
        end_token: Any,
        initial_state: Any,
        beam_width: int,
        output_layer: Any = None,
        length_penalty_weight: float = 0.0,
        coverage_penalty_weight: float = 0.0,
        reorder_tensor_arrays: bool = True,
    ) -> None:
        assert_like_rnncell("cell", cell)
        if output_layer is not None and not isinstance(output_layer, KerasLayer):
            raise TypeError(f"output_layer must be a Layer, received: {type(output_layer)}")
        self._cell = cell
        self._output_layer = output_layer
        self._reorder_tensor_arrays = reorder_tensor_arrays
        self._beam_width = beam_width
        self._length_penalty_weight = length_penalty_weight
        self._coverage_penalty_weight = coverage_penalty_weight
        if callable(embedding):
            self._embedding_fn = embedding
        else:
            self._embedding_fn = lambda ids: tf.nn.embedding_lookup(embedding, ids)
        self._start_tokens = tf.convert_to_tensor(start_tokens, dtype=tf.int32, name="start_tokens")
        if self._start_tokens.get_shape().ndims != 1:
            raise ValueError("start_tokens must be a vector")
        self._end_token = tf.convert_to_tensor(end_token, dtype=tf.int32, name="end_token")
        if self._end_token.get_shape().ndims != 0:
            raise ValueError("end_token must be a scalar")
        self._batch_size = tf.size(start_tokens)
        self._initial_cell_state = tf.nest.map_structure(
            self._maybe_split_batch_beams, initial_state, self._cell.state_size
        )
        self._start_tokens = tf.tile(tf.expand_dims(self._start_tokens, 1), [1, beam_width])
        self._start_inputs = self._embedding_fn(self._start_tokens)
        self._finished = tf.one_hot(
            tf.zeros([self._batch_size], dtype=tf.int32),
            depth=beam_width,
            on_value=False,
            off_value=True,
            dtype=tf.bool,
        )

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    @property
    def tracks_own_finished(self) -> bool:
        return True

    @property
    def output_size(self) -> BeamSearchDecoderOutput:
        shape = tf.TensorShape([self._beam_width])
        return BeamSearchDecoderOutput(scores=shape, predicted_ids=shape, parent_ids=shape)

    @property
    def output_dtype(self) -> BeamSearchDecoderOutput:
        dtype = tf.nest.flatten(self._initial_cell_state)[0].dtype
        size = rnn_output_size(self._cell, self._output_layer)
        return BeamSearchDecoderOutput(
            scores=tf.nest.map_structure(lambda _: dtype, size),
            predicted_ids=tf.int32,
            parent_ids=tf.int32,
        )

    def initialize(self, name: str | None = None) -> tuple[Any, Any, Any]:
        """``(finished, start inputs, state)``; only beam 0 starts alive (log-prob 0)."""
        dtype = tf.nest.flatten(self._initial_cell_state)[0].dtype
        log_probs = tf.one_hot(
            tf.zeros([self._batch_size], dtype=tf.int32),
            depth=self._beam_width,
            on_value=tf.convert_to_tensor(0.0, dtype=dtype),
            off_value=tf.convert_to_tensor(-np.inf, dtype=dtype),
            dtype=dtype,
        )
        attention = get_attention_probs(self._initial_cell_state, self._coverage_penalty_weight)
        state = BeamSearchDecoderState(
            cell_state=self._initial_cell_state,
            log_probs=log_probs,
            finished=self._finished,
            lengths=tf.zeros([self._batch_size, self._beam_width], dtype=tf.int64),
            accumulated_attention_probs=() if attention is None else attention,
        )
        return self._finished, self._start_inputs, state

    def finalize(self, outputs: Any, final_state: Any, sequence_lengths: Any) -> Any:
        """Backtrack the predicted ids (and, if asked, TensorArrays in the cell state)."""
        max_lengths = tf.cast(tf.reduce_max(final_state.lengths, axis=1), tf.int32)
        predicted_ids = gather_tree(
            outputs.predicted_ids, outputs.parent_ids, max_lengths, self._end_token
        )
        if self._reorder_tensor_arrays:
            final_state = final_state._replace(
                cell_state=tf.nest.map_structure(
                    lambda t: self._maybe_sort_array_beams(
                        t, outputs.parent_ids, final_state.lengths
                    ),
                    final_state.cell_state,
                )
            )
        return (
            FinalBeamSearchDecoderOutput(
                beam_search_decoder_output=outputs, predicted_ids=predicted_ids
            ),
            final_state,
        )

    def _merge_batch_beams(self, t: Any, s: Any = None) -> Any:
        s = (
            tf.TensorShape(tf.get_static_value(s))
            if isinstance(s, tf.Tensor)
            else tf.TensorShape(s)
        )
        static_batch = tf.get_static_value(self._batch_size)
        merged = None if static_batch is None else static_batch * self._beam_width
        out = tf.reshape(t, tf.concat(([self._batch_size * self._beam_width], tf.shape(t)[2:]), 0))
        out.set_shape(tf.TensorShape([merged]).concatenate(s))
        return out

    def _split_batch_beams(self, t: Any, s: Any = None) -> Any:
        s = (
            tf.TensorShape(tf.get_static_value(s))
            if isinstance(s, tf.Tensor)
            else tf.TensorShape(s)
        )
        out = tf.reshape(t, tf.concat(([self._batch_size, self._beam_width], tf.shape(t)[1:]), 0))
        static_batch = tf.get_static_value(self._batch_size)
        expected = tf.TensorShape([static_batch, self._beam_width]).concatenate(s)
        if not out.shape.is_compatible_with(expected):
            raise ValueError(
                "Unexpected behavior when reshaping between beam width and batch size.  The "
                f"reshaped tensor has shape: {out.shape}.  We expected it to have shape "
                f"(batch_size, beam_width, depth) == {expected}.  Perhaps you forgot to create "
                "a zero_state with batch_size=encoder_batch_size * beam_width?"
            )
        out.set_shape(expected)
        return out

    def _maybe_split_batch_beams(self, t: Any, s: Any) -> Any:
        if isinstance(t, tf.TensorArray):
            return t
        _check_ndims(t)
        return self._split_batch_beams(t, s) if t.shape.ndims >= 1 else t

    def _maybe_merge_batch_beams(self, t: Any, s: Any) -> Any:
        if isinstance(t, tf.TensorArray):
            return t
        _check_ndims(t)
        return self._merge_batch_beams(t, s) if t.shape.ndims >= 2 else t

    def _maybe_sort_array_beams(self, t: Any, parent_ids: Any, lengths: Any) -> Any:
        if not isinstance(t, tf.TensorArray):
            return t
        shape = t.element_shape
        if shape.ndims is None or shape.ndims < 1:
            tf.logging.warn(
                f"The TensorArray {t.handle.name} in the cell state is not amenable to sorting "
                "based on the beam search result. For a TensorArray to be sorted, its elements "
                f"shape must be defined and have at least a rank of 1, but saw shape: {shape}"
            )
            return t
        static_batch = tf.get_static_value(self._batch_size)
        if static_batch is not None and shape.dims[0].value is not None:
            if shape[0] != static_batch * self._beam_width:
                tf.logging.warn(
                    "TensorArray reordering expects elements to be reshapable to "
                    f"[{static_batch}, {self._beam_width}, None] which is incompatible with the "
                    f"current shape {shape}. Consider setting reorder_tensor_arrays to False to "
                    "disable TensorArray reordering during the beam search."
                )
                return t
        return gather_tree_from_array(t.stack(), parent_ids, lengths)

    def step(self, time: Any, inputs: Any, state: Any, name: str | None = None) -> Any:
        """One beam step: ``(BeamSearchDecoderOutput, state, next_inputs, finished)``."""
        with tf.name_scope(name, "BeamSearchDecoderStep", (time, inputs, state)):
            inputs = tf.nest.map_structure(
                lambda inp: self._merge_batch_beams(inp, s=inp.shape[2:]), inputs
            )
            cell_state = tf.nest.map_structure(
                self._maybe_merge_batch_beams, state.cell_state, self._cell.state_size
            )
            outputs, next_cell_state = self._cell(inputs, cell_state)
            outputs = tf.nest.map_structure(
                lambda out: self._split_batch_beams(out, out.shape[1:]), outputs
            )
            next_cell_state = tf.nest.map_structure(
                self._maybe_split_batch_beams, next_cell_state, self._cell.state_size
            )
            if self._output_layer is not None:
                outputs = self._output_layer(outputs)
            output, beam_state = _beam_search_step(
                time=time,
                logits=outputs,
                next_cell_state=next_cell_state,
                beam_state=state,
                batch_size=self._batch_size,
                beam_width=self._beam_width,
                end_token=self._end_token,
                length_penalty_weight=self._length_penalty_weight,
                coverage_penalty_weight=self._coverage_penalty_weight,
            )
            finished = beam_state.finished
            next_inputs = tf.cond(
                tf.reduce_all(finished),
                lambda: self._start_inputs,
                lambda: self._embedding_fn(output.predicted_ids),
            )
        return output, beam_state, next_inputs, finished

"""TF 1.15's seq2seq and contrib.rnn maths, written out in NumPy from its definitions.

The tests compare tf2npu's graph implementations against these on small random inputs. The
module imports only NumPy, so its source is also sent as is to the subprocesses in which the
TF tests run (``inspect.getsource``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

Array = Any  # numpy arrays (and the floats broadcast with them)


def sigmoid(x: Array) -> Array:
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x: Array) -> Array:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def log_softmax(x: Array) -> Array:
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def masked_softmax(score: Array, lengths: Array) -> Array:
    """softmax over the first ``lengths[b]`` entries of each row; 0 past them (score -inf)."""
    steps = np.arange(score.shape[1])[None, :]
    return softmax(np.where(steps < lengths[:, None], score, -np.inf))


def bahdanau_score(
    query: Array, keys: Array, v: Array, g: float | None = None, b: Array | None = None
) -> Array:
    """``sum(v * tanh(keys + query))``; normalised: ``v -> g v / |v|``, ``+ b`` in the tanh."""
    if g is None:
        return (v * np.tanh(keys + query[:, None, :])).sum(-1)
    normed = g * v / np.sqrt((v**2).sum())
    return (normed * np.tanh(keys + query[:, None, :] + b)).sum(-1)


def luong_score(query: Array, keys: Array, g: float | None = None) -> Array:
    """``query . keys`` per memory step, times ``g`` when scaled."""
    score = np.einsum("bu,btu->bt", query, keys)
    return score if g is None else g * score


def lstm_block_step(
    x: Array,
    c: Array,
    h: Array,
    w: Array,
    b: Array,
    forget_bias: float,
    cell_clip: float = -1.0,
    peep: tuple[Array, Array, Array] | None = None,
) -> tuple[Array, Array]:
    """One ``LSTMBlockCell`` step; ``w`` columns are the gates i, c, f, o."""
    gates = np.concatenate([x, h], 1) @ w + b
    i, ci, f, o = np.split(gates, 4, axis=1)
    wci, wcf, wco = peep if peep is not None else (0.0, 0.0, 0.0)
    i = sigmoid(i + wci * c)
    f = sigmoid(f + forget_bias + wcf * c)
    cs = i * np.tanh(ci) + f * c
    if cell_clip > 0:
        cs = np.clip(cs, -cell_clip, cell_clip)
    o = sigmoid(o + wco * cs)
    return cs, o * np.tanh(cs)


def gru_block_step(x: Array, h: Array, w_ru: Array, b_ru: Array, w_c: Array, b_c: Array) -> Array:
    """One ``GRUBlockCell`` step: ``h' = u h + (1 - u) tanh([x, r h] w_c + b_c)``."""
    r, u = np.split(sigmoid(np.concatenate([x, h], 1) @ w_ru + b_ru), 2, axis=1)
    cand = np.tanh(np.concatenate([x, r * h], 1) @ w_c + b_c)
    return u * h + (1 - u) * cand


def gather_tree(step_ids: Array, parent_ids: Array, lengths: Array, end_token: int) -> Array:
    """Backtrack each beam from its entry's last step, padding with ``end_token``."""
    time, batch, beams = step_ids.shape
    out = np.full_like(step_ids, end_token)
    for b in range(batch):
        n = min(time, int(lengths[b]))
        for k in range(beams):
            parent = k
            for t in range(n - 1, -1, -1):
                out[t, b, k] = step_ids[t, b, parent]
                parent = parent_ids[t, b, parent]
            ended = False
            for t in range(n):
                if ended:
                    out[t, b, k] = end_token
                elif out[t, b, k] == end_token:
                    ended = True
    return out


def length_penalty(lengths: Array, weight: float) -> Array:
    """Wu et al. (2016): ``((5 + length) / 6) ** weight``."""
    return ((5.0 + lengths) / 6.0) ** weight


def beam_step(
    log_probs: Array,
    logits: Array,
    finished: Array,
    lengths: Array,
    end_token: int,
    lp_weight: float,
) -> tuple[Array, ...]:
    """One beam-search step without coverage: scores, words, parents, log-probs, lengths.

    ``log_probs``/``finished``/``lengths`` are ``[batch, beam]``; ``logits``
    ``[batch, beam, vocab]``. Ties go to the lower flat index, as ``top_k``.
    """
    batch, beams, vocab = logits.shape
    step = log_softmax(logits)
    eos_row = np.full(vocab, np.finfo(np.float32).min)
    eos_row[end_token] = 0.0
    step = np.where(finished[:, :, None], eos_row, step)
    total = log_probs[:, :, None] + step
    add = np.where(np.arange(vocab) == end_token, 0, 1)[None, None, :] * (~finished)[:, :, None]
    new_lengths = lengths[:, :, None] + add
    scores = total / length_penalty(new_lengths, lp_weight)
    flat = scores.reshape(batch, -1)
    order = np.argsort(-flat, axis=1, kind="stable")[:, :beams]
    rows = np.arange(batch)[:, None]
    parents, words = order // vocab, order % vocab
    parent_finished = finished[rows, parents]
    next_lengths = lengths[rows, parents] + (~parent_finished)
    return (
        flat[rows, order],
        words,
        parents,
        total.reshape(batch, -1)[rows, order],
        next_lengths,
        parent_finished | (words == end_token),
    )


def sequence_loss(logits: Array, targets: Array, weights: Array) -> float:
    """Weighted mean cross-entropy over batch and time (TF 1.15's default averaging)."""
    lp = log_softmax(logits)
    picked = np.take_along_axis(lp, targets[..., None], -1)[..., 0]
    return float((-picked * weights).sum() / weights.sum())

"""``DynamicRnn`` and ``BasicLSTMCell``: Ascend's fused LSTM over a sequence and for one step.

Both use TensorFlow's ``BasicLSTMCell`` layout: ``w`` is ``[input + hidden, 4 * hidden]``, the
rows for ``[x, h]`` concatenated in that order, the columns the gates ``i, j, f, o`` (input,
candidate, forget, output), and ``b`` is ``[4 * hidden]``. One step is::

    i, j, f, o = split([x, h] @ w + b, 4)
    c' = sigmoid(f + forget_bias) * c + sigmoid(i) * tanh(j)
    h' = sigmoid(o) * tanh(c')

so a ``BasicLSTMCell`` kernel and bias can be fed to either op unchanged. The gate outputs are
the activated gates (``sigmoid(i)``, ``tanh(j)``, ``sigmoid(f + forget_bias)``,
``sigmoid(o)``) and ``tanh(c')``: the values the device's gradient kernels read.
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import DT_FLOAT, DT_HALF, DT_INT32
from tf2npu.graph.npu_ops._recurrent import compute_dtype, scan_steps, step_mask, widened
from tf2npu.graph.npu_ops.opdef import ArgDef, AttrDef, NpuOpDef

__all__ = ["BASIC_LSTM_CELL", "DYNAMIC_RNN", "DYNAMIC_RNN_SUPPORTED", "lstm_gates"]

#: Attrs of DynamicRnn the CPU body computes only at their default (see ``_recurrent``).
DYNAMIC_RNN_SUPPORTED = (
    "cell_type",
    "direction",
    "cell_depth",
    "use_peephole",
    "keep_prob",
    "num_proj",
    "time_major",
    "activation",
)


def lstm_gates(x: Any, h: Any, w: Any, b: Any, forget_bias: float) -> tuple[Any, Any, Any, Any]:
    """The activated gates ``(i, j, f, o)`` of one step (all ``[batch, hidden]``)."""
    import tensorflow as tf

    gates = tf.matmul(tf.concat([x, h], axis=1), w) + b
    i, j, f, o = tf.split(gates, 4, axis=1)
    return tf.sigmoid(i), tf.tanh(j), tf.sigmoid(f + forget_bias), tf.sigmoid(o)


def _dynamic_rnn(
    x: Any,
    w: Any,
    b: Any,
    seq_length: Any,
    init_h: Any,
    init_c: Any,
    *,
    cell_type: str,
    direction: str,
    cell_depth: int,
    use_peephole: bool,
    keep_prob: float,
    cell_clip: float,
    num_proj: int,
    time_major: bool,
    activation: str,
    forget_bias: float,
    is_training: bool,
) -> tuple[Any, ...]:
    import tensorflow as tf

    # Only the defaults of these are computed; the npu_bridge layer refuses the others.
    del cell_type, direction, cell_depth, use_peephole, keep_prob, num_proj, time_major
    del activation, is_training
    wide = compute_dtype(x.dtype)
    xf, wf, bf = widened(x, 3, wide), widened(w, 2, wide), widened(b, 1, wide)
    steps, batch = tf.shape(x)[0], tf.shape(x)[1]
    hidden = tf.shape(w)[1] // 4
    h0 = tf.reshape(tf.cast(init_h, wide), [batch, hidden])
    c0 = tf.reshape(tf.cast(init_c, wide), [batch, hidden])
    mask = step_mask(seq_length, steps, wide)

    def step(prev: tuple[Any, ...], at: tuple[Any, Any]) -> tuple[Any, ...]:
        h, c = prev[1], prev[2]
        x_t, m = at
        i, j, f, o = lstm_gates(x_t, h, wf, bf, forget_bias)
        c_new = m * (f * c + i * j) + (1.0 - m) * c
        if cell_clip > 0:
            # The vendor's reference clips from above only (min(c, cell_clip)).
            c_new = tf.minimum(c_new, cell_clip)
        tanhc = tf.tanh(c_new)
        y = o * tanhc
        return m * y, m * y + (1.0 - m) * h, c_new, i, j, f, o, tanhc

    zeros = tf.zeros_like(h0)
    first = (zeros, h0, c0, zeros, zeros, zeros, zeros, zeros)
    outputs = scan_steps(step, (xf, mask), first)
    return tuple(tf.cast(t, x.dtype) for t in outputs)


def _basic_lstm_cell(
    x: Any,
    h: Any,
    c: Any,
    w: Any,
    b: Any,
    *,
    keep_prob: float,
    forget_bias: float,
    state_is_tuple: bool,
    activation: str,
) -> tuple[Any, ...]:
    import tensorflow as tf

    # keep_prob and activation are checked by npu_ops.basic_lstm_cell (1.0 and tanh only);
    # state_is_tuple only says how TF's cell packed the state: c and h come in separately.
    del keep_prob, state_is_tuple, activation
    wide = compute_dtype(x.dtype)
    xf, hf, cf, wf = (widened(t, 2, wide) for t in (x, h, c, w))
    bf = widened(b, 1, wide)
    i, j, f, o = lstm_gates(xf, hf, wf, bf, forget_bias)
    ct = f * cf + i * j
    tanhct = tf.tanh(ct)
    ht = o * tanhct
    return tuple(tf.cast(t, x.dtype) for t in (ct, ht, i, j, f, o, tanhct))


_GATES = (
    ArgDef("i", "sigmoid of the input gate, [time, batch, hidden]"),
    ArgDef("j", "tanh of the candidate, [time, batch, hidden]"),
    ArgDef("f", "sigmoid of the forget gate + forget_bias, [time, batch, hidden]"),
    ArgDef("o", "sigmoid of the output gate, [time, batch, hidden]"),
    ArgDef("tanhc", "tanh of the cell state, [time, batch, hidden]"),
)

DYNAMIC_RNN = NpuOpDef(
    name="DynamicRnn",
    summary="A one-layer LSTM over a time-major sequence, fused (Ascend's DynamicRNN).",
    math=(
        "per step t: i, j, f, o = split([x_t, h] @ w + b, 4); "
        "c_t = σ(f + forget_bias)·c + σ(i)·tanh(j) (min(c_t, cell_clip) when cell_clip > 0); "
        "h_t = σ(o)·tanh(c_t); steps t ≥ seq_length[b] keep h and c and give y = 0"
    ),
    inputs=(
        ArgDef("x", "the inputs, [time, batch, input]"),
        ArgDef("w", "the kernel, [input + hidden, 4·hidden], gate columns i, j, f, o"),
        ArgDef("b", "the bias, [4·hidden]"),
        ArgDef("seq_length", "valid steps per sequence, [batch]", type_attr="", dtype=DT_INT32),
        ArgDef("init_h", "the initial h, [1, batch, hidden]"),
        ArgDef("init_c", "the initial c, [1, batch, hidden]"),
    ),
    outputs=(
        ArgDef("y", "the outputs h_t (0 past seq_length), [time, batch, hidden]"),
        ArgDef("output_h", "the hidden state after each step, [time, batch, hidden]"),
        ArgDef("output_c", "the cell state after each step, [time, batch, hidden]"),
        *_GATES,
    ),
    dtypes=(DT_FLOAT, DT_HALF),
    attrs=(
        AttrDef("cell_type", "string", "LSTM", "the cell; only LSTM"),
        AttrDef("direction", "string", "UNIDIRECTIONAL", "only UNIDIRECTIONAL is computed"),
        AttrDef("cell_depth", "int", 1, "layers; only 1"),
        AttrDef("use_peephole", "bool", False, "peephole connections; only false"),
        AttrDef("keep_prob", "float", 1.0, "dropout keep probability; only 1.0"),
        AttrDef("cell_clip", "float", -1.0, "upper bound of c when > 0"),
        AttrDef("num_proj", "int", 0, "projection size; only 0"),
        AttrDef("time_major", "bool", True, "inputs [time, batch, input]; only true"),
        AttrDef("activation", "string", "tanh", "cell activation; only tanh"),
        AttrDef("forget_bias", "float", 0.0, "added to the forget gate before the sigmoid"),
        AttrDef("is_training", "bool", True, "the gate outputs are always computed here"),
    ),
    body=_dynamic_rnn,
    exactness=(
        "the formula in float32 (float16 inputs are widened and the results cast back, as "
        "the device accumulates in float32); equals a numpy float64 reference to ~1e-6"
    ),
)

BASIC_LSTM_CELL = NpuOpDef(
    name="BasicLSTMCell",
    summary="One step of an LSTM cell, fused (TF's BasicLSTMCell layout and math).",
    math=(
        "i, j, f, o = split([x, h] @ w + b, 4); ct = σ(f + forget_bias)·c + σ(i)·tanh(j); "
        "ht = σ(o)·tanh(ct)"
    ),
    inputs=(
        ArgDef("x", "the input, [batch, input]"),
        ArgDef("h", "the previous hidden state, [batch, hidden]"),
        ArgDef("c", "the previous cell state, [batch, hidden]"),
        ArgDef("w", "the kernel, [input + hidden, 4·hidden], gate columns i, j, f, o"),
        ArgDef("b", "the bias, [4·hidden]"),
    ),
    outputs=(
        ArgDef("ct", "the new cell state"),
        ArgDef("ht", "the new hidden state"),
        ArgDef("it", "sigmoid of the input gate"),
        ArgDef("jt", "tanh of the candidate"),
        ArgDef("ft", "sigmoid of the forget gate + forget_bias"),
        ArgDef("ot", "sigmoid of the output gate"),
        ArgDef("tanhct", "tanh(ct)"),
    ),
    dtypes=(DT_FLOAT, DT_HALF),
    attrs=(
        AttrDef("keep_prob", "float", 1.0, "dropout keep probability; only 1.0"),
        AttrDef("forget_bias", "float", 1.0, "added to the forget gate before the sigmoid"),
        AttrDef("state_is_tuple", "bool", True, "how the caller packs (c, h); no effect here"),
        AttrDef("activation", "string", "tanh", "cell activation; only tanh"),
    ),
    body=_basic_lstm_cell,
    exactness=(
        "the formula in float32 (float16 widened, results cast back); equals "
        "tf.nn.rnn_cell.BasicLSTMCell with the same kernel and bias to float rounding"
    ),
)

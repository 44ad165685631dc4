"""``DynamicGruV2`` and ``DynamicAUGRU``: Ascend's fused GRU, and the GRU with an attentional
update gate of DIEN, over a time-major sequence.

Weights are split by source: ``weight_input`` ``[input, 3 * hidden]`` and ``weight_hidden``
``[hidden, 3 * hidden]``, each with its bias ``[3 * hidden]``; the column blocks are the gates in
``gate_order``: ``"zrh"`` (update, reset, candidate; the default) or ``"rzh"``. The reset gate
is applied after the hidden matmul (``reset_after=True``, the only mode of the device kernel)::

    gi = x @ weight_input + bias_input;  gh = h @ weight_hidden + bias_hidden
    z = sigmoid(gi_z + gh_z);  r = sigmoid(gi_r + gh_r)
    n = tanh(gi_h + r * gh_h)
    h' = z * h + (1 - z) * n

``DynamicAUGRU`` scales the update gate by the attention score ``a`` (``weight_att``,
``[time, batch]``) first: ``z' = (1 - a) * z``, ``h' = z' * h + (1 - z') * n`` (DIEN's AUGRU in
the same convention). Outputs: ``y`` and ``output_h`` (``h'`` per step), the gates ``update``
(z), ``update_att`` (z', AUGRU only), ``reset`` (r), ``new`` (n) and ``hidden_new`` (gh_h).
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import DT_FLOAT, DT_HALF, DT_INT32
from tf2npu.graph.npu_ops._recurrent import compute_dtype, scan_steps, step_mask, widened
from tf2npu.graph.npu_ops.opdef import ArgDef, AttrDef, NpuOpDef

__all__ = ["DYNAMIC_AUGRU", "DYNAMIC_GRU_SUPPORTED", "DYNAMIC_GRU_V2", "GATE_ORDERS"]

GATE_ORDERS = ("zrh", "rzh")
#: Attrs the CPU bodies compute only at their default (see ``_recurrent``).
DYNAMIC_GRU_SUPPORTED = (
    "direction",
    "cell_depth",
    "keep_prob",
    "cell_clip",
    "num_proj",
    "time_major",
    "activation",
)


def _split_gates(t: Any, gate_order: str) -> tuple[Any, Any, Any]:
    """``(z, r, h)`` column blocks of a ``[batch, 3 * hidden]`` tensor."""
    import tensorflow as tf

    first, second, cand = tf.split(t, 3, axis=1)
    return (first, second, cand) if gate_order == "zrh" else (second, first, cand)


def _gru(
    x: Any,
    weights: tuple[Any, Any, Any, Any],
    seq_length: Any,
    init_h: Any,
    att: Any,
    gate_order: str,
    reset_after: bool,
) -> tuple[Any, ...]:
    """The shared recurrence; ``att`` is ``None`` for the plain GRU."""
    import tensorflow as tf

    if gate_order not in GATE_ORDERS or not reset_after:
        raise ValueError(
            f"GRU: gate_order={gate_order!r}, reset_after={reset_after!r}: the Ascend kernel "
            f"and tf2npu compute gate_order in {GATE_ORDERS} with reset_after=True only"
        )
    wide = compute_dtype(x.dtype)
    xf = widened(x, 3, wide)
    ranks = zip(weights, (2, 2, 1, 1), strict=True)
    w_in, w_hid, b_in, b_hid = (widened(t, r, wide) for t, r in ranks)
    steps, batch = tf.shape(x)[0], tf.shape(x)[1]
    hidden = tf.shape(w_hid)[0]
    h0 = tf.reshape(tf.cast(init_h, wide), [batch, hidden])
    mask = step_mask(seq_length, steps, wide)
    scores = tf.zeros([steps, batch], wide) if att is None else widened(att, 2, wide)

    def step(prev: tuple[Any, ...], at: tuple[Any, Any, Any]) -> tuple[Any, ...]:
        h = prev[1]
        x_t, m, a = at
        gi_z, gi_r, gi_h = _split_gates(tf.matmul(x_t, w_in) + b_in, gate_order)
        gh_z, gh_r, gh_h = _split_gates(tf.matmul(h, w_hid) + b_hid, gate_order)
        z = tf.sigmoid(gi_z + gh_z)
        r = tf.sigmoid(gi_r + gh_r)
        n = tf.tanh(gi_h + r * gh_h)
        z_att = (1.0 - a[:, None]) * z
        h_new = z_att * h + (1.0 - z_att) * n
        return m * h_new, m * h_new + (1.0 - m) * h, z, z_att, r, n, gh_h

    zeros = tf.zeros_like(h0)
    first = (zeros, h0, zeros, zeros, zeros, zeros, zeros)
    outputs = scan_steps(step, (xf, mask, scores), first)
    return tuple(tf.cast(t, x.dtype) for t in outputs)


def _dynamic_gru_v2(
    x: Any,
    weight_input: Any,
    weight_hidden: Any,
    bias_input: Any,
    bias_hidden: Any,
    seq_length: Any,
    init_h: Any,
    *,
    direction: str,
    cell_depth: int,
    keep_prob: float,
    cell_clip: float,
    num_proj: int,
    time_major: bool,
    activation: str,
    gate_order: str,
    reset_after: bool,
    is_training: bool,
) -> tuple[Any, ...]:
    # Only the defaults of these are computed; the npu_bridge layer refuses the others.
    del direction, cell_depth, keep_prob, cell_clip, num_proj, time_major, activation
    del is_training
    weights = (weight_input, weight_hidden, bias_input, bias_hidden)
    y, h, z, _, r, n, gh_h = _gru(x, weights, seq_length, init_h, None, gate_order, reset_after)
    return y, h, z, r, n, gh_h


def _dynamic_augru(
    x: Any,
    weight_input: Any,
    weight_hidden: Any,
    weight_att: Any,
    bias_input: Any,
    bias_hidden: Any,
    seq_length: Any,
    init_h: Any,
    *,
    direction: str,
    cell_depth: int,
    keep_prob: float,
    cell_clip: float,
    num_proj: int,
    time_major: bool,
    activation: str,
    gate_order: str,
    reset_after: bool,
    is_training: bool,
) -> tuple[Any, ...]:
    del direction, cell_depth, keep_prob, cell_clip, num_proj, time_major, activation
    del is_training
    weights = (weight_input, weight_hidden, bias_input, bias_hidden)
    return _gru(x, weights, seq_length, init_h, weight_att, gate_order, reset_after)


def _attrs() -> tuple[AttrDef, ...]:
    return (
        AttrDef("direction", "string", "UNIDIRECTIONAL", "only UNIDIRECTIONAL is computed"),
        AttrDef("cell_depth", "int", 1, "layers; only 1"),
        AttrDef("keep_prob", "float", 1.0, "dropout keep probability; only 1.0"),
        AttrDef("cell_clip", "float", -1.0, "only -1 (no clip), as the device kernel"),
        AttrDef("num_proj", "int", 0, "projection size; only 0"),
        AttrDef("time_major", "bool", True, "inputs [time, batch, input]; only true"),
        AttrDef("activation", "string", "tanh", "candidate activation; only tanh"),
        AttrDef("gate_order", "string", "zrh", "column order of the gates: zrh or rzh"),
        AttrDef("reset_after", "bool", True, "reset applied after the matmul; only true"),
        AttrDef("is_training", "bool", True, "the gate outputs are always computed here"),
    )


def _inputs(with_att: bool) -> tuple[ArgDef, ...]:
    att = (ArgDef("weight_att", "attention scores a, [time, batch]"),) if with_att else ()
    return (
        ArgDef("x", "the inputs, [time, batch, input]"),
        ArgDef("weight_input", "input kernel, [input, 3·hidden], gate blocks per gate_order"),
        ArgDef("weight_hidden", "hidden kernel, [hidden, 3·hidden], same gate blocks"),
        *att,
        ArgDef("bias_input", "input bias, [3·hidden]"),
        ArgDef("bias_hidden", "hidden bias, [3·hidden]"),
        ArgDef("seq_length", "valid steps per sequence, [batch]", type_attr="", dtype=DT_INT32),
        ArgDef("init_h", "the initial h, [batch, hidden]"),
    )


def _outputs(with_att: bool) -> tuple[ArgDef, ...]:
    att = (ArgDef("update_att", "(1 − a)·z, [time, batch, hidden]"),) if with_att else ()
    return (
        ArgDef("y", "the outputs h_t (0 past seq_length), [time, batch, hidden]"),
        ArgDef("output_h", "the hidden state after each step, [time, batch, hidden]"),
        ArgDef("update", "the update gate z, [time, batch, hidden]"),
        *att,
        ArgDef("reset", "the reset gate r, [time, batch, hidden]"),
        ArgDef("new", "the candidate n, [time, batch, hidden]"),
        ArgDef("hidden_new", "h @ weight_hidden + bias_hidden, candidate block"),
    )


_MATH = (
    "z = σ(gi_z + gh_z), r = σ(gi_r + gh_r), n = tanh(gi_h + r·gh_h) with "
    "gi = x_t @ weight_input + bias_input, gh = h @ weight_hidden + bias_hidden; "
)
_EXACT = (
    "the formula in float32 (float16 widened, results cast back); equals a numpy float64 "
    "reference to ~1e-6"
)

DYNAMIC_GRU_V2 = NpuOpDef(
    name="DynamicGruV2",
    summary="A one-layer GRU over a time-major sequence, fused (Ascend's DynamicGRUV2).",
    math=_MATH + "h_t = z·h + (1 − z)·n; steps past seq_length keep h and give y = 0",
    inputs=_inputs(with_att=False),
    outputs=_outputs(with_att=False),
    dtypes=(DT_FLOAT, DT_HALF),
    attrs=_attrs(),
    body=_dynamic_gru_v2,
    exactness=_EXACT,
)

DYNAMIC_AUGRU = NpuOpDef(
    name="DynamicAUGRU",
    summary="DIEN's GRU with attentional update gate over a time-major sequence, fused.",
    math=_MATH + "z' = (1 − a_t)·z, h_t = z'·h + (1 − z')·n; steps past seq_length keep h",
    inputs=_inputs(with_att=True),
    outputs=_outputs(with_att=True),
    dtypes=(DT_FLOAT, DT_HALF),
    attrs=_attrs(),
    body=_dynamic_augru,
    exactness=_EXACT,
)

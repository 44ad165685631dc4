"""``LarsV2``: the layer-wise adaptive rate scaling (LARS) of one gradient.

On the device ``LarsV2`` is computed as two ``SquareSumV1`` and one ``LarsV2Update``; here one
body does the same math::

    coeff = hyperpara · ‖w‖ / (‖g‖ + weight_decay · ‖w‖ + epsilon)
    coeff = clip(coeff / learning_rate, 0, 1)      (only with use_clip)
    output = coeff · (g + weight_decay · w)

``learning_rate`` is read only with ``use_clip``. ``npu_ops.LARS`` (a list of weights and
gradients) emits one ``LarsV2`` per pair with ``use_clip=False``: the same update per tensor.
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import DT_FLOAT
from tf2npu.graph.npu_ops.opdef import ArgDef, AttrDef, NpuOpDef

__all__ = ["LARS_V2"]


def _lars_v2(
    input_weight: Any,
    input_grad: Any,
    weight_decay: Any,
    learning_rate: Any,
    *,
    hyperpara: float,
    epsilon: float,
    use_clip: bool,
) -> Any:
    import tensorflow as tf

    w_norm = tf.sqrt(tf.reduce_sum(tf.square(input_weight)))
    g_norm = tf.sqrt(tf.reduce_sum(tf.square(input_grad)))
    wd = tf.reshape(weight_decay, [])
    coeff = hyperpara * w_norm / (g_norm + wd * w_norm + epsilon)
    if use_clip:
        coeff = tf.clip_by_value(coeff / tf.reshape(learning_rate, []), 0.0, 1.0)
    return coeff * (input_grad + wd * input_weight)


LARS_V2 = NpuOpDef(
    name="LarsV2",
    summary="LARS trust-ratio scaling of one gradient, weight decay folded in.",
    math=(
        "coeff = hyperpara·‖w‖ / (‖g‖ + weight_decay·‖w‖ + epsilon); with use_clip "
        "coeff = clip(coeff / learning_rate, 0, 1); output = coeff·(g + weight_decay·w)"
    ),
    inputs=(
        ArgDef("input_weight", "the weight w"),
        ArgDef("input_grad", "its gradient g, w's shape"),
        ArgDef("weight_decay", "the weight-decay rate (scalar or [1])"),
        ArgDef("learning_rate", "the learning rate (scalar or [1]); read only with use_clip"),
    ),
    outputs=(ArgDef("output", "the scaled gradient, w's shape"),),
    dtypes=(DT_FLOAT,),
    attrs=(
        AttrDef("hyperpara", "float", 0.001, "the trust coefficient"),
        AttrDef("epsilon", "float", 1e-5, "added to the denominator"),
        AttrDef("use_clip", "bool", False, "clip coeff / learning_rate to [0, 1]"),
    ),
    body=_lars_v2,
    exactness="the formula in float32 with TF's reduce_sum; ~1e-6 relative to numpy float64",
)

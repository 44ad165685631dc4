"""``LayerNorm``: normalisation over the trailing axes, returning the statistics too.

Ascend's fused LayerNorm returns the mean and variance (the backward op reads them), shaped
like ``x`` with the normalised axes kept as size 1. float16 inputs are normalised in float32
and cast back, as the device accumulates in float32.
"""

from __future__ import annotations

from typing import Any

from tf2npu.graph.npu_ops.opdef import DT_FLOAT, DT_HALF, ArgDef, AttrDef, NpuOpDef

__all__ = ["LAYER_NORM"]


def _layer_norm(
    x: Any,
    gamma: Any,
    beta: Any,
    *,
    begin_norm_axis: int,
    begin_params_axis: int,
    epsilon: float,
) -> Any:
    import tensorflow as tf

    # begin_params_axis only states gamma's and beta's shape (x.shape[begin_params_axis:]);
    # broadcasting against trailing axes applies them, so the body does not read it.
    del begin_params_axis
    dtype = x.dtype
    wide = tf.float32
    xf, gf, bf = (tf.cast(t, wide) for t in (x, gamma, beta))
    rank = tf.rank(x)
    first = begin_norm_axis + rank if begin_norm_axis < 0 else tf.constant(begin_norm_axis)
    axes = tf.range(first, rank)
    mean = tf.reduce_mean(xf, axis=axes, keepdims=True)
    centered = xf - mean
    variance = tf.reduce_mean(centered * centered, axis=axes, keepdims=True)
    y = centered * tf.math.rsqrt(variance + epsilon) * gf + bf
    return tf.cast(y, dtype), tf.cast(mean, dtype), tf.cast(variance, dtype)


LAYER_NORM = NpuOpDef(
    name="LayerNorm",
    summary="Layer normalisation over axes begin_norm_axis.. of x, with its mean and variance.",
    math=(
        "mean = E[x], variance = E[(x − mean)²] over axes begin_norm_axis..rank−1 (kept as 1); "
        "y = (x − mean) / √(variance + epsilon) · gamma + beta"
    ),
    inputs=(
        ArgDef("x", "the tensor to normalise"),
        ArgDef("gamma", "scale, shape x.shape[begin_params_axis:]"),
        ArgDef("beta", "offset, shape x.shape[begin_params_axis:]"),
    ),
    outputs=(
        ArgDef("y", "the normalised tensor, x's shape"),
        ArgDef("mean", "the mean, x's shape with normalised axes of size 1"),
        ArgDef("variance", "the (biased) variance, same shape as mean"),
    ),
    dtypes=(DT_FLOAT, DT_HALF),
    attrs=(
        AttrDef("begin_norm_axis", "int", 0, "first normalised axis (negative: from the end)"),
        AttrDef("begin_params_axis", "int", 0, "first axis gamma and beta cover"),
        AttrDef("epsilon", "float", 1e-7, "added to the variance before the square root"),
    ),
    body=_layer_norm,
    exactness=(
        "the formula in float32 with TF's reduce_mean (pairwise sums): within a few ulp of a "
        "numpy float64 reference rounded to float32, not bit-identical to the device"
    ),
)

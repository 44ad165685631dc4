"""``LayerNorm`` and ``LayerNormGrad``: normalisation over the trailing axes, and its gradient.

Ascend's fused LayerNorm returns the mean and variance (the backward op reads them), shaped
like ``x`` with the normalised axes kept as size 1. float16 inputs are normalised in float32
and cast back, as the device accumulates in float32.

``LayerNormGrad`` (inputs ``dy, x, variance, mean, gamma``; outputs ``pd_x, pd_gamma,
pd_beta``, as Ascend's op info states) is the gradient the TF adapter gives ``LayerNorm``; GE's
``LayerNormGradFusionPass`` then splits it into ``LayerNormXBackprop`` (``pd_x``) and
``LayerNormBetaGammaBackprop`` (``pd_gamma, pd_beta``), which compute the same values. The
device op has no epsilon: its kernel (TBE ``layer_norm_grad``) adds a constant ``EPSLON =
1e-12`` to the variance, not the forward's epsilon. tf2npu's op takes an ``epsilon`` attr
(default that constant) and the ``layer_norm`` fusion sets it to the forward's, so a fused
training graph computes what the unfused one does; on the device a layer norm with epsilon
1e-5 (GPT-2's) gets gradients larger by about ``epsilon / (2 * variance)`` relative
(docs/fusion.md has the measured effect).
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import DT_FLOAT, DT_HALF
from tf2npu.graph.npu_ops.opdef import ArgDef, AttrDef, NpuOpDef

__all__ = ["DEVICE_GRAD_EPSILON", "LAYER_NORM", "LAYER_NORM_GRAD"]

#: What the device's LayerNormGrad kernel adds to the variance (TBE ``EPSLON``).
DEVICE_GRAD_EPSILON = 1e-12


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


def _layer_norm_grad(
    dy: Any, x: Any, variance: Any, mean: Any, gamma: Any, *, epsilon: float
) -> Any:
    import tensorflow as tf

    dtype = x.dtype
    wide = tf.float32
    dyf, xf, vf, mf, gf = (tf.cast(t, wide) for t in (dy, x, variance, mean, gamma))
    # normalised axes: where the statistics have size 1 (a size-1 axis of x changes nothing)
    axes = tf.reshape(tf.where(tf.equal(tf.shape(mf), 1)), [-1])
    # gamma and beta cover the trailing rank(gamma) axes: their gradients sum over the others
    leading = tf.range(tf.rank(xf) - tf.rank(gf))
    rstd = tf.math.rsqrt(vf + epsilon)
    xhat = (xf - mf) * rstd
    g = dyf * gf
    mean_g = tf.reduce_mean(g, axis=axes, keepdims=True)
    mean_gx = tf.reduce_mean(g * xhat, axis=axes, keepdims=True)
    pd_x = rstd * (g - mean_g - xhat * mean_gx)
    pd_gamma = tf.reduce_sum(dyf * xhat, axis=leading)
    pd_beta = tf.reduce_sum(dyf, axis=leading)
    # materialize gates the outputs together, as the device's one kernel: no pd_gamma reaches
    # the optimizer while pd_x still reads gamma
    return tuple(tf.cast(t, dtype) for t in (pd_x, pd_gamma, pd_beta))


LAYER_NORM_GRAD = NpuOpDef(
    name="LayerNormGrad",
    summary="Gradient of LayerNorm with respect to x, gamma and beta.",
    math=(
        "r = 1/√(variance + epsilon), x̂ = (x − mean)·r, g = dy·gamma; "
        "pd_x = r·(g − E[g] − x̂·E[g·x̂]) over the normalised axes (where mean has size 1); "
        "pd_gamma = Σ dy·x̂, pd_beta = Σ dy over the axes gamma does not cover"
    ),
    inputs=(
        ArgDef("dy", "the gradient flowing into y"),
        ArgDef("x", "the forward input"),
        ArgDef("variance", "the forward op's variance output"),
        ArgDef("mean", "the forward op's mean output"),
        ArgDef("gamma", "the scale"),
    ),
    outputs=(
        ArgDef("pd_x", "the gradient with respect to x"),
        ArgDef("pd_gamma", "the gradient with respect to gamma, gamma's shape"),
        ArgDef("pd_beta", "the gradient with respect to beta, gamma's shape"),
    ),
    dtypes=(DT_FLOAT, DT_HALF),
    attrs=(
        AttrDef(
            "epsilon",
            "float",
            DEVICE_GRAD_EPSILON,
            "added to the variance (the device kernel's fixed 1e-12 by default; the fusion "
            "sets the forward's)",
        ),
    ),
    body=_layer_norm_grad,
    exactness=(
        "the closed-form gradient in float32; equals tf.gradients of the written-out layer norm "
        "with the same epsilon up to float rounding (a few ulp), not bit for bit"
    ),
)

"""``FastGelu`` and ``FastGeluGrad``: Ascend's sigmoid approximation of GELU and its gradient.

``npu_aicore_ops.fast_gelu`` emits ``FastGelu``; its registered gradient emits
``FastGeluGrad(dy, x)``. The CPU bodies compute the formulas of Ascend's op documentation, in
the same overflow-free form (every ``exp`` argument is ≤ 0), in the input's dtype:

* ``y = x / (1 + exp(-1.702·|x|)) · exp(0.851·(x − |x|))``, which equals ``x·sigmoid(1.702·x)``;
* ``z = dy · (exp(-1.702|x|) + 1.702·x·exp(-1.702|x|) + exp(1.702·(x − |x|)))
  / (exp(-1.702|x|) + 1)²``, its derivative.
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import DT_FLOAT, DT_HALF
from tf2npu.graph.npu_ops.opdef import ArgDef, NpuOpDef

__all__ = ["FAST_GELU", "FAST_GELU_GRAD"]

_K = 1.702


def _fast_gelu(x: Any) -> Any:
    import tensorflow as tf

    a = tf.abs(x)
    return x / (1.0 + tf.exp(-_K * a)) * tf.exp((_K / 2.0) * (x - a))


def _fast_gelu_grad(dy: Any, x: Any) -> Any:
    import tensorflow as tf

    a = tf.abs(x)
    e = tf.exp(-_K * a)
    denominator = (e + 1.0) * (e + 1.0)
    return dy * ((e + _K * x * e + tf.exp(_K * (x - a))) / denominator)


FAST_GELU = NpuOpDef(
    name="FastGelu",
    summary="GELU, sigmoid approximation x·sigmoid(1.702·x) (Ascend's FastGelu kernel).",
    math="y = x / (1 + exp(-1.702·|x|)) · exp(0.851·(x − |x|))",
    inputs=(ArgDef("x", "the activations"),),
    outputs=(ArgDef("y", "FastGelu(x), same shape and dtype"),),
    dtypes=(DT_FLOAT, DT_HALF),
    body=_fast_gelu,
    exactness=(
        "bit-identical to the same expression written with TensorFlow ops in the input dtype; "
        "equals x·sigmoid(1.702·x) up to float rounding"
    ),
)

FAST_GELU_GRAD = NpuOpDef(
    name="FastGeluGrad",
    summary="Gradient of FastGelu.",
    math=("z = dy·(e + 1.702·x·e + exp(1.702·(x − |x|))) / (e + 1)², e = exp(-1.702·|x|)"),
    inputs=(
        ArgDef("dy", "the gradient flowing into y"),
        ArgDef("x", "the forward input"),
    ),
    outputs=(ArgDef("z", "the gradient with respect to x"),),
    dtypes=(DT_FLOAT, DT_HALF),
    body=_fast_gelu_grad,
    exactness=(
        "the closed-form derivative; equals tf.gradients of x·sigmoid(1.702·x) up to float "
        "rounding (a few ulp), not bit for bit"
    ),
)

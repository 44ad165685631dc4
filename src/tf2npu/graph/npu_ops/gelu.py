"""``Gelu`` and ``GeluGrad``: the tanh approximation of GELU and its derivative.

``npu_unary_ops.gelu`` emits ``Gelu``; its registered gradient emits ``GeluGrad``. The Ascend
kernel of ``Gelu`` computes the tanh approximation, so the CPU body does too, in the input's
dtype with the same TensorFlow ops a user's own ``gelu`` function typically writes.
"""

from __future__ import annotations

import math
from typing import Any

from tf2npu.dtypes import DT_FLOAT, DT_HALF
from tf2npu.graph.npu_ops.opdef import ArgDef, NpuOpDef

__all__ = ["GELU", "GELU_GRAD"]

#: sqrt(2 / pi) and the cubic coefficient of the tanh approximation.
_C = math.sqrt(2.0 / math.pi)
_A = 0.044715


def _gelu(x: Any) -> Any:
    import tensorflow as tf

    c = tf.constant(_C, x.dtype)
    return 0.5 * x * (1.0 + tf.tanh(c * (x + _A * x * x * x)))


def _gelu_grad(dy: Any, x: Any, y: Any) -> Any:
    # d/dx of 0.5·x·(1 + tanh(u)), u = c·(x + a·x³):
    #   0.5·(1 + t) + 0.5·x·(1 − t²)·c·(1 + 3a·x²),  t = tanh(u).
    # ``y`` (the forward output) is an input of the Ascend op; the derivative does not need it.
    import tensorflow as tf

    del y
    c = tf.constant(_C, x.dtype)
    t = tf.tanh(c * (x + _A * x * x * x))
    slope = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * _A * x * x)
    return dy * slope


GELU = NpuOpDef(
    name="Gelu",
    summary="GELU activation, tanh approximation (what Ascend's Gelu kernel computes).",
    math="y = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))",
    inputs=(ArgDef("x", "the activations"),),
    outputs=(ArgDef("y", "GELU(x), same shape and dtype"),),
    dtypes=(DT_FLOAT, DT_HALF),
    body=_gelu,
    exactness=(
        "bit-identical to the same expression written with TensorFlow ops "
        "(0.5 * x * (1 + tanh(c * (x + 0.044715 * x * x * x)))) in the input dtype"
    ),
)

GELU_GRAD = NpuOpDef(
    name="GeluGrad",
    summary="Gradient of the tanh-approximated GELU.",
    math=(
        "z = dy·(0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²)), "
        "t = tanh(√(2/π)·(x + 0.044715·x³))"
    ),
    inputs=(
        ArgDef("dy", "the gradient flowing into y"),
        ArgDef("x", "the forward input"),
        ArgDef("y", "the forward output (accepted for signature parity, not read)"),
    ),
    outputs=(ArgDef("z", "the gradient with respect to x"),),
    dtypes=(DT_FLOAT, DT_HALF),
    body=_gelu_grad,
    exactness=(
        "the closed-form derivative; equals tf.gradients of the tanh-GELU up to float "
        "rounding (a few ulp), not bit for bit"
    ),
)

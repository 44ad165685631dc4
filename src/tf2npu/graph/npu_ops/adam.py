"""``AdamApplyOne`` and ``AdamApplyOneWithDecay``: one fused step of BERT's Adam update.

On Ascend the fusion pass replaces the element-wise math of ``AdamWeightDecayOptimizer``
(no bias correction) with these ops. Here they are pure: they return the new ``v``, ``m`` and
variable value, and the fusion rule keeps the graph's own ``Assign`` ops writing them back, so
the variables still change only where the original graph changed them.

The scalars come in as tensors, as on the device (``1 − beta1`` and ``1 − beta2`` precomputed),
which lets one fused node serve every learning-rate schedule.
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import DT_FLOAT, DT_HALF
from tf2npu.graph.npu_ops.opdef import ArgDef, NpuOpDef

__all__ = ["ADAM_APPLY_ONE", "ADAM_APPLY_ONE_WITH_DECAY"]


def _moments(
    grad: Any,
    v: Any,
    m: Any,
    beta1: Any,
    one_minus_beta1: Any,
    beta2: Any,
    one_minus_beta2: Any,
) -> tuple[Any, Any]:
    new_v = beta2 * v + one_minus_beta2 * (grad * grad)
    new_m = beta1 * m + one_minus_beta1 * grad
    return new_v, new_m


def _adam_apply_one(
    grad: Any,
    v: Any,
    m: Any,
    var: Any,
    lr: Any,
    beta1: Any,
    one_minus_beta1: Any,
    beta2: Any,
    one_minus_beta2: Any,
    epsilon: Any,
) -> tuple[Any, Any, Any]:
    import tensorflow as tf

    new_v, new_m = _moments(grad, v, m, beta1, one_minus_beta1, beta2, one_minus_beta2)
    update = new_m / (tf.sqrt(new_v) + epsilon)
    return new_v, new_m, var - lr * update


def _adam_apply_one_with_decay(
    grad: Any,
    v: Any,
    m: Any,
    var: Any,
    lr: Any,
    beta1: Any,
    one_minus_beta1: Any,
    beta2: Any,
    one_minus_beta2: Any,
    epsilon: Any,
    weight_decay: Any,
) -> tuple[Any, Any, Any]:
    import tensorflow as tf

    new_v, new_m = _moments(grad, v, m, beta1, one_minus_beta1, beta2, one_minus_beta2)
    update = new_m / (tf.sqrt(new_v) + epsilon) + weight_decay * var
    return new_v, new_m, var - lr * update


_INPUTS = (
    ArgDef("grad", "the gradient of the variable"),
    ArgDef("v", "the second moment (current value)"),
    ArgDef("m", "the first moment (current value)"),
    ArgDef("var", "the variable (current value)"),
    ArgDef("lr", "the learning rate (scalar)"),
    ArgDef("beta1", "first-moment decay (scalar)"),
    ArgDef("one_minus_beta1", "1 − beta1 (scalar)"),
    ArgDef("beta2", "second-moment decay (scalar)"),
    ArgDef("one_minus_beta2", "1 − beta2 (scalar)"),
    ArgDef("epsilon", "added to √v (scalar)"),
)
_OUTPUTS = (
    ArgDef("new_v", "the new second moment"),
    ArgDef("new_m", "the new first moment"),
    ArgDef("new_var", "the new variable value"),
)
_MOMENTS = "new_v = beta2·v + (1−beta2)·grad²; new_m = beta1·m + (1−beta1)·grad; "

ADAM_APPLY_ONE = NpuOpDef(
    name="AdamApplyOne",
    summary="One Adam step without bias correction (BERT's optimizer), fused; pure.",
    math=_MOMENTS + "new_var = var − lr · new_m / (√new_v + epsilon)",
    inputs=_INPUTS,
    outputs=_OUTPUTS,
    dtypes=(DT_FLOAT, DT_HALF),
    body=_adam_apply_one,
    exactness="bit-identical to the same element-wise TF ops in the same order",
)

ADAM_APPLY_ONE_WITH_DECAY = NpuOpDef(
    name="AdamApplyOneWithDecay",
    summary="AdamApplyOne plus decoupled weight decay (BERT's AdamWeightDecayOptimizer).",
    math=_MOMENTS + "new_var = var − lr · (new_m / (√new_v + epsilon) + weight_decay · var)",
    inputs=(*_INPUTS, ArgDef("weight_decay", "the weight-decay rate (scalar)")),
    outputs=_OUTPUTS,
    dtypes=(DT_FLOAT, DT_HALF),
    body=_adam_apply_one_with_decay,
    exactness="bit-identical to the same element-wise TF ops in the same order",
)

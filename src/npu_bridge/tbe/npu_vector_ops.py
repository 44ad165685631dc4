"""``npu_vector_ops``: the fused LAMB optimizer ops BERT scripts call, computed by TensorFlow ops.

On the device each is one TBE kernel that also assigns its variables in place. Here the same
arithmetic (the ops' documented formulas, those of the unfused LAMB update the scripts keep as
their other branch) is built from stock TensorFlow ops, and the in-place assignments are real
variable assignments that run whenever an output is evaluated.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["lamb_apply_optimizer_assign", "lamb_apply_weight_assign"]


def lamb_apply_optimizer_assign(
    input0: Any,
    input1: Any,
    input2: Any,
    input3: Any,
    mul0_x: Any,
    mul1_x: Any,
    mul2_x: Any,
    mul3_x: Any,
    add2_y: Any,
    steps: Any,
    do_use_weight: Any,
    weight_decay_rate: Any,
    name: str | None = None,
) -> tuple[Any, Any, Any]:
    """LAMB moments and update; assigns the moments ``input1`` (v) and ``input2`` (m) in place.

    ``input0`` is the gradient, ``input3`` the parameter; ``mul0_x``/``mul1_x`` are beta1 and
    1 - beta1, ``mul2_x``/``mul3_x`` beta2 and 1 - beta2, ``add2_y`` epsilon. Returns
    ``(update, next_v, next_m)`` with ``next_v = v·beta2 + grad²·(1 - beta2)``, ``next_m =
    m·beta1 + grad·(1 - beta1)`` and ``update = m̂ / (√v̂ + epsilon) + param · weight_decay_rate ·
    do_use_weight`` (``m̂``, ``v̂`` bias-corrected with ``steps``).

    Raises:
        RuntimeError: eager execution is on (as the adapter's wrapper).
    """
    _require_graph("lamb_apply_optimizer_assign")
    with tf.name_scope(name or "LambApplyOptimizerAssign"):
        grad = tf.convert_to_tensor(input0)
        next_v = input1 * mul2_x + tf.square(grad) * mul3_x
        next_m = input2 * mul0_x + grad * mul1_x
        m_hat = next_m / (1.0 - tf.pow(mul0_x, steps))
        v_hat = next_v / (1.0 - tf.pow(mul2_x, steps))
        update = m_hat / (tf.sqrt(v_hat) + add2_y) + input3 * weight_decay_rate * do_use_weight
        assigned_v = tf.compat.v1.assign(input1, next_v)
        assigned_m = tf.compat.v1.assign(input2, next_m)
        with tf.control_dependencies([assigned_v, assigned_m]):
            update = tf.identity(update, name="update")
        return update, assigned_v, assigned_m


def lamb_apply_weight_assign(
    input0: Any, input1: Any, input2: Any, input3: Any, input4: Any, name: str | None = None
) -> Any:
    """``param -= ratio · lr · update``, assigned in place; returns the assignment.

    ``input0`` is ‖param‖, ``input1`` ‖update‖, ``input2`` the learning rate, ``input3`` the
    update, ``input4`` the parameter variable; the trust ratio is ``‖param‖ / ‖update‖`` when
    both are positive, else 1.

    Raises:
        RuntimeError: eager execution is on.
    """
    _require_graph("lamb_apply_weight_assign")
    with tf.name_scope(name or "LambApplyWeightAssign"):
        w_norm = tf.convert_to_tensor(input0)
        g_norm = tf.convert_to_tensor(input1)
        one = tf.ones_like(w_norm)
        ratio = tf.where(w_norm > 0, tf.where(g_norm > 0, w_norm / g_norm, one), one)
        return tf.compat.v1.assign_sub(input4, ratio * input2 * input3)


def _require_graph(caller: str) -> None:
    if tf.executing_eagerly():
        raise RuntimeError(f"tf.{caller}() is not compatible with eager execution.")

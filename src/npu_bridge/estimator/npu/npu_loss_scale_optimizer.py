"""``NPULossScaleOptimizer``: loss scaling around a ``tf.compat.v1.train.Optimizer``.

:meth:`~NPULossScaleOptimizer.compute_gradients` multiplies the loss by the manager's scale and
multiplies each gradient by the reciprocal of the same scale value (as contrib's
``LossScaleOptimizer``, which the adapter's class extends). :meth:`~NPULossScaleOptimizer.
apply_gradients` applies them only when every gradient is finite; otherwise no variable and
not the global step change. Either way the manager's update runs.

The adapter learns "finite" from the device's float-overflow status registers
(``NpuGetFloatStatus``); here it is ``reduce_all(is_finite(g))`` over every gradient, which
is what those registers report for the ops that computed them. With ``is_distributed=True`` the
status is all-reduced across ranks (in a multi-rank job every rank skips a step that overflowed
on any rank); with one rank the all-reduced status is the local one.

Example:
    >>> import tensorflow as tf
    >>> from npu_bridge.estimator.npu.npu_loss_scale_manager import FixedLossScaleManager
    >>> with tf.Graph().as_default():
    ...     opt = NPULossScaleOptimizer(
    ...         tf.compat.v1.train.GradientDescentOptimizer(0.1), FixedLossScaleManager(1024)
    ...     )
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from npu_bridge.estimator.npu.npu_loss_scale_manager import (
    FixedLossScaleManager,
    LossScaleManager,
)
from npu_bridge.hccl import hccl_ops
from npu_bridge.hccl.manage import world_rank_size

__all__ = ["NPULossScaleOptimizer"]

_Optimizer: Any = tf.compat.v1.train.Optimizer


class NPULossScaleOptimizer(_Optimizer):  # type: ignore[misc]
    """Wraps ``opt``: scales the loss, unscales the gradients, skips steps that overflow.

    Args:
        opt: the ``tf.compat.v1.train.Optimizer`` that applies the gradients.
        loss_scale_manager: a :class:`LossScaleManager` (fixed or exponential-update).
        is_distributed: all-reduce the overflow status across ranks.

    Attributes the wrapper does not have are looked up on ``opt`` (``get_slot`` etc.).
    """

    def __init__(
        self, opt: Any, loss_scale_manager: LossScaleManager, is_distributed: bool = False
    ) -> None:
        if not isinstance(opt, _Optimizer):
            raise ValueError(
                f"NPULossScaleOptimizer(opt={opt!r}): opt must be a tf.compat.v1.train."
                "Optimizer, e.g. tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)"
            )
        if not isinstance(loss_scale_manager, LossScaleManager):
            raise ValueError(
                f"NPULossScaleOptimizer(loss_scale_manager={loss_scale_manager!r}): give a "
                "FixedLossScaleManager or ExponentialUpdateLossScaleManager"
            )
        self._opt = opt
        self._loss_scale_manager = loss_scale_manager
        self._is_distributed = is_distributed
        # The adapter's own name is overwritten by its base class with this one.
        super().__init__(use_locking=False, name="LossScaleOptimizer")

    def __getattr__(self, attr: str) -> Any:
        if attr == "_opt":  # not set yet: keep copy/pickle probes from recursing
            raise AttributeError(attr)
        return getattr(self._opt, attr)

    def compute_gradients(
        self,
        loss: Any,
        var_list: Any = None,
        gate_gradients: int = 1,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        grad_loss: Any = None,
    ) -> list[tuple[Any, Any]]:
        """``opt.compute_gradients`` of ``loss * scale``, each gradient times ``1 / scale``."""
        scale = tf.convert_to_tensor(self._loss_scale_manager.get_loss_scale())
        if callable(loss):

            def scaled_loss() -> Any:
                value = loss()
                return value * tf.cast(scale, value.dtype)
        else:
            scaled_loss = loss * tf.cast(scale, loss.dtype)
        grads_and_vars = self._opt.compute_gradients(
            scaled_loss,
            var_list=var_list,
            gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
            grad_loss=grad_loss,
        )
        reciprocal = 1.0 / scale
        return [(_down_scale(grad, reciprocal), var) for grad, var in grads_and_vars]

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: str | None = None
    ) -> Any:
        """Apply (and advance ``global_step``) only if every gradient is finite; update the scale.

        Returns one op grouping the conditional update and the loss-scale update.
        """
        grads_and_vars = list(grads_and_vars)
        finite = self._all_finite([grad for grad, _ in grads_and_vars if grad is not None])

        def apply() -> Any:
            update = self._opt.apply_gradients(grads_and_vars, global_step, name)
            with tf.control_dependencies([update]):
                return tf.constant(True)

        def skip() -> Any:
            return tf.constant(False)

        applied = tf.compat.v1.cond(finite, apply, skip)
        return tf.group(applied, self._loss_scale_manager.update_loss_scale(finite))

    def _all_finite(self, grads: list[Any]) -> Any:
        manager = self._loss_scale_manager
        if isinstance(manager, FixedLossScaleManager) and not manager.get_enable_overflow_check():
            return tf.constant(True)
        with tf.name_scope(self._name):
            checks = [tf.reduce_all(tf.math.is_finite(_values(grad))) for grad in grads]
            if not checks:
                return tf.constant(True)
            if not self._is_distributed or world_rank_size() == 1:
                return tf.reduce_all(tf.stack(checks), name="overflow_status_reduce_all")
            # Every rank skips the step when any rank overflowed: the count of ranks that
            # overflowed, all-reduced, must be 0.
            local = tf.cast(tf.logical_not(tf.reduce_all(tf.stack(checks))), tf.float32)
            overflowed = hccl_ops.allreduce(local, "sum")
            return tf.equal(overflowed, 0.0, name="overflow_status_reduce_all")

    def get_slot(self, var: Any, name: str) -> Any:
        return self._opt.get_slot(var, name)

    def get_slot_names(self) -> Any:
        return self._opt.get_slot_names()

    def variables(self) -> Any:
        return self._opt.variables()


def _values(grad: Any) -> Any:
    return grad.values if isinstance(grad, tf.IndexedSlices) else grad


def _down_scale(grad: Any, reciprocal: Any) -> Any:
    if grad is None:
        return None
    if isinstance(grad, tf.IndexedSlices):
        values = grad.values * tf.cast(reciprocal, grad.values.dtype)
        return tf.IndexedSlices(values, grad.indices, grad.dense_shape)
    return grad * tf.cast(reciprocal, grad.dtype)

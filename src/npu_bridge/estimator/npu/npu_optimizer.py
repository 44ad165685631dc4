"""Distributed optimizers: gradient averaging across ranks.

The adapter's wrappers average every gradient over the ranks (HCCL all-reduce sum divided by the
rank count; ``IndexedSlices`` by all-gathering values and indices) when ``RANK_SIZE`` > 1 and
return the wrapped optimizer's gradients unchanged otherwise. So do these: with one rank every
wrapper computes and applies **exactly** what the wrapped optimizer does (same ops,
bit-identical variables); in a ``tf2npu run --ranks N`` job each gradient goes through an
``HcomAllReduce`` (TensorFlow's collective runtime) and is divided by N.

Example:
    >>> import tensorflow as tf
    >>> with tf.Graph().as_default():
    ...     opt = NPUDistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))
    >>> opt.get_name()
    'DistributedGradientDescentOptimizer'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from npu_bridge.estimator.npu.npu_loss_scale_manager import LossScaleManager
from npu_bridge.estimator.npu.npu_loss_scale_optimizer import NPULossScaleOptimizer
from npu_bridge.hccl import hccl_ops
from npu_bridge.hccl.manage import (
    WORLD_GROUP,
    _collective_group,
    get_rank_size,
    split_strategy,
    world_rank_size,
)
from tf2npu.client import hcom as _hcom

__all__ = [
    "KerasDistributeOptimizer",
    "NPUDistributedOptimizer",
    "NPUOptimizer",
    "allreduce",
    "npu_allreduce",
    "npu_distributed_optimizer_wrapper",
    "reduce",
]

_Optimizer: Any = tf.compat.v1.train.Optimizer
_KerasOptimizerV2: Any = tf.keras.optimizers.legacy.Optimizer

GradsAndVars = list[tuple[Any, Any]]


def allreduce(tensor: Any, average: bool = True) -> Any:
    """Sum (or, with ``average``, average) ``tensor`` over all ranks.

    A dense tensor goes through one HCCL all-reduce (sum), then is divided by the rank count;
    a ``tf.IndexedSlices`` is all-gathered (values and indices), its values divided. With one
    rank the all-reduce is the identity and nothing is divided (the average is the sum).
    """
    size = world_rank_size()
    if isinstance(tensor, tf.IndexedSlices):
        values = hccl_ops.allgather(tensor.values, size)
        indices = hccl_ops.allgather(tensor.indices, size)
        if average and size > 1:
            values = values / tf.cast(size, values.dtype)
        return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)
    summed = hccl_ops.allreduce(tensor, "sum")
    if average and size > 1:
        return summed / tf.cast(size, summed.dtype)
    return summed


def reduce(
    tensor: Any, root_rank: int, average: bool = True, fusion: int = 0, fusion_id: int = -1
) -> Any:
    """Sum (or average) ``tensor`` into rank ``root_rank`` (weight-update sharding)."""
    if isinstance(tensor, tf.IndexedSlices):
        return allreduce(tensor, average)
    size = world_rank_size()
    summed = hccl_ops.reduce(tensor, "sum", root_rank, fusion, fusion_id)
    if average and size > 1:
        return summed / tf.cast(size, summed.dtype)
    return summed


def _average_all(what: str, grads_and_vars: Any, name: str = "Distributed") -> Any:
    """Each gradient averaged over the ranks (in a name scope ``<name>_Allreduce``, as the
    adapter's); with one rank the gradients as given (no ops added).

    Dense gradients are fused as HCCL fuses them on the device: the world group's split
    strategy (:func:`npu_bridge.hccl.manage.split_strategy`) cuts them, in list order, into
    segments that each travel as one all-reduce. ``IndexedSlices`` are gathered one by one.
    """
    found = _collective_group(WORLD_GROUP, what)
    if found is None:
        return grads_and_vars
    pairs = list(grads_and_vars)
    averaged: list[Any] = [grad for grad, _ in pairs]
    dense = [i for i, grad in enumerate(averaged) if _is_dense(grad)]
    with tf.name_scope(f"{name}_Allreduce"):
        for i, grad in enumerate(averaged):
            if isinstance(grad, tf.IndexedSlices):
                averaged[i] = allreduce(grad, True)
        grads = [tf.convert_to_tensor(averaged[i]) for i in dense]
        plan = split_strategy(WORLD_GROUP).plan(
            [_static_bytes(g) for g in grads], [g.dtype for g in grads]
        )
        for members in plan:
            means = _mean([grads[m] for m in members], *found)
            for position, value in zip(members, means, strict=True):
                averaged[dense[position]] = value
    return [(grad, var) for grad, (_, var) in zip(averaged, pairs, strict=True)]


def _is_dense(grad: Any) -> bool:
    return grad is not None and not isinstance(grad, tf.IndexedSlices)


def _static_bytes(tensor: Any) -> int | None:
    shape = tensor.shape
    if not shape.is_fully_defined():
        return None
    return int(shape.num_elements()) * int(tensor.dtype.size)


def _mean(grads: Sequence[Any], group: Any, cluster: Any) -> list[Any]:
    """The world-group average of ``grads``: one all-reduce for several, else its own."""
    if len(grads) == 1:
        return [allreduce(grads[0], True)]
    summed = _hcom.all_reduce_fused(grads, "sum", group, cluster)
    return [value / tf.cast(group.size, value.dtype) for value in summed]


class NPUDistributedOptimizer(_Optimizer):  # type: ignore[misc]
    """Wraps a ``tf.compat.v1.train.Optimizer``; averages gradients over ranks before applying.

    Args:
        optimizer: the optimizer that computes and applies the gradients.
        is_weight_update_sharding: give each rank a share of the variables to update (the
            adapter's greedy split); with one rank the only share is all of them, so it changes
            nothing here (recorded in ``self._is_weight_update_sharding``).
        name: default ``"Distributed<OptimizerClass>"``.
    """

    def __init__(
        self, optimizer: Any, is_weight_update_sharding: bool = False, name: str | None = None
    ) -> None:
        if not isinstance(optimizer, _Optimizer):
            raise TypeError(
                f"NPUDistributedOptimizer(optimizer={optimizer!r}): give a tf.compat.v1.train."
                "Optimizer (for Keras optimizers use KerasDistributeOptimizer)"
            )
        if name is None:
            name = f"Distributed{type(optimizer).__name__}"
        self._optimizer = optimizer
        self._is_weight_update_sharding = is_weight_update_sharding
        super().__init__(use_locking=False, name=name)

    def compute_gradients(self, *args: Any, **kwargs: Any) -> GradsAndVars:
        """The wrapped optimizer's gradients, averaged over ranks (unchanged with one)."""
        grads_and_vars = self._optimizer.compute_gradients(*args, **kwargs)
        averaged: GradsAndVars = _average_all(
            "NPUDistributedOptimizer.compute_gradients", grads_and_vars, self.get_name()
        )
        return averaged

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: str | None = None
    ) -> Any:
        """The wrapped optimizer's ``apply_gradients``."""
        return self._optimizer.apply_gradients(grads_and_vars, global_step, name)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.variables(*args, **kwargs)


class NPUOptimizer(_Optimizer):  # type: ignore[misc]
    """All-in-one wrapper: optional loss scaling plus optional gradient averaging.

    Composes :class:`~npu_bridge.estimator.npu.npu_loss_scale_optimizer.NPULossScaleOptimizer`
    (``is_loss_scale=True``: scale the loss, unscale the gradients, skip steps whose gradients
    overflow, update the scale) and the averaging of :class:`NPUDistributedOptimizer`
    (``is_distributed=True``). ``is_tailing_optimization`` only reorders the overflow check
    and the all-reduce on the device to overlap communication; it changes no value and is
    recorded only.

    Raises:
        ValueError: ``is_loss_scale`` without a ``loss_scale_manager``.
    """

    def __init__(
        self,
        opt: Any,
        loss_scale_manager: LossScaleManager | None = None,
        is_distributed: bool = False,
        is_loss_scale: bool = False,
        is_tailing_optimization: bool = False,
        name: str | None = None,
    ) -> None:
        if is_loss_scale and loss_scale_manager is None:
            raise ValueError(
                "NPUOptimizer: is_loss_scale=True needs a loss_scale_manager, e.g. "
                "FixedLossScaleManager(1024) or ExponentialUpdateLossScaleManager(2**15, 2000)"
            )
        self._opt = opt
        self._loss_scale_manager = loss_scale_manager
        self._is_distributed = is_distributed
        self._is_loss_scale = is_loss_scale
        self._is_tailing_optimization = is_tailing_optimization
        self._scaler = (
            NPULossScaleOptimizer(opt, loss_scale_manager, is_distributed)
            if is_loss_scale and loss_scale_manager is not None
            else None
        )
        super().__init__(use_locking=False, name=name or f"NPUOptimizer{type(opt).__name__}")

    def compute_gradients(self, loss: Any, *args: Any, **kwargs: Any) -> GradsAndVars:
        """(Unscaled) gradients, averaged over ranks when ``is_distributed``."""
        source = self._scaler if self._scaler is not None else self._opt
        grads_and_vars = source.compute_gradients(loss, *args, **kwargs)
        if not self._is_distributed:
            return list(grads_and_vars)
        return list(_average_all("NPUOptimizer(is_distributed=True)", grads_and_vars))

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: str | None = None
    ) -> Any:
        """Apply; with loss scaling only when every gradient is finite (and update the scale)."""
        target = self._scaler if self._scaler is not None else self._opt
        return target.apply_gradients(grads_and_vars, global_step, name)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.variables(*args, **kwargs)


class KerasDistributeOptimizer(_KerasOptimizerV2):  # type: ignore[misc]
    """Wraps a Keras optimizer; averages gradients over ranks (nothing to do with one rank).

    Subclass of the Keras V2 optimizer base (``tf.keras.optimizers.legacy.Optimizer``), as the
    adapter's class is. Gradient computation and application are the wrapped optimizer's;
    ``get_gradients`` of the wrapped optimizer is patched like the adapter does, so Keras code
    that calls it directly is covered too.
    """

    def __init__(self, optimizer: Any, name: str = "NpuKerasOptimizer", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._optimizer = optimizer
        original = getattr(optimizer, "get_gradients", None)
        if original is not None:
            optimizer.get_gradients = _averaging_get_gradients(original)

    def get_updates(self, loss: Any, params: Any) -> Any:
        return self._optimizer.get_updates(loss, params)

    def __getattr__(self, name: str) -> Any:
        """What the wrapper lacks comes from the wrapped optimizer: its hyperparameters
        (``lr``, ``learning_rate``, ``momentum``...), which callbacks such as
        ``LearningRateScheduler`` read and set through ``model.optimizer``."""
        inner = self.__dict__.get("_optimizer")
        if inner is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(inner, name)

    @property
    def iterations(self) -> Any:
        """The wrapped optimizer's step counter (the one ``apply_gradients`` advances)."""
        return self._optimizer.iterations

    @iterations.setter
    def iterations(self, variable: Any) -> None:
        self._optimizer.iterations = variable

    def _compute_gradients(
        self, loss: Any, var_list: Any, grad_loss: Any = None, tape: Any = None
    ) -> GradsAndVars:
        inner = self._optimizer
        if hasattr(inner, "_compute_gradients"):
            grads_and_vars = inner._compute_gradients(loss, var_list, grad_loss, tape=tape)
        else:  # Keras 3-style optimizers expose compute_gradients only
            grads_and_vars = inner.compute_gradients(loss, var_list, tape=tape)
        return list(_average_all("KerasDistributeOptimizer", list(grads_and_vars)))

    def apply_gradients(self, grads_and_vars: Any, name: str | None = None, **kwargs: Any) -> Any:
        return self._optimizer.apply_gradients(grads_and_vars, name, **kwargs)

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = super().get_config()
        config["optimizer"] = self._optimizer
        return config


def _averaging_get_gradients(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def get_gradients(loss: Any, params: Any) -> Any:
        grads = original(loss, params)  # a list of gradients, one per param
        pairs = list(zip(grads, params, strict=True))
        pairs = _average_all("get_gradients (distributed Keras optimizer)", pairs)
        return [grad for grad, _ in pairs]

    return get_gradients


def npu_distributed_optimizer_wrapper(optimizer: Any) -> Any:
    """Patch ``optimizer`` **in place** to average gradients over ranks; return it.

    A string is first resolved with ``tf.keras.optimizers.get``. ``compute_gradients``,
    ``get_gradients`` and ``_compute_gradients`` (whichever exist) are wrapped. With one rank
    the wrapped methods return exactly what the originals return.
    """
    if isinstance(optimizer, str):
        optimizer = tf.keras.optimizers.get(optimizer)
    for method in ("compute_gradients", "_compute_gradients"):
        original = getattr(optimizer, method, None)
        if original is not None:
            setattr(optimizer, method, _averaging_compute(original))
    original_get = getattr(optimizer, "get_gradients", None)
    if original_get is not None:
        optimizer.get_gradients = _averaging_get_gradients(original_get)
    return optimizer


def _averaging_compute(original: Callable[..., Any]) -> Callable[..., Any]:
    def compute(*args: Any, **kwargs: Any) -> Any:
        return _average_all("npu_distributed_optimizer_wrapper", original(*args, **kwargs))

    return compute


_NPU_ALLREDUCE_REDUCTIONS = ("mean", *hccl_ops.REDUCTIONS)


def npu_allreduce(
    values: Any,
    reduction: str = "mean",
    fusion: int = 1,
    fusion_id: int = -1,
    group: str = WORLD_GROUP,
) -> Any:
    """All-reduce one tensor or a list/tuple of them; ``mean`` = sum divided by the rank count.

    With one rank in ``group`` the mean is the sum and nothing is divided. Returns a list for
    a list/tuple input, else one tensor.
    """
    if reduction not in _NPU_ALLREDUCE_REDUCTIONS:
        raise ValueError(
            f"npu_allreduce: reduction={reduction!r}; use one of: "
            f"{', '.join(_NPU_ALLREDUCE_REDUCTIONS)}"
        )
    items: Sequence[Any] = values if isinstance(values, (list, tuple)) else [values]
    op = "sum" if reduction == "mean" else reduction
    size = get_rank_size(group)
    divide = reduction == "mean" and size > 1
    out = []
    for value in items:
        if isinstance(value, tf.IndexedSlices):
            gathered = hccl_ops.allgather(value.values, size, group)
            indices = hccl_ops.allgather(value.indices, size, group)
            if divide:
                gathered = gathered / tf.cast(size, gathered.dtype)
            out.append(tf.IndexedSlices(gathered, indices, dense_shape=value.dense_shape))
        else:
            reduced = hccl_ops.allreduce(value, op, fusion, fusion_id, group)
            out.append(reduced / tf.cast(size, reduced.dtype) if divide else reduced)
    return out if isinstance(values, (list, tuple)) else out[0]

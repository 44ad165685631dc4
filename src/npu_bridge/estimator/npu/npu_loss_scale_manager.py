"""Loss-scale managers for mixed-precision training (graph mode, ``tf.compat.v1``).

The update rule of :class:`ExponentialUpdateLossScaleManager` is the adapter's (itself
``tf.contrib.mixed_precision``'s with an overflow guard on growth), per step:

* finite gradients: ``good + 1 >= incr_every_n_steps`` → ``scale *= incr_ratio`` when
  ``scale < 3.4e38 / incr_ratio`` (else unchanged), ``good = bad = 0``; otherwise ``good += 1``.
* non-finite gradients: ``bad + 1 >= decr_every_n_nan_or_inf`` →
  ``scale = max(1, scale * decr_ratio)``, ``good = bad = 0``; otherwise ``bad += 1``, ``good = 0``.

The adapter builds this from nested ``cond``s; here it is the same function written with
``where``, so it needs no control flow.
"""

from __future__ import annotations

import abc
import numbers
from typing import Any

import tensorflow as tf

from tf2npu.runtime import lossscale as _lossscale  # private: not in the adapter's surface

__all__ = ["ExponentialUpdateLossScaleManager", "FixedLossScaleManager", "LossScaleManager"]

_FLOAT32_GROWTH_LIMIT = 3.4e38
"""The adapter grows the scale only while ``scale < 3.4e38 / incr_ratio``."""


class LossScaleManager(abc.ABC):
    """A loss scale (a float32 tensor) and how it changes after each step."""

    @abc.abstractmethod
    def get_loss_scale(self) -> Any:
        """The loss scale, a float32 scalar tensor or variable."""

    @abc.abstractmethod
    def update_loss_scale(self, finite_grads: Any) -> Any:
        """An op that updates the scale given a bool scalar: were all gradients finite?"""


def _number(owner: str, name: str, value: object, low: float, fix: str) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise ValueError(f"{owner}({name}={value!r}): {fix}")
    number = float(value)
    if not number >= low:  # also rejects nan
        raise ValueError(f"{owner}({name}={value!r}): {fix}")
    return number


def _count(owner: str, name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{owner}({name}={value!r}): give a whole number of steps >= 1")
    return value


class FixedLossScaleManager(LossScaleManager):
    """A constant loss scale.

    Args:
        loss_scale: the scale, at least 1.
        enable_overflow_check: ``False`` makes :class:`NPULossScaleOptimizer` apply every step
            without checking the gradients (latest adapter).
    """

    def __init__(self, loss_scale: float, enable_overflow_check: bool = True) -> None:
        value = _number(
            "FixedLossScaleManager",
            "loss_scale",
            loss_scale,
            1.0,
            "the loss scale must be a number >= 1, e.g. 1024",
        )
        self._loss_scale = tf.convert_to_tensor(value, dtype=tf.float32, name="loss_scale")
        self._enable_overflow_check = enable_overflow_check

    def get_loss_scale(self) -> Any:
        return self._loss_scale

    def update_loss_scale(self, finite_grads: Any) -> Any:
        """A no-op: the scale never changes."""
        _lossscale.record(finite_grads, self._loss_scale)  # run summary: skipped steps, scale
        return tf.no_op()

    def get_enable_overflow_check(self) -> bool:
        """Whether the optimizer checks gradients for inf/nan before applying them."""
        return self._enable_overflow_check


class ExponentialUpdateLossScaleManager(LossScaleManager):
    """A loss scale that grows after a run of finite steps and shrinks after overflows.

    Creates three non-trainable global variables in the default graph: ``loss_scale``
    (float32), ``good_steps`` and ``bad_steps`` (int32). See the module docstring for the rule.

    Args:
        init_loss_scale: the first scale (> 0).
        incr_every_n_steps: grow after this many consecutive finite steps.
        decr_every_n_nan_or_inf: shrink after this many non-finite steps (counted since the
            last change of scale; a finite step does not reset the count).
        incr_ratio: growth factor.
        decr_ratio: shrink factor; the scale never drops below 1.
    """

    def __init__(
        self,
        init_loss_scale: float,
        incr_every_n_steps: int,
        decr_every_n_nan_or_inf: int = 2,
        incr_ratio: float = 2,
        decr_ratio: float = 0.8,
    ) -> None:
        owner = "ExponentialUpdateLossScaleManager"
        init = _number(owner, "init_loss_scale", init_loss_scale, 0.0, "give a number > 0")
        if init == 0.0:
            raise ValueError(f"{owner}(init_loss_scale={init_loss_scale!r}): give a number > 0")
        self._incr_every_n_steps = _count(owner, "incr_every_n_steps", incr_every_n_steps)
        self._decr_every_n_nan_or_inf = _count(
            owner, "decr_every_n_nan_or_inf", decr_every_n_nan_or_inf
        )
        self._incr_ratio = _number(owner, "incr_ratio", incr_ratio, 1.0, "give a number >= 1")
        self._decr_ratio = _number(owner, "decr_ratio", decr_ratio, 0.0, "give a number > 0")
        if self._decr_ratio == 0.0:
            raise ValueError(f"{owner}(decr_ratio={decr_ratio!r}): give a number > 0")
        self._loss_scale = _state("loss_scale", init, tf.float32)
        self._num_good_steps = _state("good_steps", 0, tf.int32)
        self._num_bad_steps = _state("bad_steps", 0, tf.int32)

    def get_loss_scale(self) -> Any:
        return self._loss_scale

    def update_loss_scale(self, finite_grads: Any) -> Any:
        """An op applying one step of the update rule; ``finite_grads`` is a bool scalar."""
        finite = tf.convert_to_tensor(finite_grads, dtype=tf.bool)
        scale = self._loss_scale.value()
        good = self._num_good_steps.value()
        bad = self._num_bad_steps.value()
        grow = tf.logical_and(finite, good + 1 >= self._incr_every_n_steps)
        shrink = tf.logical_and(tf.logical_not(finite), bad + 1 >= self._decr_every_n_nan_or_inf)
        reset = tf.logical_or(grow, shrink)
        can_grow = scale < _FLOAT32_GROWTH_LIMIT / self._incr_ratio
        grown = tf.where(can_grow, scale * self._incr_ratio, scale)
        shrunk = tf.maximum(1.0, scale * self._decr_ratio)
        new_scale = tf.where(grow, grown, tf.where(shrink, shrunk, scale))
        zero = tf.zeros_like(good)
        new_good = tf.where(reset, zero, tf.where(finite, good + 1, zero))
        new_bad = tf.where(reset, zero, tf.where(finite, bad, bad + 1))
        _lossscale.record(finite, new_scale)  # for the run summary: skipped steps, scale
        return tf.group(
            self._loss_scale.assign(new_scale),
            self._num_good_steps.assign(new_good),
            self._num_bad_steps.assign(new_bad),
            name="update_loss_scale",
        )


def _state(name: str, value: float, dtype: Any) -> Any:
    return tf.compat.v1.Variable(value, name=name, dtype=dtype, trainable=False)

"""``run_summary.json``'s ``loss_scale`` object: written by the runtime, read by doctor and the CLI.

``null`` unless an ``NPULossScaleOptimizer`` step ran; else::

    {"scale": 1024.0, "skipped_steps": 6,
     "warmup": {"skipped_steps": 5, "first_scale": 16384.0, "last_scale": 1024.0}}

``scale`` is the loss scale after the latest loss-scaled step, ``skipped_steps`` how many steps
were skipped because a gradient was not finite. ``warmup`` (``null`` when there was none) is the
run's first steps, skipped one after the other while the dynamic scale came down from a start
too high for the model, up to the first step that was applied: ``first_scale`` and
``last_scale`` are the scales after the first and the last of them. That is how a dynamic loss
scale finds its level, not an overflow the model has: a warm-up that never ends (no step was
applied) is not recorded as one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["LOSS_SCALE", "LossScale", "Warmup", "WarmupTracker"]

LOSS_SCALE = "loss_scale"
"""The summary key."""


@dataclass(frozen=True, slots=True)
class Warmup:
    """The leading run of skipped steps while the scale came down."""

    skipped_steps: int
    first_scale: float
    last_scale: float

    def to_json(self) -> dict[str, Any]:
        return {
            "skipped_steps": self.skipped_steps,
            "first_scale": self.first_scale,
            "last_scale": self.last_scale,
        }

    @classmethod
    def from_json(cls, value: object) -> Warmup | None:
        """The warm-up in ``value``, or None when it is absent or not of this shape."""
        if not isinstance(value, dict):
            return None
        skipped = _count(value.get("skipped_steps"))
        first, last = _number(value.get("first_scale")), _number(value.get("last_scale"))
        if skipped is None or skipped < 1 or first is None or last is None:
            return None
        return cls(skipped, first, last)


@dataclass(frozen=True, slots=True)
class LossScale:
    """The loss scaling of one run."""

    scale: float | None
    """None when the file held no number (a hand-edited or damaged summary)."""
    skipped_steps: int
    warmup: Warmup | None = None

    @property
    def skipped_after_warmup(self) -> int:
        """Skipped steps once the warm-up was over."""
        return self.skipped_steps - (self.warmup.skipped_steps if self.warmup else 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "skipped_steps": self.skipped_steps,
            "warmup": self.warmup.to_json() if self.warmup else None,
        }

    @classmethod
    def from_json(cls, value: object) -> LossScale | None:
        """The object of a summary's ``loss_scale`` (None for ``null`` or a non-object).

        Readers meet hand-edited and damaged files: a field of the wrong type reads as absent
        (``skipped_steps`` 0, ``scale`` None, no warm-up), never as an exception.
        """
        if not isinstance(value, dict):
            return None
        count = _count(value.get("skipped_steps")) or 0
        warmup = Warmup.from_json(value.get("warmup"))
        if warmup is not None and warmup.skipped_steps > count:
            warmup = None  # more warm-up skips than skips: not a record this writer made
        return cls(_number(value.get("scale")), count, warmup)


class WarmupTracker:
    """Follows the loss-scaled steps of a run to find its warm-up (the writer's side)."""

    def __init__(self) -> None:
        self._skipped = 0
        self._first: float | None = None
        self._last: float | None = None
        self._open = True
        self._ended = False

    def step(self, scale: float, *, skipped: bool) -> None:
        """One loss-scaled step ran: the scale after it, and whether it was skipped."""
        if not self._open:
            return
        if skipped and (self._last is None or scale <= self._last):
            self._skipped += 1
            self._first = scale if self._first is None else self._first
            self._last = scale
            return
        self._open = False
        self._ended = not skipped  # an applied step ends it; a rising scale is no warm-up

    @property
    def warmup(self) -> Warmup | None:
        """The warm-up, once a step was applied after it (None: none, or never ended)."""
        if not self._ended or not self._skipped:
            return None
        assert self._first is not None and self._last is not None
        return Warmup(self._skipped, self._first, self._last)


def _count(value: object) -> int | None:
    """A count (a non-negative int that is no bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None

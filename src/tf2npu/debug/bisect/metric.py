"""How far a bisection trial is from its reference run: the loss or the final variables (TF-free).

``tf2npu bisect`` judges every trial against one reference run (fusions all off, or
``must_keep_origin_dtype``): a trial *matches* when its :func:`distance` to the reference is at
most the tolerance. Two metrics:

* ``loss``: the loss series the script fetched (one value per training step, then the values
  of its last evaluation if it evaluates; for a script that fetches nothing while it trains,
  the evaluation's values alone), compared step by step; the distance is the
  largest relative difference ``|a - b| / max(|b|, FLOOR)``. A non-finite value against a
  finite one, or series of different lengths (a run that stopped early), is infinitely far.
* ``variables``: the trainable variables at the end; for each variable the largest absolute
  difference over the largest magnitude of the reference's value; the distance is the largest
  of those. A variable missing on one side, a shape change or a non-finite value against a
  finite one is infinitely far.

:data:`DEFAULT_TOLERANCES`, per kind of bisection:

* ``fusion`` 1e-4: on tf2npu's engine a fused op computes what its ops computed, exactly or
  up to float32 rounding (measured on the BERT-style model: the all-on and all-off runs give
  the same losses to the last bit), so a larger difference is the fusion's; a wrong fusion of
  the pooler's dense layer moves the loss by 0.1 % in four steps, below 1 %;
* ``precision`` 1e-2 (1 %): above float16 rounding of the ops a black list leaves in float16,
  below what an overflowing float16 op does (Inf, or a large jump).

>>> distance(Evidence(loss=(2.0, 1.01)), Evidence(loss=(2.0, 1.0)), Metric.LOSS)
0.01...
>>> distance(Evidence(loss=(2.0, None)), Evidence(loss=(2.0, 1.0)), Metric.LOSS)
inf
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "DEFAULT_TOLERANCES",
    "FLOOR",
    "Evidence",
    "FusionInstance",
    "LoweredNode",
    "Metric",
    "NoMetricError",
    "distance",
    "headline",
]

DEFAULT_TOLERANCES = {"fusion": 1e-4, "precision": 1e-2}
"""Relative distance up to which a trial matches its reference, per kind (both metrics)."""
FLOOR = 1e-6
"""Smallest denominator of a relative difference, so a loss of 0 does not divide by 0."""


class Metric(enum.Enum):
    """What a trial is judged by."""

    LOSS = "loss"
    VARIABLES = "variables"


class NoMetricError(ValueError):
    """The reference run recorded nothing the metric can compare (the message says what)."""


@dataclass(frozen=True, slots=True)
class FusionInstance:
    """One application of a fusion rule, named by its root node (``fusion_instances.json``)."""

    rule: str
    root: str
    nodes: tuple[str, ...] = ()
    """The user's nodes it replaced, root included."""
    where: str | None = None
    """``file.py:LINE`` where the script created the root, None when unknown."""


@dataclass(frozen=True, slots=True)
class LoweredNode:
    """A user node the precision mode computed in float16."""

    node: str
    type: str
    """Its TF op type (``MatMul``)."""
    ge_type: str
    """The GE op type a ``modify_mixlist`` names it by (``MatMulV2``)."""
    where: str | None = None


@dataclass(frozen=True, slots=True)
class Evidence:
    """What one finished trial recorded, read back from its report folder."""

    status: int = 0
    """The script's exit status."""
    loss: tuple[float | None, ...] = ()
    """The loss per training step (``None``: not finite)."""
    variables: Mapping[str, Any] | None = None
    """Final trainable variables (name -> array); None when the run recorded none."""
    instances: tuple[FusionInstance, ...] = ()
    lowered: tuple[LoweredNode, ...] = ()
    seconds: float = 0.0
    extras: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Anything else a trial reports (the run summary's ``injected_faults``)."""

    @property
    def finite(self) -> bool:
        """The run ended and every loss it fetched is finite."""
        return self.status == 0 and all(value is not None for value in self.loss)


def distance(trial: Evidence, reference: Evidence, metric: Metric) -> float:
    """The relative distance of ``trial`` from ``reference`` (see the module docstring).

    Raises:
        NoMetricError: the reference has no loss series / no variables to compare with.
    """
    if metric is Metric.LOSS:
        return _loss_distance(trial.loss, reference.loss)
    return _variables_distance(trial.variables, reference.variables)


def headline(evidence: Evidence, metric: Metric) -> float | None:
    """One number that stands for a run in a report: its final loss (``loss``), or the largest
    magnitude over its variables (``variables``); None when the run recorded none."""
    if metric is Metric.LOSS:
        return evidence.loss[-1] if evidence.loss else None
    if not evidence.variables:
        return None
    import numpy as np  # not at the CLI's start-up

    values = evidence.variables.values()
    return max(float(np.max(np.abs(np.asarray(v)), initial=0.0)) for v in values)


def _loss_distance(trial: Sequence[float | None], reference: Sequence[float | None]) -> float:
    if not reference:
        raise NoMetricError(
            "the reference run fetched no float scalar (no loss): print or fetch the loss in "
            "the script, or use --metric variables"
        )
    if len(trial) != len(reference):
        return math.inf
    worst = 0.0
    for a, b in zip(trial, reference, strict=True):
        if a is None or b is None:
            if a is None and b is None:
                continue
            return math.inf
        worst = max(worst, abs(a - b) / max(abs(b), FLOOR))
    return worst


def _variables_distance(
    trial: Mapping[str, Any] | None, reference: Mapping[str, Any] | None
) -> float:
    if not reference:
        raise NoMetricError(
            "the reference run recorded no trainable variables: use --metric loss, or let the "
            "script create its variables with trainable=True"
        )
    if trial is None or set(trial) != set(reference):
        return math.inf
    import numpy as np  # not at the CLI's start-up

    worst = 0.0
    for name, ref in reference.items():
        a = np.asarray(trial[name], dtype=np.float64)
        b = np.asarray(ref, dtype=np.float64)
        if a.shape != b.shape:
            return math.inf
        finite_a, finite_b = np.isfinite(a), np.isfinite(b)
        if not np.array_equal(finite_a, finite_b):
            return math.inf
        if not finite_b.any():
            continue
        scale = max(float(np.max(np.abs(b[finite_b]))), FLOOR)
        worst = max(worst, float(np.max(np.abs(a[finite_b] - b[finite_b]))) / scale)
    return worst

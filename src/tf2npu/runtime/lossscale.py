"""Where ``NPULossScaleOptimizer`` leaves its per-step facts for the run summary.

The loss-scale managers add one :class:`LossScaleRecord` per ``update_loss_scale`` to the graph:
the bool tensor "every gradient was finite" and the scale the manager holds after that step.
Both are computed by the step anyway, so a session that runs the step can fetch them with it:
no extra op runs and no value changes. A step whose gradients were not finite is skipped (no
variable changes), which is what the summary counts.

The records are kept on the graph object (:data:`ATTRIBUTE`), not in a graph collection: TF
writes every collection into the ``.meta`` file of each ``Saver.save`` and warns ("Type is
unsupported ... 'LossScaleRecord' object has no attribute 'name'") for a Python object there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ATTRIBUTE", "LossScaleRecord", "reached", "record"]

ATTRIBUTE = "_tf2npu_loss_scale_records"
"""The ``tf.Graph`` attribute holding the graph's records (a list, in creation order)."""


@dataclass(frozen=True)
class LossScaleRecord:
    """One loss-scaled ``apply_gradients``: its finite-gradients flag and the scale after it."""

    finite: Any
    """bool scalar tensor: False when the step was skipped."""
    scale: Any
    """float32 scalar tensor: the loss scale once this step's update is applied."""


def record(finite: Any, scale: Any) -> None:
    """Register a step's flag and resulting scale in the default graph (loss-scale managers)."""
    import tensorflow as tf

    if isinstance(finite, tf.Tensor) and isinstance(scale, tf.Tensor | tf.Variable):
        graph = finite.graph
        records = getattr(graph, ATTRIBUTE, None)
        if records is None:
            records = []
            setattr(graph, ATTRIBUTE, records)
        records.append(LossScaleRecord(finite, scale))


def reached(graph: Any, roots: Sequence[Any]) -> tuple[LossScaleRecord, ...]:
    """The records of ``graph`` whose flag the ops ``roots`` depend on (a run that trains them)."""
    records: list[LossScaleRecord] = getattr(graph, ATTRIBUTE, [])
    if not records:
        return ()
    wanted = {r.finite.op.name for r in records}
    seen: set[str] = set()
    stack = list(roots)
    while stack and not wanted <= seen:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return tuple(r for r in records if r.finite.op.name in seen)

"""Where each traced step's time went, by what was running at each instant (TF-free).

msprof's step_trace splits a step at two points (FP start, BP end), which says little off the
device: a step without a ``gradients`` op, or one whose first run builds TensorFlow's executor,
has most of its time outside both. This module instead walks the step's wall time
(the gap before the run, then first op start to last op end) and gives each instant to the
first of these that was running then:

* **input wait**: the gap before the run (:attr:`StepRow.data_aug_us`'s part before the run)
  and ``IteratorGetNext`` ops;
* **device compute**: ops of a GeOp;
* **host ops**: ops outside every GeOp;
* **copies**: memcpy edges that took time (host and device share memory here: 0 so far);
* **other**: no traced op ran: TensorFlow's executor between ops, feeds and fetches.

Ops on several executor threads overlap; an instant counts once. The parts add up to the
step's :attr:`StepRow.iteration_us`.

>>> from tf2npu.debug.profile.tables import StepRow
>>> step = StepRow(1, 2, True, 100.0, 200.0, 110.0, None, None, 10.0, 0.0, 0, 0)
>>> split = split_step(step, [("device", 100.0, 150.0), ("host", 140.0, 190.0)])
>>> split.input_us, split.device_us, split.host_us, split.other_us
(10.0, 50.0, 40.0, 10.0)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from tf2npu.debug.profile.tables import GETNEXT_TYPES, OpRow, StepRow

__all__ = ["PHASES", "StepPhases", "split_step", "step_phases"]

PHASES = ("input", "device", "host", "copy")
"""The kinds of time an instant can be given to, first wins; the rest is ``other``."""


@dataclass(frozen=True, slots=True)
class StepPhases:
    """One step's wall time (µs), split by what ran (module doc)."""

    model: int
    iteration: int
    input_us: float
    device_us: float
    host_us: float
    copy_us: float
    other_us: float

    @property
    def total_us(self) -> float:
        return self.input_us + self.device_us + self.host_us + self.copy_us + self.other_us

    def parts(self) -> list[tuple[str, float]]:
        """(phase label, µs) in drawing order."""
        return [
            ("input wait", self.input_us),
            ("device compute", self.device_us),
            ("host ops", self.host_us),
            ("copies", self.copy_us),
            ("other", self.other_us),
        ]


def phase_of(row: OpRow) -> str:
    """The phase an op row's time belongs to."""
    if row.is_memcpy:
        return "copy"
    if row.op_type in GETNEXT_TYPES or (row.facts is not None and row.facts.type in GETNEXT_TYPES):
        return "input"
    return "device" if row.geop else "host"


def step_phases(rows: Iterable[OpRow], steps: Sequence[StepRow]) -> list[StepPhases]:
    """:func:`split_step` for each of ``steps`` over the op rows of its run."""
    spans: dict[tuple[int, int], list[tuple[str, float, float]]] = defaultdict(list)
    for row in rows:
        if row.duration_us > 0:
            spans[(row.model, row.iteration)].append(
                (phase_of(row), row.start_us, row.start_us + row.duration_us)
            )
    return [split_step(s, spans.get((s.model, s.iteration), [])) for s in steps]


def split_step(step: StepRow, spans: Sequence[tuple[str, float, float]]) -> StepPhases:
    """``step``'s time split by ``spans`` ((phase, start µs, end µs), phase from
    :data:`PHASES`); the gap before the run is input wait, uncovered time is other."""
    rank = {phase: i for i, phase in enumerate(PHASES)}
    before = max(0.0, step.iteration_us - (step.end_us - step.start_us))
    edges = {step.start_us, step.end_us}
    events: dict[float, list[tuple[int, int]]] = defaultdict(list)
    for phase, start, end in spans:
        start, end = max(start, step.start_us), min(end, step.end_us)
        if end <= start:
            continue
        edges |= {start, end}
        events[start].append((rank[phase], 1))
        events[end].append((rank[phase], -1))
    active = [0] * len(PHASES)
    totals = [0.0] * (len(PHASES) + 1)  # the last one: other
    ordered = sorted(edges)
    for left, right in pairwise(ordered):
        for index, delta in events.get(left, ()):
            active[index] += delta
        running = next((i for i, n in enumerate(active) if n > 0), len(PHASES))
        totals[running] += right - left
    return StepPhases(
        model=step.model,
        iteration=step.iteration,
        input_us=before + totals[0],
        device_us=totals[1],
        host_us=totals[2],
        copy_us=totals[3],
        other_us=totals[4],
    )

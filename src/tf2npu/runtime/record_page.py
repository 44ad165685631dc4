"""``steps.html``: the scalars a recorded run fetched, drawn per step (TF-free).

:class:`~tf2npu.runtime.record.RunRecorder` writes it beside ``steps.jsonl`` when the run ends,
from the same step records: whoever asked for ``--record`` opens the report folder and sees
the loss curve, with no other command to learn (and every verify and bisect trial, which
records, gets its own). One chart per float scalar of the training runs (the loss first), x the
training step; a script that fetched nothing while it trained gets its evaluation runs' scalars
by run instead. A value that was NaN or Inf is a gap, and the steps where it was are listed.

The records are read once, as a stream, into curves of bounded size (:func:`chart.thin` as
they grow), so a run of a million steps needs no million-element list to draw.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from html import escape
from typing import Any

from tf2npu.graph.report.chart import MAX_POINTS, Series, line_chart, thin
from tf2npu.graph.report.names import breakable, name_table
from tf2npu.graph.report.page import document

__all__ = ["MAX_CHARTS", "PAGE_FILE", "render_page"]

PAGE_FILE = "steps.html"
MAX_CHARTS = 12
"""Scalars drawn (the loss first); the others are named."""
_SHOWN_STEPS = 10


@dataclass
class _Curve:
    """One scalar's points, thinned whenever they reach four times what a chart draws."""

    points: list[tuple[float, float | None]] = field(default_factory=list)
    bad: list[int] = field(default_factory=list)
    """The first x values where the value was NaN/Inf (at most :data:`_SHOWN_STEPS`)."""
    bad_count: int = 0

    def add(self, x: float, value: float | None) -> None:
        self.points.append((x, value))
        if value is None:
            self.bad_count += 1
            if len(self.bad) < _SHOWN_STEPS:
                self.bad.append(int(x))
        if len(self.points) >= 4 * MAX_POINTS:
            self.points = thin(self.points)


@dataclass
class _Signature:
    runs: int = 0
    train: bool = False
    npu: bool = False
    names: dict[str, None] = field(default_factory=dict)


@dataclass
class _Reading:
    """What the page needs from the records, gathered in one pass."""

    train: dict[str, _Curve] = field(default_factory=dict)
    evaluation: dict[str, _Curve] = field(default_factory=dict)
    signatures: dict[int, _Signature] = field(default_factory=dict)
    runs: int = 0
    steps: int = 0

    def add(self, record: Mapping[str, Any]) -> None:
        scalars = record.get("scalars") or {}
        train = bool(record.get("train"))
        self.runs += 1
        signature = self.signatures.setdefault(int(record.get("signature", 0)), _Signature())
        signature.runs += 1
        signature.train = signature.train or train
        signature.npu = signature.npu or bool(record.get("npu"))
        signature.names.update(dict.fromkeys(scalars))
        if train:
            self.steps = max(self.steps, int(record.get("step", 0)))
        curves, x = (self.train, record.get("step", 0)) if train else (
            self.evaluation, record.get("run", 0)
        )  # fmt: skip
        for name, value in scalars.items():
            curves.setdefault(name, _Curve()).add(float(x), None if value is None else float(value))


def render_page(records: Iterable[Mapping[str, Any]], title: str) -> str:
    """The page of ``records`` (``steps.jsonl``'s objects, in run order; read once)."""
    reading = _Reading()
    for record in records:
        reading.add(record)
    curves, x_label = (reading.train, "training step") if reading.train else (
        reading.evaluation, "session run (evaluation)"
    )  # fmt: skip
    names = sorted(curves, key=lambda n: "loss" not in n.lower())
    parts = [_summary(reading)]
    if not names:
        parts.append('<p class="note">no run fetched a float scalar</p>')
    for name in names[:MAX_CHARTS]:
        curve = curves[name]
        parts.append(f"<h2>{breakable(name)}</h2>")
        parts.append(
            line_chart([Series(name, curve.points)], title=f"{name} per {x_label}", x_label=x_label)
        )
        if curve.bad_count:
            shown = ", ".join(map(str, curve.bad))
            more = curve.bad_count - len(curve.bad)
            parts.append(
                f'<p class="error">NaN or Inf at {curve.bad_count} {x_label}s ({shown}'
                f"{f' and {more} more' if more else ''}): gaps in the line.</p>"
            )
    if len(names) > MAX_CHARTS:
        rest = ", ".join(names[MAX_CHARTS:])
        parts.append(f'<p class="note">not drawn ({len(names) - MAX_CHARTS}): {escape(rest)}</p>')
    return document(title, parts)


def _summary(reading: _Reading) -> str:
    """Runs recorded, training steps, NPU and stock runs, the scalars each fetched."""
    rows = [
        [number, s.runs, "training" if s.train else "evaluation", "NPU" if s.npu else "stock",
         ", ".join(s.names)]
        for number, s in reading.signatures.items()
    ]  # fmt: skip
    head = (
        f"<p>{reading.runs:,} session runs fetched float scalars; {reading.steps:,} training "
        "steps. The values are in <code>steps.jsonl</code> beside this page.</p>"
    )
    header = ["signature", "runs", "kind", "session", "scalars fetched"]
    return head + name_table(header, rows, names=(4,))

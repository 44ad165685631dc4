"""Analyse a profile folder: tables, timeline, advice and page from the raw data (TF-free).

>>> # analysis = analyse("prof/PROF_000001_20240101120000000_AB"); write_outputs(analysis)

Written into ``PROF_<pid>_<time>_<id>/`` (names from :mod:`tf2npu.artifacts.profile`):

* ``mindstudio_profiler_output/op_summary_<time>.csv``, ``op_statistic_<time>.csv`` (unless
  ``task_trace`` is ``off``), ``step_trace_<time>.csv`` (unless ``training_trace`` is ``off``),
  ``trace_view.json``, a top-level list of events (open it in Perfetto or ``chrome://tracing``);
* ``advice.md`` and ``advice.json`` (:mod:`tf2npu.debug.profile.advice`);
* ``profile.html`` (:mod:`tf2npu.debug.profile.page`).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tf2npu.artifacts import profile_raw as raw
from tf2npu.artifacts.profile import (
    OP_STATISTIC,
    OP_STATISTIC_COLUMNS,
    OP_SUMMARY,
    OP_SUMMARY_COLUMNS,
    STEP_TRACE,
    STEP_TRACE_COLUMNS,
    TRACE_VIEW,
    table_name,
)
from tf2npu.atomic import write_text_atomic
from tf2npu.debug.profile.advice import Evidence, advise, to_json, to_markdown
from tf2npu.debug.profile.tables import (
    OpRow,
    StatRow,
    StepRow,
    op_rows,
    statistic_rows,
    step_rows,
    trace_events,
    write_csv,
)
from tf2npu.findings import Finding

__all__ = ["ADVICE_JSON", "ADVICE_MD", "PAGE", "TRACE_VIEW", "Analysis", "analyse", "write_outputs"]

ADVICE_MD = "advice.md"
ADVICE_JSON = "advice.json"
PAGE = "profile.html"


@dataclass
class Analysis:
    """A profile with everything computed from it."""

    profile: raw.RawProfile
    rows: list[OpRow]
    stats: list[StatRow]
    steps: list[StepRow]
    findings: list[Finding]
    seconds: float = 0.0
    """How long the analysis took (without writing)."""
    written: list[Path] = field(default_factory=list)

    def warm_rows(self) -> list[OpRow]:
        """The rows of runs after each signature's first (all rows when none is warm)."""
        return _warm(self.rows)

    def top_ops(self) -> list[tuple[str, float, OpRow]]:
        """Ops by total time over the warm runs, largest first: (name, µs, a row of it)."""
        totals: dict[str, float] = defaultdict(float)
        first: dict[str, OpRow] = {}
        for row in self.warm_rows():
            if row.is_memcpy:
                continue
            totals[row.name] += row.duration_us
            first.setdefault(row.name, row)
        return sorted(((n, t, first[n]) for n, t in totals.items()), key=lambda x: -x[1])

    def op_table(self, limit: int) -> list[list[object]]:
        """The page's "ops by total time" rows."""
        counts: dict[str, int] = defaultdict(int)
        longest: dict[str, float] = defaultdict(float)
        for row in self.warm_rows():
            counts[row.name] += 1
            longest[row.name] = max(longest[row.name], row.duration_us)
        return [
            [name, row.op_type, row.task_type, row.geop or "(host)", counts[name], total,
             longest[name], row.origin, row.precision, row.fused_by, row.where]
            for name, total, row in self.top_ops()[:limit]
        ]  # fmt: skip

    def summary_line(self) -> str:
        """One line for a terminal."""
        severities: dict[str, int] = defaultdict(int)
        for finding in self.findings:
            severities[finding.severity.value] += 1
        advice = ", ".join(f"{n} {s}" for s, n in severities.items()) or "no advice"
        return (
            f"{len(self.profile.iterations)} traced runs, {len(self.rows):,} rows; {advice}; "
            f"{self.profile.directory / PAGE}"
        )


def _warm(rows: Sequence[OpRow]) -> list[OpRow]:
    warm = [row for row in rows if row.iteration > 1]
    return warm or list(rows)


def analyse(directory: str | Path) -> Analysis:
    """Read a ``PROF_<time>`` folder and compute its tables and advice.

    Raises:
        ValueError: the folder holds no profile or a file that is not the profiler's.
    """
    started = time.perf_counter()
    profile = raw.load(directory)
    rows = op_rows(profile)
    steps = step_rows(profile, rows)
    warm_steps = [s for s in steps if not s.warmup] or steps
    stats = statistic_rows(_warm(rows))
    findings = advise(Evidence(profile, _warm(rows), warm_steps))
    return Analysis(profile, rows, stats, steps, findings, time.perf_counter() - started)


def write_outputs(analysis: Analysis) -> list[Path]:
    """Write the tables, timeline, advice and page; returns the paths written."""
    from tf2npu.debug.profile.page import render_page

    profile = analysis.profile
    out = profile.output_dir
    out.mkdir(parents=True, exist_ok=True)
    stamp = profile.timestamp
    device = profile.device_id
    written = []
    if profile.spec.get("task_trace", "l1") != "off":
        summary = out / table_name(OP_SUMMARY, stamp)
        write_csv(summary, OP_SUMMARY_COLUMNS, (r.cells(device) for r in analysis.rows))
        statistic = out / table_name(OP_STATISTIC, stamp)
        write_csv(statistic, OP_STATISTIC_COLUMNS, (s.cells(device) for s in analysis.stats))
        written += [summary, statistic]
    if profile.spec.get("training_trace", "on") != "off":
        written.append(_write_steps(out / table_name(STEP_TRACE, stamp), analysis.steps, device))
    trace = out / TRACE_VIEW
    events = trace_events(profile, analysis.rows, analysis.steps)
    write_text_atomic(trace, json.dumps(events, separators=(",", ":")))
    advice_md = profile.directory / ADVICE_MD
    write_text_atomic(
        advice_md, to_markdown(analysis.findings, f"Advice: {profile.directory.name}")
    )
    advice_json = profile.directory / ADVICE_JSON
    write_text_atomic(advice_json, to_json(analysis.findings))
    page = profile.directory / PAGE
    write_text_atomic(page, render_page(analysis))
    written += [trace, advice_md, advice_json, page]
    analysis.written = written
    return written


def _write_steps(path: Path, steps: Sequence[StepRow], device: int) -> Path:
    pairs = max((len(s.reduces) for s in steps), default=0)
    header = list(STEP_TRACE_COLUMNS)
    at = header.index("Reduce Start(us)")
    extra = ["Reduce Start(us)", "Reduce Duration(us)"] * max(0, pairs - 1)
    header[at + 2 : at + 2] = extra
    write_csv(path, header, (s.cells(device, pairs) for s in steps))
    return path

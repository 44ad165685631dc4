"""``verify.html``: what ``tf2npu verify`` compared, drawn (TF-free).

One self-contained page in the look of :mod:`tf2npu.graph.report.page`, from the values verify
already has (its checks and the runs' records): the verdict and the checks first; then, for
every float scalar the runs fetched, its value per step in each run (the two original runs'
spread, widened by the noise floor, shaded) and each run's relative difference from
``original-1`` per step on a log scale (the noise floor shaded, the tolerances as dashed lines),
the first divergent step of each failed check marked on both; then the variables that differ.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path

from tf2npu.atomic import write_text_atomic
from tf2npu.debug.records import StepRecord
from tf2npu.debug.verify.checks import (
    Check,
    RunRecord,
    VerifyPlan,
    compared_steps,
    variable_differences,
    verdict,
)
from tf2npu.graph.report.chart import COLOURS, Band, Marker, Series, line_chart
from tf2npu.graph.report.names import breakable, name_table
from tf2npu.graph.report.page import document

__all__ = ["DIFF_FLOOR", "MAX_SCALARS", "PAGE_FILE", "render_page", "write_page"]

PAGE_FILE = "verify.html"
MAX_SCALARS = 12
"""Scalars drawn (the loss first); the others are named under the charts."""
DIFF_FLOOR = 1e-10
"""Relative differences below this (0 included) are drawn at it: a log scale has no 0."""
_REFERENCE = "original-1"


def write_page(checks: Sequence[Check], runs: Mapping[str, RunRecord], plan: VerifyPlan) -> Path:
    """Write ``verify.html`` into ``plan.out`` (atomically); returns its path."""
    path = plan.out / PAGE_FILE
    write_text_atomic(path, render_page(checks, runs, plan))
    return path


def render_page(checks: Sequence[Check], runs: Mapping[str, RunRecord], plan: VerifyPlan) -> str:
    """The whole page as text."""
    result = verdict(checks)
    parts = [
        f'<p><b class="{_verdict_class(result)}">{escape(result.upper())}</b>: '
        f"{escape(str(plan.original))} (original) against {escape(str(plan.migrated))} "
        "(migrated)</p>",
        "<h2>Checks</h2>",
        _checks_table(checks),
        *_notes(checks),
        "<h2>Scalars per step</h2>",
        *_scalar_charts(checks, runs),
        "<h2>Variables that differ</h2>",
        _variables(checks, runs),
        "<h2>Runs</h2>",
        _runs_table(runs),
    ]
    return document(f"tf2npu verify: {result.upper()}", parts)


def _verdict_class(result: str) -> str:
    return {"pass": "info", "inconclusive": "warning"}.get(result, "error")


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return "" if value is None else str(value)


def _checks_table(checks: Sequence[Check]) -> str:
    rows = []
    for check in checks:
        data = check.to_json()
        if check.name == "original_noise":
            state = "measures"
        else:
            state = "inconclusive" if check.inconclusive else "ok" if check.passed else "FAIL"
        rows.append(
            [
                check.name,
                state,
                _against(data["max_rel_diff"], data["tolerance"]),
                _against(data["max_rel_diff_variables"], data["variable_tolerance"]),
                _fmt(data["first_divergent_step"]),
                _fmt(data["first_divergent_scalar"]),
                _fmt(data["first_divergent_variable"]),
            ]
        )
    header = [
        "check", "verdict", "max rel diff vs tolerance", "variables vs tolerance",
        "first divergent step", "scalar", "first divergent variable",
    ]  # fmt: skip
    failed = ["" if c.passed else "fail" for c in checks]
    noise = next((c for c in checks if c.name == "original_noise"), None)
    floor = (
        f"<p>Noise floor (how far the two original runs differ): {_fmt(noise.noise_floor)}</p>"
        if noise
        else ""
    )
    return floor + name_table(header, rows, names=(0, 5, 6), row_class=failed)


def _against(value: object, tolerance: object) -> str:
    """``0.084 > 1e-05``: a difference and the tolerance it was judged by."""
    if value is None:
        return ""
    if not isinstance(tolerance, float):
        return _fmt(value)
    number = math.inf if isinstance(value, str) else float(value)  # type: ignore[arg-type]
    return f"{_fmt(value)} {'>' if number > tolerance else '<='} {_fmt(tolerance)}"


def _notes(checks: Sequence[Check]) -> list[str]:
    items = [
        f"<li><b>{escape(c.name)}</b>: {escape(note)}</li>"
        for c in checks
        for note in c.to_json()["notes"]
    ]
    return [f'<ul class="warning">{"".join(items)}</ul>'] if items else []


def _step_of(record: StepRecord, index: int) -> int:
    """The x of a compared record: its training step, as verify counts it."""
    return record.step or index + 1


def _values(run: RunRecord, name: str) -> list[tuple[float, float | None]]:
    return [
        (float(_step_of(r, i)), r.value(name))
        for i, r in enumerate(compared_steps(run.steps))
        if name in r.scalars
    ]


def _scalar_names(runs: Mapping[str, RunRecord]) -> list[str]:
    """Every scalar a run fetched in its compared steps, the reference's first, loss first."""
    names: dict[str, None] = {}
    for run in runs.values():
        for record in compared_steps(run.steps):
            names.update(dict.fromkeys(record.scalars))
    return sorted(names, key=lambda n: "loss" not in n.lower())


def _markers(checks: Sequence[Check]) -> list[Marker]:
    markers = []
    for check in checks:
        c = check.comparison
        if check.name != "original_noise" and c is not None and c.first_divergent_step:
            step = c.first_divergent_step
            markers.append(Marker(float(step), f"{check.name}: first divergence, step {step}"))
    return markers


def _scalar_charts(checks: Sequence[Check], runs: Mapping[str, RunRecord]) -> list[str]:
    names = _scalar_names(runs)
    if not names:
        return ['<p class="note">no run fetched a float scalar while it trained</p>']
    noise = next((c.noise_floor for c in checks if c.name == "original_noise"), 0.0)
    markers = _markers(checks)
    parts = []
    for name in names[:MAX_SCALARS]:
        colours = _colours(runs)
        lines = [Series(run, _values(rec, name), colour=colours[run]) for run, rec in runs.items()]
        lines = [s for s in lines if s.points]
        parts.append(f"<h3>{breakable(name)}</h3>")
        parts.append(
            line_chart(
                lines,
                title=f"{name} per step",
                y_label="value",
                bands=_spread(runs, name, noise),
                markers=markers,
                log=False,
            )
        )
        parts.append(_diff_chart(name, runs, checks, noise, markers))
    if len(names) > MAX_SCALARS:
        rest = ", ".join(names[MAX_SCALARS:])
        parts.append(f'<p class="note">not drawn ({len(names) - MAX_SCALARS}): {escape(rest)}</p>')
    return parts


def _colours(runs: Mapping[str, RunRecord]) -> dict[str, str]:
    """One colour per run, the same in every chart (a run missing from one keeps its own)."""
    return {run: COLOURS[i % len(COLOURS)] for i, run in enumerate(runs)}


def _spread(runs: Mapping[str, RunRecord], name: str, noise: float) -> list[Band]:
    """The two original runs' values per step, widened by the noise floor on either side."""
    if "original-2" not in runs or _REFERENCE not in runs:
        return []
    second = dict(_values(runs["original-2"], name))
    points = []
    for x, y in _values(runs[_REFERENCE], name):
        other = second.get(x)
        if y is None or other is None or not (math.isfinite(y) and math.isfinite(other)):
            continue
        pad = noise * abs(y) if math.isfinite(noise) else 0.0
        points.append((x, min(y, other) - pad, max(y, other) + pad))
    label = f"original runs' spread, widened by the noise floor ({noise:.3g})"
    return [Band(label, points)] if points else []


def _relative(x: float | None, y: float | None) -> float | None:
    """The candidate's difference from the reference as verify measures it; None for a
    NaN/Inf on one side (drawn as a gap, and verify calls it an infinite difference)."""
    if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
        return None
    return max(abs(x - y) / max(abs(y), 1e-12), DIFF_FLOOR)


def _diff_chart(
    name: str,
    runs: Mapping[str, RunRecord],
    checks: Sequence[Check],
    noise: float,
    markers: Sequence[Marker],
) -> str:
    if _REFERENCE not in runs:
        return ""
    reference = dict(_values(runs[_REFERENCE], name))
    colours = _colours(runs)
    lines = []
    for run, record in runs.items():
        if run == _REFERENCE:
            continue
        points = [(x, _relative(v, reference.get(x))) for x, v in _values(record, name)]
        points = [(x, d) for x, d in points if x in reference]
        if points:
            lines.append(Series(run, points, colour=colours[run]))
    if not lines:
        return ""
    steps = sorted(reference)
    for check in checks:
        if check.tolerance is not None and check.name != "original_noise" and steps:
            ends = [(steps[0], check.tolerance), (steps[-1], check.tolerance)]
            colour = colours.get(check.name.replace("_", "-"), "")  # the check's run's colour
            label = f"{check.name} tolerance {check.tolerance:.3g}"
            lines.append(Series(label, ends, dashed=True, colour=colour))
    bands = []
    if math.isfinite(noise) and noise > DIFF_FLOOR:
        bands.append(Band(f"noise floor {noise:.3g}", [(0.0, DIFF_FLOOR, noise)]))
    return (
        line_chart(
            lines,
            title=f"{name}: relative difference from {_REFERENCE}",
            y_label="|x - y| / |y|",
            bands=bands,
            markers=markers,
            log=True,
        )
        + '<p class="note">Runs that agree draw one line over another: the later in the '
        "legend is on top. "
        f"Differences below {DIFF_FLOOR:g} (0 included) are drawn at "
        f"{DIFF_FLOOR:g}; a NaN or Inf on one side only is a gap (verify counts it as an "
        "infinite difference). The precision_mode check measures against max(|y|, the "
        "scalar's median magnitude), so it can pass a step drawn above its line.</p>"
    )


def _variables(checks: Sequence[Check], runs: Mapping[str, RunRecord]) -> str:
    """One row per variable that differs in some run (worst first), a column per run."""
    reference = runs.get(_REFERENCE)
    if reference is None or not reference.variables:
        return '<p class="note">the original recorded no trainable variables</p>'
    others = [name for name, run in runs.items() if name != _REFERENCE and run.variables]
    diffs = {
        name: variable_differences(reference.variables, runs[name].variables) for name in others
    }
    bound = min((c.variable_tolerance for c in checks if c.variable_tolerance), default=None)
    rows = []
    for variable, value in reference.variables.items():
        found = [diffs[name][variable] for name in others]
        if all(d == 0.0 for d in found):
            continue
        worst = max(math.inf if d is None else d for d in found) if found else 0.0
        cells = ["missing" if d is None else f"{d:.3g}" for d in found]
        beyond = bound is not None and worst > bound
        rows.append((worst, [variable, "x".join(map(str, value.shape)) or "scalar", *cells,
                             "yes" if beyond else ""]))  # fmt: skip
    rows.sort(key=lambda r: -r[0])
    same = len(reference.variables) - len(rows)
    note = (
        f'<p class="note">Largest element difference from {_REFERENCE}, relative to the '
        f"model's largest variable magnitude; {same} of {len(reference.variables)} variables "
        "are identical in every run.</p>"
    )
    header = ["variable", "shape", *others, f"beyond {_fmt(bound)}"]
    return note + name_table(header, [r for _, r in rows])


def _runs_table(runs: Mapping[str, RunRecord]) -> str:
    rows = [
        [name, run.result.status, len(compared_steps(run.steps)), f"{run.result.seconds:.1f}",
         str(run.result.report_dir)]
        for name, run in runs.items()
    ]  # fmt: skip
    return name_table(["run", "exit status", "steps", "seconds", "folder"], rows, names=(0, 4))

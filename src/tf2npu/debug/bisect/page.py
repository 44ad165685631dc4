"""``bisect.html``: a bisection's trials drawn, in ``--out`` beside its fix files (TF-free).

In the look of :mod:`tf2npu.graph.report.page`, from the ``--json`` object and the trials the
bench ran: the verdict and the culprit; each trial's distance from the reference on a log scale,
in the order the trials ran, with the tolerance shaded (a trial in the band matches); the loss
per step of the trials (with ``--metric loss``); then the trials' table, each linked to its
report folder's own ``steps.html``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from tf2npu.atomic import write_text_atomic
from tf2npu.debug.bisect.search import Bench, Config, Trial
from tf2npu.graph.report.chart import Band, Series, line_chart
from tf2npu.graph.report.names import breakable
from tf2npu.graph.report.page import cell, document

__all__ = ["DISTANCE_FLOOR", "LOSS_CURVES", "PAGE_FILE", "render_page", "write_page"]

PAGE_FILE = "bisect.html"
LOSS_CURVES = 10
"""Trials whose loss curves are drawn (the first ones run; the table lists every trial)."""
DISTANCE_FLOOR = 1e-9
"""Distances below this (0 included) are drawn at it: a log scale has no 0."""
_STEPS_PAGE = "steps.html"
_GREY, _GREEN, _RED = "#90a4ae", "#2e7d32", "#c62828"


def write_page(data: Mapping[str, Any], bench: Bench, out: Path) -> Path:
    """Write ``bisect.html`` into ``out`` (atomically); returns its path."""
    path = out / PAGE_FILE
    write_text_atomic(path, render_page(data, bench.trials, out))
    return path


def render_page(data: Mapping[str, Any], trials: Sequence[Trial], out: Path) -> str:
    """The whole page as text: ``data`` is the ``--json`` object, ``trials`` the bench's."""
    verdict = str(data["verdict"])
    found = bool(data["found"])
    parts = [
        f'<p><b class="{"info" if found else "error"}">{escape(verdict)}</b>: '
        f"{escape(str(data['message']))}</p>",
        _culprit(data),
        f"<h2>Distance from the reference per trial ({len(trials)})</h2>",
        _distance_chart(trials, str(data["metric"]), float(data["tolerance"])),
    ]
    if data["metric"] == "loss":
        parts += ["<h2>Loss per step</h2>", _loss_chart(trials)]
    parts += ["<h2>Trials</h2>", _trials_table(trials, out)]
    return document(f"tf2npu bisect {data['kind']}: {verdict}", parts)


def _culprit(data: Mapping[str, Any]) -> str:
    rows = []
    if data.get("rule"):
        rows.append(("rule", f"{data['rule']} (Ascend: {', '.join(data.get('aliases', []))})"))
    if data.get("instance"):
        where = f", created at {data['where']}" if data.get("where") else ""
        rows.append(("instance", f"root {data['instance']}{where}"))
    if data.get("types"):
        rows.append(("black-list", ", ".join(data["types"])))
    if data.get("nodes"):
        rows.append(("nodes", ", ".join(data["nodes"])))
    for key in ("switch_file", "instances_file", "mixlist_file", "keep_file"):
        if data.get(key):
            rows.append((key.replace("_", " "), str(data[key])))
    if not rows:
        return ""
    items = "".join(f"<li><b>{escape(k)}</b>: {breakable(v)}</li>" for k, v in rows)
    return f"<ul>{items}</ul>"


def _distance_chart(trials: Sequence[Trial], metric: str, tolerance: float) -> str:
    judged = [(float(n), t) for n, t in enumerate(trials, 1) if t.distance is not None]
    if not judged:
        return '<p class="note">no trial was judged against the reference</p>'
    infinite = [t.label for _, t in judged if t.distance is not None and math.isinf(t.distance)]
    lines = [
        Series("in the order run", [(n, _floored(t.distance)) for n, t in judged], colour=_GREY),
        Series("matches", [(n, _floored(t.distance)) for n, t in judged if t.matches],
               dots=True, colour=_GREEN),
        Series("differs", [(n, _floored(t.distance)) for n, t in judged if not t.matches],
               dots=True, colour=_RED),
    ]  # fmt: skip
    band = Band(
        f"tolerance {tolerance:g}: a trial in here matches", [(0.0, DISTANCE_FLOOR, tolerance)]
    )
    chart = line_chart(
        [s for s in lines if s.points],
        title=f"{metric} distance from the reference",
        x_label="trial (in the order run: the table's rows)",
        y_label="distance",
        bands=[band],
        log=True,
    )
    note = f'<p class="note">Distances below {DISTANCE_FLOOR:g} (0 included) are drawn at it.'
    if infinite:
        note += " Infinite (a NaN or a failed run), not drawn: " + escape(", ".join(infinite)) + "."
    return chart + note + "</p>"


def _floored(distance: float | None) -> float | None:
    if distance is None or math.isinf(distance) or math.isnan(distance):
        return None
    return max(distance, DISTANCE_FLOOR)


def _loss_chart(trials: Sequence[Trial]) -> str:
    lines = [
        Series(t.label, [(float(i), v) for i, v in enumerate(t.evidence.loss, 1)], dashed=i >= 8)
        for i, t in enumerate(trials[:LOSS_CURVES])
        if t.evidence.loss
    ]
    if not lines:
        return '<p class="note">no trial fetched a loss</p>'
    more = len(trials) - LOSS_CURVES
    note = f'<p class="note">{more} more trials in the table.</p>' if more > 0 else ""
    return line_chart(lines, title="loss per step of each trial", y_label="loss") + note


def _config(config: Config) -> str:
    parts = []
    if config.fusion_off:
        parts.append("off: " + ", ".join(f"{r}@{n}" if n else r for r, n in config.fusion_off))
    if config.precision_mode:
        parts.append(f"precision_mode={config.precision_mode}")
    if config.black_list:
        parts.append("black-list: " + ", ".join(config.black_list))
    if config.keep_fp32:
        parts.append("keep float32: " + ", ".join(config.keep_fp32))
    return "; ".join(parts) or "as the user's command line"


def _trials_table(trials: Sequence[Trial], out: Path) -> str:
    if not trials:
        return '<p class="note">none</p>'
    head = "".join(
        f"<th>{h}</th>"
        for h in ("trial", "configuration", "exit", "distance", "verdict", "seconds", "curve")
    )
    rows = []
    for trial in trials:
        distance = "" if trial.distance is None else f"{trial.distance:.3g}"
        verdict = {True: "matches", False: "differs", None: ""}[trial.matches]
        link = ""
        if (trial.folder / _STEPS_PAGE).is_file():
            href = Path(os.path.relpath(trial.folder / _STEPS_PAGE, out)).as_posix()
            link = f'<a href="{escape(href)}">{_STEPS_PAGE}</a>'
        css = ' class="fail"' if trial.matches is False else ""
        rows.append(
            f"<tr{css}><td>{breakable(trial.folder.name)}</td>"
            f"<td>{breakable(_config(trial.config))}</td>{cell(trial.evidence.status)}"
            f'<td class="n"><span class="num">{distance}</span></td>'
            f"<td>{verdict}{' (resumed)' if trial.resumed else ''}</td>"
            f'<td class="n">{trial.evidence.seconds:.1f}</td><td>{link}</td></tr>'
        )
    return f'<table class="names"><tr>{head}</tr>\n' + "\n".join(rows) + "</table>"

"""The profile as one self-contained HTML page, in the look of ``graph inspect --html`` (TF-free).

Advice first, then three inline SVG charts (the ops taking the most time; each step split into
input wait, device compute, host ops, copies and the rest; the timeline of a few steps,
:mod:`.profile_timeline`), then the tables. The page's script makes table columns sortable by a
click and the timeline zoomable; nothing is fetched.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING

from tf2npu.debug.profile.phases import step_phases
from tf2npu.debug.profile.tables import AI_CPU, OpRow, StatRow, StepRow, trace_events
from tf2npu.debug.profile.timeline import TIMELINE_SCRIPT, render_timeline
from tf2npu.findings import Where
from tf2npu.graph.report.page import Html, breakable, document, table

if TYPE_CHECKING:
    from tf2npu.debug.profile.report import Analysis

__all__ = ["CHART_OPS", "CHART_STEPS", "OPS_LISTED", "op_anchors", "render_page"]

CHART_OPS = 15
OPS_LISTED = 100
"""Rows of the "ops by total time" table."""
CHART_STEPS = 40
_WIDTH, _LABEL, _BAR_H, _GAP = 960, 330, 16, 4

_SORT_SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function (tbl) {
  tbl.querySelectorAll('th').forEach(function (th, col) {
    th.style.cursor = 'pointer';
    th.title = 'sort';
    th.addEventListener('click', function () {
      var rows = Array.prototype.slice.call(tbl.rows, 1);
      var down = th.dataset.down !== '1';
      th.dataset.down = down ? '1' : '0';
      var key = function (row) {
        var text = row.cells[col] ? row.cells[col].textContent : '';
        var num = parseFloat(text.replace(/,/g, ''));
        return isNaN(num) ? text : num;
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var order = (typeof x === typeof y) ? (x < y ? -1 : x > y ? 1 : 0)
                                            : (typeof x < typeof y ? -1 : 1);
        return down ? -order : order;
      });
      rows.forEach(function (row) { tbl.tBodies[0].appendChild(row); });
    });
  });
});
document.body.dataset.ready = '1';
"""


def render_page(analysis: Analysis) -> str:
    """The whole page as text."""
    profile = analysis.profile
    title = f"tf2npu profile: {profile.directory.name}"
    parts = [
        f"<p>{escape(_totals(analysis))}</p>",
        *_advice(analysis),
        "<h2>Top ops by time</h2>",
        _ops_chart(analysis.top_ops(), op_anchors(analysis)),
        "<h2>Step breakdown</h2>",
        _steps_chart(analysis),
        "<h2>Timeline</h2>",
        render_timeline(trace_events(profile, analysis.rows, analysis.steps), analysis.steps),
        *_tables(analysis),
    ]
    return document(title, parts, script=TIMELINE_SCRIPT + _SORT_SCRIPT)


def _totals(analysis: Analysis) -> str:
    rows = [r for r in analysis.rows if not r.is_memcpy]
    device = sum(r.duration_us for r in rows if r.geop)
    host = sum(r.duration_us for r in rows if not r.geop)
    return (
        f"{len(analysis.profile.iterations)} traced runs of {len(analysis.profile.models)} run "
        f"signatures; {len(rows):,} op executions: {device / 1000:,.1f} ms in GeOps, "
        f"{host / 1000:,.1f} ms in host ops; precision mode "
        f"{analysis.profile.options.get('precision_mode', 'unknown')}"
    )


def op_anchors(analysis: Analysis) -> dict[str, str]:
    """The id of each op's row in the "ops by total time" table, by op name."""
    return {name: f"op-{i}" for i, (name, _, _) in enumerate(analysis.top_ops()[:OPS_LISTED])}


def _op_link(name: str, anchors: Mapping[str, str]) -> object:
    """``name`` linked to its row in the ops table, or as it is when the table has no row."""
    if name not in anchors:
        return name
    return Html(f'<a href="#{anchors[name]}">{breakable(name)}</a>')


def _advice(analysis: Analysis) -> list[str]:
    """The findings, each op linked to its row in the ops table."""
    findings = analysis.findings
    anchors = op_anchors(analysis)
    counts: dict[str, int] = defaultdict(int)
    for f in findings:
        counts[f.severity.value] += 1
    label = ", ".join(f"{n} {s}" for s, n in counts.items()) or "none"
    rows = [
        [f'<span class="{f.severity.value}">{f.severity.value}</span>', f.id,
         _op_link(f.where.node, anchors), f.cause, _line(f.where), f.fix]
        for f in findings
    ]  # fmt: skip
    return [
        f"<h2>Advice ({label})</h2>",
        table(["severity", "rule", "node", "cause", "source line", "fix"], rows, raw_first=True),
    ]


def _line(where: Where) -> str:
    return f"{where.file}:{where.line}" if where.line else where.file


def _tables(analysis: Analysis) -> list[str]:
    out = ["<h2>Op types (op_statistic)</h2>", _sortable(table(
        ["OP Type", "Core Type", "Count", "Total (µs)", "Avg (µs)", "Min (µs)", "Max (µs)",
         "Ratio (%)"],
        [_stat_cells(s) for s in analysis.stats[:100]],
    ))]  # fmt: skip
    out.append("<h2>Ops by total time</h2>")
    out.append(_sortable(table(
        ["op", "type", "task type", "GeOp", "runs", "total (µs)", "max (µs)", "origin",
         "precision", "fused by", "source line"],
        _anchored(analysis.op_table(OPS_LISTED), op_anchors(analysis)),
    )))  # fmt: skip
    out.append("<h2>Steps (step_trace)</h2>")
    out.append(_sortable(table(
        ["model", "iteration", "train", "time (µs)", "FP to BP (µs)", "data aug bound (µs)",
         "GetNext (µs)", "copies", "copy bytes"],
        [_step_cells(s) for s in analysis.steps[:500]],
    )))  # fmt: skip
    no_effect = analysis.profile.spec.get("no_effect") or {}
    if no_effect:
        out.append("<h2>Profiling options without effect here</h2>")
        out.append(table(["key", "why"], [[k, v] for k, v in no_effect.items()]))
    return out


def _anchored(rows: list[list[object]], anchors: Mapping[str, str]) -> list[list[object]]:
    """The op table's rows, each op's name the target of the links to it."""
    out = []
    for name, *rest in rows:
        label = breakable(str(name))
        out.append(
            [Html(f'<span class="op-anchor" id="{anchors[str(name)]}">{label}</span>'), *rest]
        )
    return out


def _sortable(html: str) -> str:
    """The table sortable by a click on a column, in a smaller font (it has many columns)."""
    return html.replace("<table>", '<table class="sortable wide">', 1)


def _stat_cells(s: StatRow) -> list[object]:
    return [s.op_type, s.core_type, s.count, s.total_us, s.avg_us, s.min_us, s.max_us, s.ratio]


def _step_cells(s: StepRow) -> list[object]:
    return [
        s.model, s.iteration, s.train, s.iteration_us, _or_na(s.fp_bp_us),
        _or_na(s.data_aug_us), s.getnext_us, s.copies, s.copy_bytes,
    ]  # fmt: skip


def _or_na(value: float | None) -> object:
    return "N/A" if value is None else value


# -- charts -------------------------------------------------------------------------------------


def _ops_chart(top: Sequence[tuple[str, float, OpRow]], anchors: Mapping[str, str]) -> str:
    """One bar per op (total time), green for device, orange for AI CPU / host; a click on its
    name goes to its row in the ops table."""
    if not top:
        return '<p class="note">no op was traced</p>'
    top = top[:CHART_OPS]
    longest = max(total for _, total, _ in top) or 1.0
    height = len(top) * (_BAR_H + _GAP) + 30
    span = _WIDTH - _LABEL - 110
    items = [
        f'<svg width="{_WIDTH}" height="{height}" viewBox="0 0 {_WIDTH} {height}" role="img" '
        'aria-label="top ops">'
    ]
    for i, (name, total, row) in enumerate(top):
        y = 10 + i * (_BAR_H + _GAP)
        width = max(1.0, span * total / longest)
        css = "bar-host" if row.task_type == AI_CPU else "bar-device"
        label = name if len(name) <= 42 else "…" + name[-41:]
        text = (
            f'<text class="label" x="{_LABEL - 6}" y="{y + 12}" text-anchor="end">'
            f"{escape(label)}</text>"
        )
        if name in anchors:
            text = f'<a href="#{anchors[name]}">{text}</a>'
        items.append(
            text
            + f'<rect class="{css}" x="{_LABEL}" y="{y}" width="{width:.1f}" height="{_BAR_H}">'
            f"<title>{escape(name)} ({escape(row.op_type)}, {escape(row.task_type)}): "
            f"{total:,.1f} µs</title></rect>"
            f'<text class="label" x="{_LABEL + width + 6:.1f}" y="{y + 12}">{total:,.0f} µs</text>'
        )
    legend_y = height - 8
    items.append(
        _legend(legend_y, [("bar-device", "device (AI Core)"), ("bar-host", "AI CPU / host")])
    )
    items.append("</svg>")
    return "".join(items)


def _steps_chart(analysis: Analysis) -> str:
    """One stacked bar per step, its wall time split by what ran (:mod:`.profile_phases`).

    The training steps after each signature's first run (which builds TensorFlow's executor),
    else every training step, else every step."""
    steps = [s for s in analysis.steps if s.train]
    steps = [s for s in steps if not s.warmup] or steps or list(analysis.steps)
    if not steps:
        return '<p class="note">no step was traced</p>'
    phases = step_phases(analysis.rows, steps[:CHART_STEPS])
    longest = max(p.total_us for p in phases) or 1.0
    height = len(phases) * (_BAR_H + _GAP) + 30
    span = _WIDTH - _LABEL - 110
    items = [
        f'<svg width="{_WIDTH}" height="{height}" viewBox="0 0 {_WIDTH} {height}" role="img" '
        'aria-label="step breakdown">'
    ]
    for i, step in enumerate(phases):
        y = 10 + i * (_BAR_H + _GAP)
        items.append(
            f'<text class="label" x="{_LABEL - 6}" y="{y + 12}" text-anchor="end">'
            f"model {step.model} iteration {step.iteration}</text>"
        )
        x = float(_LABEL)
        for (part, value), css in zip(step.parts(), _PHASE_CSS, strict=True):
            width = span * value / longest
            if width <= 0:
                continue
            share = 100 * value / (step.total_us or 1.0)
            items.append(
                f'<rect class="{css}" x="{x:.1f}" y="{y}" width="{width:.1f}" '
                f'height="{_BAR_H}"><title>{part}: {value:,.1f} µs ({share:.0f}%)</title></rect>'
            )
            x += width
        items.append(
            f'<text class="label" x="{x + 6:.1f}" y="{y + 12}">{step.total_us:,.0f} µs</text>'
        )
    labels = [part for part, _ in phases[0].parts()]
    items.append(_legend(height - 8, list(zip(_PHASE_CSS, labels, strict=True))))
    items.append("</svg>")
    total = sum(p.total_us for p in phases) or 1.0
    shares = ", ".join(
        f"{label} {100 * sum(p.parts()[i][1] for p in phases) / total:.0f}%"
        for i, label in enumerate(labels)
    )
    note = (
        f"Over these {len(phases)} steps: {shares}. Each instant of a step goes to the first "
        "of: input wait (the gap before the run, "
        "GetNext), device compute (GeOp ops), host ops, copies; other is time no traced op ran "
        "(TensorFlow's executor, feeds and fetches)."
    )
    if len(steps) < len(analysis.steps):
        note += " First runs of each signature and runs that do not train are left out."
    return "".join(items) + f'<p class="note">{escape(note)}</p>'


_PHASE_CSS = ("bar-input", "bar-device", "bar-host", "bar-copy", "bar-other")


def _legend(y: int, items: Sequence[tuple[str, str]]) -> str:
    out = []
    x = _LABEL
    for css, text in items:
        out.append(
            f'<rect class="{css}" x="{x}" y="{y - 10}" width="12" height="10"></rect>'
            f'<text class="label" x="{x + 16}" y="{y}">{escape(text)}</text>'
        )
        x += 24 + 8 * len(text)
    return "".join(out)

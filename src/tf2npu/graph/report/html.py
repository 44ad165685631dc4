"""A self-contained HTML page of one engine run: the partition drawn in SVG, plus tables.

No scripts, fonts, stylesheets or images are fetched: CSS is inline and the drawing is an inline
SVG, so the page opens anywhere and can be mailed. The drawing shows clusters, never single
nodes, so it stays readable for graphs of any size: the host side is one box per host reason
(with its node count), the device side one box per GeOp, and a line from the host to each GeOp
labelled with the tensors crossing that GeOp's boundary (``in``: host to device, ``out``: device
to host). Beyond :data:`BOXES_DRAWN` boxes per side, the rest are summed into one box.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from tf2npu.graph.report.summary import GraphSummary
from tf2npu.graph.report.text import mode_label, timings_line, totals_line

__all__ = ["BOXES_DRAWN", "ROWS_SHOWN", "render_html"]

BOXES_DRAWN = 24
ROWS_SHOWN = 2000
"""Rows per table; the partition report in ``--dump-dir`` lists everything."""

_BOX_W, _BOX_H, _GAP, _TOP = 300, 34, 12, 56
_HOST_X, _DEVICE_X, _WIDTH = 20, 520, 840

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.n { text-align: right; }
.device { fill: #e8f5e9; stroke: #2e7d32; } .host { fill: #fff3e0; stroke: #ef6c00; }
.edge { stroke: #555; stroke-width: 1.5; } .label { font: 12px system-ui, sans-serif; }
.error { color: #b71c1c; } .warning { color: #8d6e00; } .note { color: #666; }
"""


def render_html(summary: GraphSummary) -> str:
    """The whole page as text."""
    title = f"tf2npu graph inspect: {summary.graph or 'graph'}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>{escape(mode_label(summary))}</p>",
        f"<p>{escape(totals_line(summary))}</p>",
        "<h2>Partition</h2>",
        _svg(summary),
        *_sections(summary),
        f'<p class="note">{escape(timings_line(summary))}</p>',
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _sections(summary: GraphSummary) -> list[str]:
    out = ["<h2>GeOps</h2>"]
    out.append(
        _table(
            ["GeOp", "nodes", "inputs", "outputs"],
            [[g.name, g.nodes, len(g.inputs), len(g.outputs)] for g in summary.geops],
        )
    )
    out.append(f"<h2>Host ops ({summary.host_nodes:,})</h2>")
    out.append(
        _table(
            ["node", "type", "reason", "code", "why"],
            [[h.name, h.type, h.reason, h.code, h.message] for h in summary.host_ops],
        )
    )
    out.append(
        f"<h2>Casts (precision changes: {len(summary.precision):,}; "
        f"casts inserted: {summary.casts_inserted:,})</h2>"
    )
    out.append(
        _table(
            ["node", "before", "after", "reason"],
            [[name, d.before, d.after, d.reason] for name, d in summary.precision.items()],
        )
    )
    out.append(f"<h2>Fusions ({summary.fusions_applied:,} applied)</h2>")
    out.append(_table(["rule", "applied"], [[r, n] for r, n in summary.fusions.items()]))
    out.append("<h2>Errors and warnings</h2>")
    diagnostics = [*summary.errors, *summary.warnings]
    out.append(
        _table(
            ["severity", "code", "node", "message", "fix"],
            [[d.severity, d.code, d.node, d.message, d.fix] for d in diagnostics],
        )
    )
    if summary.no_effect:
        out.append("<h2>Options without effect here</h2>")
        out.append(_table(["option", "why"], [list(row) for row in summary.no_effect]))
    return out


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    if not rows:
        return '<p class="note">none</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "\n".join(f"<tr>{''.join(_cell(v) for v in row)}</tr>" for row in rows[:ROWS_SHOWN])
    more = ""
    if len(rows) > ROWS_SHOWN:
        more = f'<p class="note">{len(rows) - ROWS_SHOWN:,} more rows not shown.</p>'
    return f"<table><tr>{head}</tr>\n{body}</table>{more}"


def _cell(value: object) -> str:
    if isinstance(value, int):
        return f'<td class="n">{value:,}</td>'
    return f"<td>{escape(str(value))}</td>"


def _svg(summary: GraphSummary) -> str:
    host = _boxes(((r, len(ops)) for r, ops in summary.host_ops_by_reason()), "reasons")
    device = _boxes(((g.name, g.nodes) for g in summary.geops), "GeOps")
    crossing = [(len(g.inputs), len(g.outputs)) for g in summary.geops[: len(device)]]
    rows = max(len(host), len(device), 1)
    height = _TOP + rows * (_BOX_H + _GAP) + _GAP
    out = [
        f'<svg width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" role="img" aria-label="partition">',
        _text(_HOST_X, 20, f"Host: {summary.host_nodes:,} nodes"),
        _text(_DEVICE_X, 20, f"Device: {summary.device_nodes:,} nodes"),
        _text(_HOST_X, 40, f"memcpy edges: {summary.memcpy_edges:,}"),
    ]
    if not host:
        out.append(_text(_HOST_X, _TOP + 20, "no host ops"))
    if not device:
        out.append(_text(_DEVICE_X, _TOP + 20, "no GeOps"))
    hub_y = _TOP + (len(host) * (_BOX_H + _GAP) - _GAP) / 2 if host else _TOP + _BOX_H / 2
    for i, (inputs, outputs) in enumerate(crossing):
        y = _TOP + i * (_BOX_H + _GAP) + _BOX_H / 2
        x1, x2 = _HOST_X + _BOX_W, _DEVICE_X
        out.append(f'<line class="edge" x1="{x1}" y1="{hub_y:.0f}" x2="{x2}" y2="{y:.0f}"/>')
        out.append(_text(x2 - 110, y - 6, f"in {inputs} / out {outputs}"))
    out += _draw(host, _HOST_X, "host") + _draw(device, _DEVICE_X, "device")
    out.append("</svg>")
    return "\n".join(out)


def _boxes(items: Iterable[tuple[str, int]], what: str) -> list[tuple[str, int]]:
    """At most :data:`BOXES_DRAWN` boxes; the rest summed into the last one."""
    listed = list(items)
    if len(listed) <= BOXES_DRAWN:
        return listed
    kept, rest = listed[: BOXES_DRAWN - 1], listed[BOXES_DRAWN - 1 :]
    return [*kept, (f"{len(rest)} more {what}", sum(n for _, n in rest))]


def _draw(boxes: list[tuple[str, int]], x: int, kind: str) -> list[str]:
    out = []
    for i, (label, count) in enumerate(boxes):
        y = _TOP + i * (_BOX_H + _GAP)
        out.append(
            f'<rect class="{kind}" x="{x}" y="{y}" width="{_BOX_W}" height="{_BOX_H}" rx="4"/>'
        )
        out.append(_text(x + 8, y + 21, f"{_clip(label)} ({count:,} nodes)"))
    return out


def _text(x: float, y: float, text: str) -> str:
    return f'<text class="label" x="{x:.0f}" y="{y:.0f}">{escape(text)}</text>'


def _clip(label: str, width: int = 30) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"

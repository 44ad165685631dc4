"""A self-contained HTML page of one engine run: the partition drawn in SVG, plus tables.

No scripts, fonts, stylesheets or images are fetched: CSS is inline and the drawing is an inline
SVG, so the page opens anywhere and can be mailed. Errors and warnings come first. The drawing
shows clusters, never single nodes, so it stays readable for graphs of any size: the host side
is one box per host reason (with its node count), the device side one box per GeOp, a line from
each host box to each GeOp it exchanges tensors with, labelled with the tensors crossing
(``in``: host to device, ``out``: device to host), and an arc on the device side between two
GeOps that pass tensors to each other (through the host). Beyond :data:`BOXES_DRAWN` boxes per
side, the rest are summed into one box, and their lines go to it. The box holding an error's
node is outlined red with the node named in it. The tables list the tensors crossing the
boundaries and show a pass-made node by the user's ops it stands for, its internal name one
click away (:func:`user_name`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from html import escape

from tf2npu.artifacts.run_summary import NAMED_REASONS, PrecisionRow, precision_groups
from tf2npu.graph.report.crossings import is_internal
from tf2npu.graph.report.page import ROWS_SHOWN, Html, breakable, document, table
from tf2npu.graph.report.summary import GraphSummary
from tf2npu.graph.report.text import mode_label, timings_line, totals_line

__all__ = ["BOXES_DRAWN", "ROWS_SHOWN", "render_html"]

BOXES_DRAWN = 24

_BOX_W, _BOX_H, _GAP, _TOP = 300, 34, 12, 56
_HOST_X, _DEVICE_X, _WIDTH = 20, 520, 1000
_LINE_GAP = 17
"""Vertical room per line end on a box: boxes grow so that line labels never overlap."""


def render_html(summary: GraphSummary) -> str:
    """The whole page as text."""
    title = f"tf2npu graph inspect: {summary.graph or 'graph'}"
    parts = [
        f"<p>{escape(mode_label(summary))}</p>",
        f"<p>{escape(totals_line(summary))}</p>",
        *_diagnostics(summary),
        "<h2>Partition</h2>",
        _svg(summary),
        *_sections(summary),
        f'<p class="note">{escape(timings_line(summary))}</p>',
    ]
    return document(title, parts)


def _sections(summary: GraphSummary) -> list[str]:
    out = ["<h2>GeOps</h2>"]
    out.append(
        table(
            ["GeOp", "nodes", "inputs", "outputs"],
            [[g.name, g.nodes, len(g.inputs), len(g.outputs)] for g in summary.geops],
        )
    )
    out.extend(_crossings(summary))
    out.append(f"<h2>Host ops ({summary.host_nodes:,})</h2>")
    out.append(
        table(
            ["node", "type", "reason", "code", "why"],
            [
                [user_name(summary, h.name), h.type, h.reason, h.code, h.message]
                for h in summary.host_ops
            ],
        )
    )
    out.extend(_precision(summary))
    out.append(f"<h2>Fusions ({summary.fusions_applied:,} applied)</h2>")
    out.append(table(["rule", "applied"], [[r, n] for r, n in summary.fusions.items()]))
    out.append(f"<h2>Fusion instances ({len(summary.fusion_instances):,})</h2>")
    out.append(
        table(
            ["rule", "root", "nodes"],
            [
                [f.rule, user_name(summary, f.root), _names(summary, f.nodes)]
                for f in summary.fusion_instances
            ],
        )
    )
    if summary.no_effect:
        out.append("<h2>Options without effect here</h2>")
        out.append(table(["option", "why"], [list(row) for row in summary.no_effect]))
    return out


def user_name(summary: GraphSummary, name: str) -> object:
    """``name`` as the page shows it: a pass-made name (``dense/Relu/_tf2npu_fp16/...``) as the
    user's ops it stands for, the internal name one click away; any other name as it is."""
    node, colon, index = name.partition(":")
    users = summary.user_names.get(node)
    if not is_internal(node) or not users:
        return name
    shown = ", ".join(users) + (f" ({colon}{index})" if colon else "")
    return Html(
        f'<details class="name"><summary>{breakable(shown)}</summary>'
        f"<code>{breakable(name)}</code></details>"
    )


def _names(summary: GraphSummary, names: Sequence[str]) -> object:
    """Several names in one cell, each as :func:`user_name` shows it."""
    shown = [user_name(summary, n) for n in names]
    if not any(isinstance(n, Html) for n in shown):
        return ", ".join(names)
    return Html(", ".join(n if isinstance(n, Html) else breakable(str(n)) for n in shown))


def _crossings(summary: GraphSummary) -> list[str]:
    """The tensors copied between the host and GeOps (or GeOp to GeOp) each step."""
    rows = [
        [user_name(summary, c.tensor), c.source, c.dest, c.dtype or "?", c.shape or "?"]
        for c in summary.crossings
    ]
    return [
        f"<h2>Tensors crossing between host and GeOps ({len(rows):,}; "
        f"{summary.memcpy_edges:,} memcpy edges: one per op input reading one)</h2>",
        table(["tensor", "from", "to", "dtype", "shape"], rows),
        '<p class="note">One row per tensor copied into a GeOp or out of it each step; from / '
        "to: a GeOp, or the host reasons of the ops at that end; ? = the graph does not say "
        "(a graph exported with add_shapes=True says the shapes).</p>",
    ]


def _precision(summary: GraphSummary) -> list[str]:
    """Per user op: counts by dtype and reason, then the ops that changed dtype or whose dtype
    the user chose (a ``modify_mixlist`` edit, ``keep_dtype_scope``), by the user's names."""
    rows = summary.precision_ops
    lowered = sum(row.lowered for row in rows)
    out = [
        f"<h2>Precision ({len(rows):,} user ops judged, {lowered:,} in a lower dtype; "
        f"casts inserted: {summary.casts_inserted:,})</h2>"
    ]
    groups = precision_groups(rows)
    out.append(
        table(
            ["dtype", "reason", "ops", "op types"],
            [
                [dtype, members[0].reason_text, len(members), _types(members)]
                for dtype, reason, members in groups
            ],
        )
    )
    shown = [r for r in rows if r.lowered or r.reason in NAMED_REASONS or "deny" in r.reason]
    out.append(
        table(
            ["op", "GE type", "dtype", "reason", "why"],
            [[r.op, r.op_type, r.dtype, r.reason_text, r.detail] for r in shown],
        )
    )
    return out


def _types(members: Sequence[PrecisionRow]) -> str:
    counts = Counter(row.op_type for row in members).most_common()
    return ", ".join(f"{name} x{count}" for name, count in counts)


def _diagnostics(summary: GraphSummary) -> list[str]:
    """Errors and warnings, first on the page: they are what a reader must act on."""
    diagnostics = [*summary.errors, *summary.warnings]
    counts = f"{_count(len(summary.errors), 'error')}, {_count(len(summary.warnings), 'warning')}"
    heading = f"<h2>Errors and warnings ({counts})</h2>"
    rows = [
        [f'<span class="{d.severity}">{escape(d.severity)}</span>', d.code,
         user_name(summary, d.node), d.message, d.fix]
        for d in diagnostics
    ]  # fmt: skip
    return [heading, table(["severity", "code", "node", "message", "fix"], rows, raw_first=True)]


def _svg(summary: GraphSummary) -> str:
    host = _boxes(((r, len(ops)) for r, ops in summary.host_ops_by_reason()), "reasons")
    device = _boxes(((g.name, g.nodes) for g in summary.geops), "GeOps")
    host_row = _rows(host, [r for r, _ in summary.host_ops_by_reason()])
    geop_row = _rows(device, [g.name for g in summary.geops])
    pairs = _pairs(summary, host_row, geop_row)
    fan = max([*Counter(h for h, _ in pairs).values(), *Counter(d for _, d in pairs).values(), 1])
    box_h = max(_BOX_H, _LINE_GAP * fan + 8)
    host_marks, device_marks = _failing(summary, host_row, geop_row)
    if host_marks or device_marks:
        box_h = max(box_h, 2 * _BOX_H)  # room for the error's line under the label
    rows = max(len(host), len(device), 1)
    height = _TOP + rows * (box_h + _GAP) + _GAP
    out = [
        f'<svg width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" role="img" aria-label="partition">',
        _text(_HOST_X, 20, f"Host: {_nodes(summary.host_nodes)}"),
        _text(_DEVICE_X, 20, f"Device: {_nodes(summary.device_nodes)}"),
        _text(_HOST_X, 40, f"memcpy edges: {summary.memcpy_edges:,}"),
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#555"/></marker></defs>',
    ]
    if not host:
        out.append(_text(_HOST_X, _TOP + 20, "no host ops"))
    if not device:
        out.append(_text(_DEVICE_X, _TOP + 20, "no GeOps"))
    out += _host_lines(pairs, box_h) + _geop_arcs(summary, geop_row, box_h)
    out += _draw(host, _HOST_X, "host", box_h, host_marks)
    out += _draw(device, _DEVICE_X, "device", box_h, device_marks)
    out.append("</svg>")
    return "\n".join(out)


def _rows(boxes: list[tuple[str, int]], names: list[str]) -> dict[str, int]:
    """The box row of each name: its own, or the last box that sums the rest."""
    return {name: min(i, len(boxes) - 1) for i, name in enumerate(names)}


def _pairs(
    summary: GraphSummary, host_row: dict[str, int], geop_row: dict[str, int]
) -> dict[tuple[int, int], list[int]]:
    """(host row, GeOp row) -> [tensors in, tensors out], for each pair that exchanges any."""
    pairs: dict[tuple[int, int], list[int]] = {}
    for geop in summary.geops:
        for direction, ends in ((0, geop.sources), (1, geop.sinks)):
            for end, count in ends:
                if end in host_row:
                    pair = pairs.setdefault((host_row[end], geop_row[geop.name]), [0, 0])
                    pair[direction] += count
    return dict(sorted(pairs.items()))


def _top(row: int, box_h: int) -> float:
    return _TOP + row * (box_h + _GAP)


def _host_lines(pairs: dict[tuple[int, int], list[int]], box_h: int) -> list[str]:
    """A line per (host box, GeOp box) pair, each with its own end points and its label at the
    GeOp end, so that lines into one box never share a label position."""
    out = []
    for (h, d), (inputs, outputs) in pairs.items():
        i = sum(1 for other in pairs if other[0] == h and other[1] < d)
        j = sum(1 for other in pairs if other[1] == d and other[0] < h)
        n_h = sum(1 for other in pairs if other[0] == h)
        n_d = sum(1 for other in pairs if other[1] == d)
        y1 = _top(h, box_h) + box_h * (i + 1) / (n_h + 1)
        y2 = _top(d, box_h) + box_h * (j + 1) / (n_d + 1)
        x1, x2 = _HOST_X + _BOX_W, _DEVICE_X
        out.append(f'<line class="edge" x1="{x1}" y1="{y1:.0f}" x2="{x2}" y2="{y2:.0f}"/>')
        out.append(_text(x2 - 4, y2 - 2, f"in {inputs} / out {outputs}", anchor="end"))
    return out


def _geop_arcs(summary: GraphSummary, geop_row: dict[str, int], box_h: int) -> list[str]:
    """An arc right of the device boxes for tensors passed from one GeOp to another."""
    out = []
    for geop in summary.geops:
        for end, count in geop.sources:
            if end not in geop_row or geop_row[end] == geop_row[geop.name]:
                continue
            y1 = _top(geop_row[end], box_h) + box_h / 2
            y2 = _top(geop_row[geop.name], box_h) + box_h / 2
            x = _DEVICE_X + _BOX_W
            bulge = x + 20 + 10 * abs(geop_row[end] - geop_row[geop.name])
            out.append(
                f'<path class="edge" marker-end="url(#arrow)" d="M {x} {y1:.0f} C {bulge} '
                f'{y1:.0f}, {bulge} {y2:.0f}, {x} {y2:.0f}"/>'
            )
            out.append(_text(bulge + 4, (y1 + y2) / 2 + 4, f"{count} from {end}"))
    return out


def _boxes(items: Iterable[tuple[str, int]], what: str) -> list[tuple[str, int]]:
    """At most :data:`BOXES_DRAWN` boxes; the rest summed into the last one."""
    listed = list(items)
    if len(listed) <= BOXES_DRAWN:
        return listed
    kept, rest = listed[: BOXES_DRAWN - 1], listed[BOXES_DRAWN - 1 :]
    return [*kept, (f"{len(rest)} more {what}", sum(n for _, n in rest))]


def _draw(
    boxes: list[tuple[str, int]], x: int, kind: str, box_h: int, marks: Mapping[int, str]
) -> list[str]:
    """The boxes; one holding an error's node is outlined red, the node named under its label."""
    out = []
    for i, (label, count) in enumerate(boxes):
        y = _top(i, box_h)
        css = f"{kind} failing" if i in marks else kind
        out.append(
            f'<rect class="{css}" x="{x}" y="{y:.0f}" width="{_BOX_W}" height="{box_h}" rx="4"/>'
        )
        text = f"{_clip(label)} ({_nodes(count)})"
        if i not in marks:
            out.append(_text(x + 8, y + box_h / 2 + 4, text))
            continue
        out.append(_text(x + 8, y + box_h / 2 - 4, text))
        out.append(_text(x + 8, y + box_h / 2 + 14, marks[i], css="failing-label"))
    return out


def _failing(
    summary: GraphSummary, host_row: Mapping[str, int], geop_row: Mapping[str, int]
) -> tuple[dict[int, str], dict[int, str]]:
    """The host and GeOp boxes holding an error's node: row -> ``✖ node: code`` (the user's
    op for a pass-made node; ``(+N)`` more errors in the same box)."""
    found: tuple[dict[int, list[str]], dict[int, list[str]]] = ({}, {})
    for d in summary.errors:
        where = summary.diagnostic_sides.get(d.node, "")
        name = ", ".join(summary.user_names.get(d.node, ())) or d.node
        if where in geop_row:
            found[1].setdefault(geop_row[where], []).append(f"{name}: {d.code}")
        elif where in host_row:
            found[0].setdefault(host_row[where], []).append(f"{name}: {d.code}")
    host, device = ({row: _mark(texts) for row, texts in side.items()} for side in found)
    return host, device


def _mark(texts: Sequence[str]) -> str:
    more = f" (+{len(texts) - 1})" if len(texts) > 1 else ""
    return f"✖ {_clip(texts[0], 36 - len(more))}{more}"


def _nodes(count: int) -> str:
    return _count(count, "node")


def _count(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def _text(x: float, y: float, text: str, *, anchor: str = "start", css: str = "label") -> str:
    end = ' text-anchor="end"' if anchor == "end" else ""
    return f'<text class="{css}" x="{x:.0f}" y="{y:.0f}"{end}>{escape(text)}</text>'


def _clip(label: str, width: int = 30) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"

"""The one look of tf2npu's HTML reports: style sheet, tables, page frame (TF-free).

``tf2npu graph inspect --html`` and ``tf2npu profile`` render through this module, so both pages
look alike: errors and advice first, then tables, charts as inline SVG. Nothing is fetched: the
CSS and any script are inline, so a page opens anywhere and can be mailed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

__all__ = ["CSS", "NUMBER", "ROWS_SHOWN", "Html", "breakable", "cell", "document", "table"]

ROWS_SHOWN = 2000
"""Rows per table; the full data is in the report's files."""

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; }
svg { max-width: 100%; height: auto; }
th { background: #f3f3f3; } td.n { text-align: right; }
.device { fill: #e8f5e9; stroke: #2e7d32; } .host { fill: #fff3e0; stroke: #ef6c00; }
.edge { stroke: #555; stroke-width: 1.5; fill: none; }
.label { font: 12px system-ui, sans-serif; }
.error { color: #b71c1c; } .warning { color: #8d6e00; } .note { color: #666; }
.info { color: #1565c0; }
.bar-device { fill: #66bb6a; } .bar-host { fill: #ffa726; } .bar-copy { fill: #90a4ae; }
.bar-input { fill: #ef5350; } .bar-fpbp { fill: #42a5f5; } .bar-refresh { fill: #ab47bc; }
.bar-other { fill: #e0e0e0; stroke: #9e9e9e; stroke-width: 0.5; }
th, td { overflow-wrap: normal; word-break: normal; } td.n { white-space: nowrap; }
table.wide th, table.wide td { font-size: 12px; padding: 2px 5px; }
a { color: #1565c0; } :target { background: #fff59d; }
.bar-step { fill: #cfd8dc; } .lane { stroke: #eee; }
.step { stroke: #d32f2f; stroke-dasharray: 4 3; } #tl-plot { cursor: grab; }
details.name summary { cursor: pointer; } details.name code { font-size: 12px; color: #555; }
.failing { stroke: #b71c1c; stroke-width: 3; }
.failing-label { font: bold 12px system-ui, sans-serif; fill: #b71c1c; }
table.names th, table.names td { overflow-wrap: normal; }
table.names .num { white-space: nowrap; }
tr.first td { background: #ffebee; } tr.fail td:nth-child(1) { color: #b71c1c; }
.chart { display: block; margin: 8px 0; }
.side { display: flex; flex-wrap: wrap; gap: 16px; } .side > div { flex: 1 1 440px; min-width: 0; }
"""
"""Cells wrap at spaces and at the ``<wbr>`` :func:`breakable` puts after name separators,
never inside a word or a number (``overflow-wrap: anywhere`` broke "warning" and "1,234")."""

LONG_WORD = 16
"""A word longer than this may break before each capital of its CamelCase
(``Resource<wbr>Apply<wbr>Adam``)."""
LONG_PART = 24
"""A part between scope separators longer than this may break after its underscores too."""
_WORD = re.compile(r"\S+")
NUMBER = re.compile(r"[-+]?(\d[\d,]*\.?\d*|\.\d+)(e[-+]?\d+)?%?|[-+]?inf|nan", re.I)
"""A number as the pages print one (``1,234.5``, ``-1e-05``, ``12%``, ``nan``): never broken."""
_SCOPES = re.compile(r"(?<=[/.:,])|(?<=->)")
_UNDERSCORES = re.compile(r"(?<=_)")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


class Html(str):
    """A cell's content already in HTML (a link, a marked name): :func:`cell` keeps it as is."""

    __slots__ = ()


def breakable(text: str) -> str:
    """``text`` escaped, with line-break opportunities (``<wbr>``) only between the parts of
    names: after each ``/ . : , ->`` (not before a last part of one or two characters, so
    ``loss:0`` stays whole), after the underscores of a part longer than :data:`LONG_PART`,
    and inside the CamelCase of a word longer than :data:`LONG_WORD`. A number is never broken.

    >>> breakable("tower_0/dense/MatMul")
    'tower_0/<wbr>dense/<wbr>MatMul'
    >>> breakable("sparse_softmax_cross_entropy <x> 1,234.5")
    'sparse_<wbr>softmax_<wbr>cross_<wbr>entropy &lt;x&gt; 1,234.5'
    >>> breakable("SparseSoftmaxCrossEntropyWithLogits")
    'Sparse<wbr>Softmax<wbr>Cross<wbr>Entropy<wbr>With<wbr>Logits'
    >>> breakable("IteratorGetNext:output:0 gradients/BiasAdd_grad/BiasAddGrad")
    'IteratorGetNext:<wbr>output:0 gradients/<wbr>BiasAdd_grad/<wbr>BiasAddGrad'
    """
    return _WORD.sub(lambda m: _word(m.group(0)), text)


def _word(word: str) -> str:
    if NUMBER.fullmatch(word):
        return escape(word)
    out = ""
    for number, part in enumerate(_SCOPES.split(word)):
        if not part:
            continue
        pieces = _UNDERSCORES.split(part) if len(part) > LONG_PART else [part]
        if number and len(part) > 2:
            out += "<wbr>"
        out += "<wbr>".join(_camel(piece) for piece in pieces)
    return out


def _camel(word: str) -> str:
    if len(word) <= LONG_WORD:
        return escape(word)
    return "<wbr>".join(escape(w) for w in _CAMEL.split(word))


def cell(value: object) -> str:
    """One ``<td>``: numbers right-aligned with thousands separators, text escaped (wrapping
    only at name separators, :func:`breakable`), :class:`Html` as it is."""
    if isinstance(value, Html):
        return f"<td>{value}</td>"
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, int):
        return f'<td class="n">{value:,}</td>'
    if isinstance(value, float):
        return f'<td class="n">{value:,.1f}</td>'
    return f"<td>{breakable(str(value))}</td>"


def table(
    header: Sequence[str], rows: Sequence[Sequence[object]], *, raw_first: bool = False
) -> str:
    """A table, at most :data:`ROWS_SHOWN` rows; ``raw_first``: the first cell is HTML already."""
    if not rows:
        return '<p class="note">none</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "\n".join(
        "<tr>" + "".join(
            f"<td>{v}</td>" if raw_first and i == 0 else cell(v) for i, v in enumerate(row)
        ) + "</tr>"
        for row in rows[:ROWS_SHOWN]
    )  # fmt: skip
    more = ""
    if len(rows) > ROWS_SHOWN:
        more = f'<p class="note">{len(rows) - ROWS_SHOWN:,} more rows not shown.</p>'
    return f"<table><tr>{head}</tr>\n{body}</table>{more}"


def document(title: str, parts: Sequence[str], *, script: str = "") -> str:
    """The whole page: ``parts`` (HTML) under an ``<h1>`` of ``title``, inline style/script."""
    tail = f"<script>{script}</script>" if script else ""
    return (
        "\n".join(
            [
                "<!DOCTYPE html>",
                '<html lang="en"><head><meta charset="utf-8">',
                f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
                f"<h1>{escape(title)}</h1>",
                *parts,
                f"{tail}</body></html>",
            ]
        )
        + "\n"
    )

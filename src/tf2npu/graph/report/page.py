"""The one look of tf2npu's HTML reports: style sheet, tables, page frame (TF-free).

``tf2npu graph inspect --html`` and ``tf2npu profile`` render through this module, so both pages
look alike: errors and advice first, then tables, charts as inline SVG. Nothing is fetched: the
CSS and any script are inline, so a page opens anywhere and can be mailed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

__all__ = ["CSS", "ROWS_SHOWN", "Html", "breakable", "cell", "document", "table"]

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
"""
"""Cells wrap at spaces and at the ``<wbr>`` :func:`breakable` puts after name separators,
never inside a word or a number (``overflow-wrap: anywhere`` broke "warning" and "1,234")."""

LONG_WORD = 14
"""A word (or part between ``/``) longer than this may also wrap after ``_``, ``.`` and ``->``, and
between the words of a CamelCase name."""
_SLASH = re.compile(r"(?<=/)")
_WORD = re.compile(r"\S+")
_INNER = re.compile(r"(?<=[_.>])(?=[^_.>])|(?<=[a-z])(?=[A-Z])")


class Html(str):
    """A cell's content already in HTML (a link, a marked name): :func:`cell` keeps it as is."""

    __slots__ = ()


def breakable(text: str) -> str:
    """``text`` escaped, with a line-break opportunity (``<wbr>``) after each ``/``, and after
    ``_``, ``.`` or ``->`` or before a CamelCase capital inside a long word (or part between ``/``):
    names wrap at their separators only.

    >>> breakable("tower_0/dense/MatMul")
    'tower_0/<wbr>dense/<wbr>MatMul'
    >>> breakable("sparse_softmax_cross_entropy <x> 1,234.5")
    'sparse_<wbr>softmax_<wbr>cross_<wbr>entropy &lt;x&gt; 1,234.5'
    >>> breakable("SparseSoftmaxCrossEntropyWithLogits")
    'Sparse<wbr>Softmax<wbr>Cross<wbr>Entropy<wbr>With<wbr>Logits'
    """
    return _WORD.sub(lambda m: _word(m.group(0)), text)


def _word(word: str) -> str:
    pieces = []
    for piece in _SLASH.split(word):
        pieces += _INNER.split(piece) if len(piece) > LONG_WORD else [piece]
    return "<wbr>".join(escape(p) for p in pieces if p)


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

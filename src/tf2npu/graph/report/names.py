"""Tables of long op, tensor and variable names that break only between name parts (TF-free).

A :func:`name_table` breaks nowhere inside a word or number: its name columns offer the line
breaks of :func:`tf2npu.graph.report.page.breakable` (between name parts, where a reader splits
``tower_0/attention/self/key/bias`` too); a cell of numbers breaks only between them; the
page's CSS (``table.names``) keeps every other cell whole.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from html import escape

from tf2npu.graph.report.page import NUMBER, ROWS_SHOWN, breakable, cell

__all__ = ["breakable", "name_table"]

_SIGNS = frozenset({"<", "<=", ">", ">=", "=", "vs"})


def _cell(value: object, name: bool) -> str:
    """A name cell breaks between its parts; a cell of numbers (``0.465 > 0.01``) breaks
    only between them, never inside one (an exponent's ``-``); any other is the house cell."""
    if name:
        return f"<td>{breakable(str(value))}</td>"
    words = value.split(" ") if isinstance(value, str) and value else []
    if words and all(NUMBER.fullmatch(w) or w in _SIGNS for w in words):
        numbers = " ".join(f'<span class="num">{escape(w)}</span>' for w in words)
        return f'<td class="n">{numbers}</td>'
    return cell(value)


def name_table(
    header: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    names: Collection[int] = (0,),
    row_class: Sequence[str] = (),
) -> str:
    """A table in the house look whose columns ``names`` (indices) hold names; ``row_class``
    gives each row a CSS class (``""``: none). At most :data:`ROWS_SHOWN` rows."""
    if not rows:
        return '<p class="note">none</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for number, row in enumerate(rows[:ROWS_SHOWN]):
        css = row_class[number] if number < len(row_class) else ""
        cells = "".join(_cell(value, i in names) for i, value in enumerate(row))
        body.append(f'<tr class="{css}">{cells}</tr>' if css else f"<tr>{cells}</tr>")
    more = ""
    if len(rows) > ROWS_SHOWN:
        more = f'<p class="note">{len(rows) - ROWS_SHOWN:,} more rows not shown.</p>'
    return f'<table class="names"><tr>{head}</tr>\n' + "\n".join(body) + f"</table>{more}"

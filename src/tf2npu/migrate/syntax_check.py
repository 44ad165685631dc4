"""Checking that a rewrite still parses, by parsing only the top-level statements it touched.

The engine refuses a rewrite that would not parse (the file is copied unchanged and reported).
Compiling the whole rewritten file for that is a tenth of `tf2npu migrate`'s CPU time on real
repositories, while a file's edits usually sit in a few of its top-level statements (a third
of the corpus's text).

Why a part can stand for the whole: between two top-level statements that start on different
lines, the tokenizer is in its initial state (at a line start, no bracket open, indentation
level 0, no string or continuation pending). A module is a sequence of statements, so a text
cut at such points parses exactly when every piece parses on its own. The original text parsed,
so its untouched pieces still do; only the pieces holding an edit need parsing, each with the
edits inside it applied. Edits never cross a cut: a piece is widened to the next cut past its
last edit, so that it still ends with the original's line break (an edit that took that line
break away would join two statements in the file but not in the piece). A line continued by
a backslash is no cut.

No statement changes how the others parse: ``from __future__ import barry_as_FLUFL``, the one
future import that touches the grammar, takes effect on later compilations only (interactive
input), never within the text that holds it.
"""

from __future__ import annotations

import ast
import bisect
import warnings
from collections.abc import Sequence

from tf2npu.migrate.edits import Edit, apply_edits
from tf2npu.migrate.source import SourceFile


def cut_points(tree: ast.Module, source: SourceFile) -> list[int]:
    """Offsets where the text can be cut into pieces that parse on their own.

    The start of the text, the start of the first line of every top-level statement that does
    not share a line with the statement before it (decorators belong to their ``def``) and
    does not follow a line ending in a backslash (``x = 1; \\`` continues onto the next
    line; a comment ending in one only costs a cut), and the end of the text, in increasing
    order.
    """
    cuts = [0]
    previous_end = 0
    for stmt in tree.body:
        first = stmt.lineno
        for deco in getattr(stmt, "decorator_list", ()):
            first = min(first, deco.lineno)
        at = source.line_start(first)
        joined = first > 1 and source.line_text(first - 1).endswith("\\")
        if first > previous_end and at > cuts[-1] and not joined:
            cuts.append(at)
        previous_end = stmt.end_lineno or stmt.lineno
    if cuts[-1] < len(source.text):
        cuts.append(len(source.text))
    return cuts


def touched_pieces(cuts: Sequence[int], edits: Sequence[Edit]) -> list[tuple[int, int]]:
    """The ``(start, end)`` pieces between ``cuts`` that hold an edit, merged where they touch.

    An edit from ``s`` to ``e`` lies in the piece from the last cut at or before ``s`` to the
    first cut after ``e``: a piece ends with a line break of the original text, so an edit
    that removes the line break before a cut (and joins the next statement's first line to
    its own) has that statement in its piece. An insertion at the end of the text goes with
    the statement before it.
    """
    pieces: list[tuple[int, int]] = []
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        # The end of the text is no place to start: it may be the middle of a line.
        start = cuts[max(min(bisect.bisect_right(cuts, edit.start) - 1, len(cuts) - 2), 0)]
        end = cuts[min(bisect.bisect_right(cuts, edit.end), len(cuts) - 1)]
        if pieces and start <= pieces[-1][1]:
            pieces[-1] = (pieces[-1][0], max(pieces[-1][1], end))
        else:
            pieces.append((start, end))
    return pieces


def rewritten_pieces(
    text: str, tree: ast.Module, source: SourceFile, edits: Sequence[Edit]
) -> list[str]:
    """The new text of every touched piece of ``text`` (``source.text``), edits applied."""
    pieces = touched_pieces(cut_points(tree, source), edits)
    out = []
    for start, end in pieces:
        inner = [
            Edit(e.start - start, e.end - start, e.new)
            for e in edits
            if start <= e.start and e.end <= end
        ]
        out.append(apply_edits(text[start:end], inner))
    return out


def check_rewrite(
    source: SourceFile, tree: ast.Module, edits: Sequence[Edit], rewritten: str, path: str
) -> None:
    """Raise ``SyntaxError`` if ``rewritten`` (``source`` with ``edits`` applied) does not parse.

    ``tree`` is ``source``'s syntax tree. Each touched piece is compiled to bytecode, which
    builds no syntax tree and so takes half the time of ``ast.parse``; only when a piece fails
    to compile (the compiler also rejects code the parser accepts, e.g. ``return`` outside a
    function) does the whole rewritten file go to :func:`check_parses`, which decides and
    gives the error its line in the file.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for piece in rewritten_pieces(source.text, tree, source, edits):
                compile(piece, path, "exec", dont_inherit=True)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        check_parses(rewritten, path)


def check_parses(text: str, path: str) -> None:
    """Raise ``SyntaxError`` if ``text`` does not parse, without building its syntax tree.

    Compiling to bytecode skips making the tree's Python objects, and takes half the time of
    ``ast.parse`` on real files. What compiles parses; only when compiling fails (the compiler
    rejects more than the parser: ``return`` outside a function, a too deep nesting) does the
    parser decide. Its warnings (``"is" with a literal``) are not the migration's to print.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, RecursionError, MemoryError):
        ast.parse(text, filename=path)

"""The rewrite check: only the touched top-level statements are parsed, with the same verdict."""

from __future__ import annotations

import ast
import warnings

import pytest

from tf2npu.migrate.edits import Edit, apply_edits
from tf2npu.migrate.source import SourceFile
from tf2npu.migrate.syntax_check import (
    check_parses,
    check_rewrite,
    cut_points,
    rewritten_pieces,
    touched_pieces,
)

MODULE = (
    '"""Doc."""\n'  # 0
    "import os\n"  # 11
    "\n"  # 21
    "# a comment\n"  # 22
    "@deco\n"  # 34
    "def f(a,\n"  # 40
    "      b):\n"  # 49
    "    return (a +\n"  # 59
    "            b)\n"  # 75
    "x = 1; y = 2\n"  # 90
    "z = 3\n"  # 103
)  # 109 characters


def _source(text: str) -> tuple[SourceFile, ast.Module]:
    return SourceFile.decode(text.encode()), ast.parse(text)


def test_cuts_are_the_first_lines_of_top_level_statements_decorators_included() -> None:
    source, tree = _source(MODULE)
    # y = 2 shares its line with x = 1: no cut before it; the comment goes with the def.
    assert cut_points(tree, source) == [0, 11, 34, 90, 103, 109]


def test_a_file_with_nothing_but_a_comment_has_one_piece() -> None:
    source, tree = _source("# only\n")
    assert cut_points(tree, source) == [0, 7]


@pytest.mark.parametrize(
    ("edits", "pieces"),
    [
        ([Edit(65, 66, "a")], [(34, 90)]),  # inside the def: the def, its decorator
        ([Edit(11, 11, "import sys\n")], [(11, 34)]),  # an insertion at a cut: what follows
        ([Edit(109, 109, "w = 4\n")], [(103, 109)]),  # at the end: the last statement
        ([Edit(94, 95, "2"), Edit(97, 98, "q")], [(90, 103)]),  # two on one piece: once
        ([Edit(20, 40, "")], [(11, 90)]),  # across a cut: both pieces
        ([Edit(11, 11, "import sys\n"), Edit(35, 39, "d")], [(11, 90)]),  # adjacent: merged
        ([Edit(0, 3, "'''"), Edit(103, 104, "w")], [(0, 11), (103, 109)]),
    ],
)
def test_the_touched_pieces_reach_from_cut_to_cut(
    edits: list[Edit], pieces: list[tuple[int, int]]
) -> None:
    source, tree = _source(MODULE)
    assert touched_pieces(cut_points(tree, source), edits) == pieces


def test_a_piece_is_rewritten_with_the_edits_inside_it() -> None:
    source, tree = _source(MODULE)
    edits = [Edit(11, 11, "import sys\n"), Edit(103, 104, "w")]
    assert rewritten_pieces(MODULE, tree, source, edits) == [
        "import sys\nimport os\n\n# a comment\n",
        "w = 3\n",
    ]


def _verdict(text: str, edits: list[Edit]) -> tuple[bool, bool]:
    """(whole-file check passes, piece check passes) for ``edits`` on ``text``."""
    source, tree = _source(text)
    rewritten = apply_edits(text, edits)
    results = []
    for check in (
        lambda: check_parses(rewritten, "f.py"),
        lambda: check_rewrite(source, tree, edits, rewritten, "f.py"),
    ):
        try:
            check()
            results.append(True)
        except SyntaxError:
            results.append(False)
    return results[0], results[1]


@pytest.mark.parametrize(
    ("edits", "parses"),
    [
        ([Edit(65, 66, "a")], True),
        ([Edit(65, 66, "(a")], False),  # an unclosed bracket inside the def
        ([Edit(109, 109, "w = (\n")], False),  # an unclosed bracket at the very end
        ([Edit(103, 103, "  ")], False),  # an unexpected indent
        ([Edit(88, 89, ")\n    else:")], False),  # `else` with no `if`
        ([Edit(109, 109, "def g():\n    return 1\n")], True),
        ([Edit(11, 11, "return 0\n")], True),  # the compiler rejects it, the parser does not
        ([Edit(90, 90, "\\\n")], True),  # a continuation line joining an empty line
        ([Edit(102, 103, "\\")], False),  # a continuation into the next statement
    ],
)
def test_the_piece_check_gives_the_whole_file_s_verdict(edits: list[Edit], parses: bool) -> None:
    assert _verdict(MODULE, edits) == (parses, parses)


def test_an_insertion_at_the_end_of_a_file_without_a_final_newline_joins_its_last_line() -> None:
    assert _verdict("x = 1", [Edit(5, 5, "y = 2")]) == (False, False)  # x = 1y = 2
    assert _verdict("x = 1", [Edit(5, 5, "\ny = 2")]) == (True, True)


def test_a_line_continued_by_a_backslash_is_no_cut() -> None:
    # `y = 2` is on the logical line of `x = 1; \`: a compound statement cannot start there.
    text = "x = 1; \\\ny = 2\n# a comment \\\nz = 3\n"
    source, tree = _source(text)
    # z = 3 follows a comment ending in a backslash: no continuation, but no cut either.
    assert cut_points(tree, source) == [0, 35]
    assert _verdict(text, [Edit(9, 9, "if a:\n    pass\n")]) == (False, False)
    assert _verdict(text, [Edit(9, 10, "w")]) == (True, True)


def test_an_edit_that_removes_a_piece_s_last_line_break_joins_the_next_statement() -> None:
    text = "x = 1\ny = 2\nz = 3\n"
    source, tree = _source(text)
    assert touched_pieces(cut_points(tree, source), [Edit(5, 6, "")]) == [(0, 12)]
    assert _verdict(text, [Edit(5, 6, "")]) == (False, False)  # x = 1y = 2
    assert _verdict(text, [Edit(5, 6, ";")]) == (True, True)  # x = 1;y = 2


def test_a_failing_piece_reports_the_error_at_its_line_in_the_file() -> None:
    source, tree = _source(MODULE)
    edits = [Edit(103, 108, "w = (3")]
    with pytest.raises(SyntaxError) as caught:
        check_rewrite(source, tree, edits, apply_edits(MODULE, edits), "f.py")
    assert caught.value.lineno == 11
    assert "never closed" in caught.value.msg


@pytest.mark.parametrize(("new", "parses"), [("1 != 2", True), ("1 <> 2", False)])
def test_the_grammar_future_does_not_change_the_verdict(new: str, parses: bool) -> None:
    # barry_as_FLUFL would make `<>` the spelling of `!=`, but not in the text that imports it.
    text = "from __future__ import barry_as_FLUFL\nx = 1\n"
    assert _verdict(text, [Edit(42, 43, new)]) == (parses, parses)


@pytest.mark.parametrize(
    "text",
    [
        "x = 1\n",
        "return 1\n",  # the compiler rejects it, the parser does not: a rewrite may keep it
        "def f():\n    nonlocal x\n",
        "if x is 1:\n    pass\n",  # a SyntaxWarning when compiled: not printed
    ],
)
def test_a_rewrite_that_parses_passes_the_check(text: str) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        check_parses(text, "f.py")
        source, tree = _source("pass\n")
        check_rewrite(source, tree, [Edit(0, 5, text)], text, "f.py")
    assert seen == []


def test_a_rewrite_that_does_not_parse_fails_the_check_with_the_parser_s_error() -> None:
    with pytest.raises(SyntaxError) as caught:
        check_parses("x = (1,\n", "f.py")
    assert caught.value.lineno == 1
    assert "never closed" in caught.value.msg

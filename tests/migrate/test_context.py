"""The rule context: its outputs and every edit builder, checked on the exact resulting text."""

from __future__ import annotations

import ast
from collections.abc import Callable

import pytest

from tf2npu.migrate.context import NPU_INIT_IMPORT, FileContext
from tf2npu.migrate.edits import Edit, apply_edits
from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.model import Finding, Severity
from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.source import SourceFile

EditResult = Edit | list[Edit] | list[Edit | None] | None


def make_ctx(src: str) -> FileContext:
    source = SourceFile.decode(src.encode("utf-8"))
    tree = ast.parse(source.text)
    return FileContext("t.py", source, tree, ModuleIndex.build(tree), MigrateOptions())


def first_call(ctx: FileContext) -> ast.Call:
    found = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call)]
    found.sort(key=lambda c: (c.lineno, c.col_offset))
    return found[0]


def statements(ctx: FileContext) -> list[ast.stmt]:
    found = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.stmt)]
    found.sort(key=lambda s: (s.lineno, s.col_offset))
    return found


def edited(ctx: FileContext, result: EditResult) -> str | None:
    if result is None:
        return None
    edits = result if isinstance(result, list) else [result]
    assert all(e is not None for e in edits)
    return apply_edits(ctx.text, [e for e in edits if e is not None])


def on_call(src: str, build: Callable[[FileContext, ast.Call], EditResult]) -> str | None:
    ctx = make_ctx(src)
    out = edited(ctx, build(ctx, first_call(ctx)))
    if out is not None:
        ast.parse(out)  # every builder result must stay valid Python
    return out


def on_stmt(
    src: str, index: int, build: Callable[[FileContext, ast.stmt], EditResult]
) -> str | None:
    ctx = make_ctx(src)
    out = edited(ctx, build(ctx, statements(ctx)[index]))
    if out is not None:
        ast.parse(out)
    return out


# -- outputs ------------------------------------------------------------------------------------
def test_patch_records_subject_span_and_position() -> None:
    ctx = make_ctx("x = 1\ny = f(a)\n")
    call = first_call(ctx)
    assert ctx.patch("r", call, [ctx.add_keyword(call, "k", "1")])
    [patch] = ctx.patches
    assert patch.rule == "r"
    assert patch.subject == (10, 14)
    assert (patch.line, patch.col) == (2, 5)
    assert patch.edits == (Edit(13, 13, ", k=1"),)


def test_patch_subject_grows_to_cover_its_edits() -> None:
    ctx = make_ctx("x = 1\ny = f(a)\n")
    call = first_call(ctx)
    assert ctx.patch("r", call, [Edit(0, 0, "import z\n"), ctx.replace(call.args[0], "b")])
    assert ctx.patches[0].subject == (0, 14)


def test_patch_with_a_none_edit_records_nothing() -> None:
    ctx = make_ctx("f(x for x in y)\n")
    call = first_call(ctx)
    assert not ctx.patch("r", call, [ctx.replace(call.func, "g"), ctx.add_keyword(call, "k", "1")])
    assert not ctx.patch("r", call, [])
    assert ctx.patches == []


def test_finding_positions_are_one_based() -> None:
    ctx = make_ctx("x = 1\ny = f(a)\n")
    call = first_call(ctx)
    ctx.finding("r", call, Severity.WARNING, "message", "fix")
    ctx.finding("r", None, Severity.INFO, "file level")
    assert ctx.findings == [
        Finding("t.py", 2, 5, "r", Severity.WARNING, "message", "fix"),
        Finding("t.py", 1, 1, "r", Severity.INFO, "file level", ""),
    ]


def test_need_import_once_in_first_requested_order() -> None:
    ctx = make_ctx("x = 1\n")
    ctx.need_import("import a")
    ctx.need_import()
    ctx.need_import("import a")
    ctx.need_import()
    assert ctx.imports == ["import a", NPU_INIT_IMPORT]


def test_need_helper_keeps_the_first_definition_and_needs_the_import() -> None:
    ctx = make_ctx("x = 1\n")
    ctx.need_helper("h", ["def h():", "    return 1"])
    ctx.need_helper("h", ["def h():", "    return 2"])
    assert ctx.helpers == {"h": ["def h():", "    return 1"]}
    assert ctx.imports == [NPU_INIT_IMPORT]


def test_reading_helpers() -> None:
    ctx = make_ctx("y = f(a)\n")
    call = first_call(ctx)
    assert ctx.text == "y = f(a)\n"
    assert ctx.segment(call) == "f(a)"
    assert ctx.span(call) == (4, 8)
    assert ctx.kinds is ctx.kinds


# -- add_keyword --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("f()\n", "f(k=1)\n"),
        ("f(a, b)\n", "f(a, b, k=1)\n"),
        ("f(a, b=2)\n", "f(a, b=2, k=1)\n"),
        ("f(a, b,)\n", "f(a, b, k=1,)\n"),
        ("f(*args, **kwargs)\n", "f(*args, **kwargs, k=1)\n"),
        ("f(\n    a,\n    b,\n)\n", "f(\n    a,\n    b,\n    k=1,\n)\n"),
        (
            "f(\n        a,\n        b,\n    )\n",
            "f(\n        a,\n        b,\n        k=1,\n    )\n",
        ),
        ("f(\n    a,\n    b\n)\n", "f(\n    a,\n    b, k=1\n)\n"),
        ("f(\n    a,\n    b)\n", "f(\n    a,\n    b, k=1)\n"),
        ("f(a,\n  b)\n", "f(a,\n  b, k=1)\n"),
        ("f(\n    a, b,\n)\n", "f(\n    a, b, k=1,\n)\n"),
        ("f(\n    a,\n    b,)\n", "f(\n    a,\n    b, k=1,)\n"),
        ("f(\n    a,  # first\n    b  # last\n)\n", "f(\n    a,  # first\n    b, k=1  # last\n)\n"),
        ("f(\n    a,\n    b,  # last\n)\n", "f(\n    a,\n    b, k=1,  # last\n)\n"),
        ("f(\n    a,\n    # trailing note\n)\n", "f(\n    a,\n    k=1,\n    # trailing note\n)\n"),
        ("f(\n    a,\n    g(\n        x),\n)\n", "f(\n    a,\n    g(\n        x),\n    k=1,\n)\n"),
        ("f(\n\ta,\n)\n", "f(\n\ta,\n\tk=1,\n)\n"),
        ("f(\n)\n", "f(k=1\n)\n"),
        ("f (  # c\n  )\n", "f (k=1  # c\n  )\n"),
        ("(f)(a)\n", "(f)(a, k=1)\n"),
        ("f(a)(b)\n", "f(a)(b, k=1)\n"),
        ("x = f('é', 'ü')\n", "x = f('é', 'ü', k=1)\n"),
    ],
)
def test_add_keyword(src: str, expected: str) -> None:
    assert on_call(src, lambda c, call: c.add_keyword(call, "k", "1")) == expected


@pytest.mark.parametrize("src", ["f(x for x in y)\n", "f((x for x in y))\n"])
def test_add_keyword_to_a_sole_generator_argument_is_refused(src: str) -> None:
    # ``f(x for x in y, k=1)`` is a syntax error; the parenthesised form looks the same in the ast.
    assert on_call(src, lambda c, call: c.add_keyword(call, "k", "1")) is None


def test_add_keyword_multiline_in_a_crlf_file_uses_crlf() -> None:
    src = "f(\r\n    a,\r\n    b,\r\n)\r\n"
    assert on_call(src, lambda c, call: c.add_keyword(call, "k", "1")) == (
        "f(\r\n    a,\r\n    b,\r\n    k=1,\r\n)\r\n"
    )


def test_add_keyword_at_the_end_of_a_file_without_newline() -> None:
    assert on_call("f(\n    a,\n)", lambda c, call: c.add_keyword(call, "k", "1")) == (
        "f(\n    a,\n    k=1,\n)"
    )


# -- set_keyword --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("f(k=2)\n", "f(k=3)\n"),
        ("f(a, k=g(\n    2))\n", "f(a, k=3)\n"),
        ("f(a)\n", "f(a, k=3)\n"),
        ("f(\n    a,\n)\n", "f(\n    a,\n    k=3,\n)\n"),
    ],
)
def test_set_keyword(src: str, expected: str) -> None:
    assert on_call(src, lambda c, call: c.set_keyword(call, "k", "3")) == expected


# -- remove_argument ----------------------------------------------------------------------------
def _remove(position: int) -> Callable[[FileContext, ast.Call], EditResult]:
    return lambda c, call: c.remove_argument(call, c.arguments(call)[position])


@pytest.mark.parametrize(
    ("src", "position", "expected"),
    [
        ("f(a, b, c)\n", 0, "f(b, c)\n"),
        ("f(a, b, c)\n", 1, "f(a, c)\n"),
        ("f(a, b, c)\n", 2, "f(a, b)\n"),
        ("f(a)\n", 0, "f()\n"),
        ("f( a )\n", 0, "f()\n"),
        ("f(k=1)\n", 0, "f()\n"),
        ("f(a,)\n", 0, "f()\n"),
        ("f(a, b,)\n", 1, "f(a,)\n"),
        ("f(a, k=1, b=2)\n", 1, "f(a, b=2)\n"),
        ("f(x=1,\n  y=2)\n", 0, "f(y=2)\n"),
        ("f(a,\n  b)\n", 1, "f(a)\n"),
        ("f(\n    a\n)\n", 0, "f()\n"),
        ("f(\n    a,\n    b,\n)\n", 0, "f(\n    b,\n)\n"),
        ("f(\n    a,\n    b,\n    c,\n)\n", 1, "f(\n    a,\n    c,\n)\n"),
        ("f(\n    a,\n    b\n)\n", 1, "f(\n    a,\n)\n"),
        ("f(\n    a,\n    b)\n", 1, "f(\n    a)\n"),
        ("f(\n    a,\n    b, c,\n)\n", 1, "f(\n    a, c,\n)\n"),
        ("f(\n    a, b,\n    c,\n)\n", 2, "f(\n    a, b,\n)\n"),
        ("f(\n    a,\n    g(\n        x),\n    c,\n)\n", 1, "f(\n    a,\n    c,\n)\n"),
        ("f(\n    a\n    , b\n)\n", 0, "f(\n    b\n)\n"),
        ("f(\r\n    a,\r\n    b,\r\n)\r\n", 1, "f(\r\n    a,\r\n)\r\n"),
    ],
)
def test_remove_argument(src: str, position: int, expected: str) -> None:
    assert on_call(src, _remove(position)) == expected


def test_remove_own_line_argument_keeps_comments_on_other_lines() -> None:
    src = "f(\n    a,\n    # about b\n    b,\n    c,  # about c\n)\n"
    assert on_call(src, _remove(1)) == "f(\n    a,\n    # about b\n    c,  # about c\n)\n"


@pytest.mark.parametrize(
    ("src", "position", "expected"),
    [
        ("f(\n    a,\n    b,  # about b\n    c,\n)\n", 1, "f(\n    a,\n    # about b\n    c,\n)\n"),
        ("f(\n    a,  # keep\n    b,\n)\n", 0, "f(\n    # keep\n    b,\n)\n"),
        ("f(\n    a,\n    b,  # last\n)\n", 1, "f(\n    a,\n    # last\n)\n"),
        (
            "f(\n    a,\n    g(\n        x),  # gx\n    c,\n)\n",
            1,
            "f(\n    a,\n    # gx\n    c,\n)\n",
        ),
        ("f(\n    a,\n    b  # about b\n)\n", 1, "f(\n    a  # about b\n)\n"),
    ],
)
def test_remove_argument_with_a_comment_on_its_line_keeps_the_comment(
    src: str, position: int, expected: str
) -> None:
    assert on_call(src, _remove(position)) == expected


def test_remove_the_only_argument_of_an_unopenable_call() -> None:
    # ``open_paren`` cannot fail on parsed code; the guard returns None rather than guessing.
    ctx = make_ctx("f(a)\n")
    call = first_call(ctx)
    ctx.source.text = "f a)\n"
    assert ctx.remove_argument(call, call.args[0]) is None


# -- keywordize, wrap, replace, insert_before ----------------------------------------------------
@pytest.mark.parametrize(
    ("src", "first", "expected"),
    [
        ("f(a, b, c)\n", 0, "f(x=a, y=b, z=c)\n"),
        ("f(a, b, c)\n", 1, "f(a, y=b, z=c)\n"),
        ("f(a, b, k=1)\n", 0, "f(x=a, y=b, k=1)\n"),
        ("f(a, *b, c)\n", 0, "f(a, *b, c)\n"),
        ("f(a, b, *c)\n", 0, "f(a, b, *c)\n"),
        ("f(*a, b)\n", 0, "f(*a, b)\n"),
        ("f(k=1)\n", 0, "f(k=1)\n"),
        ("f(\n    a,  # first\n    b,\n)\n", 0, "f(\n    x=a,  # first\n    y=b,\n)\n"),
    ],
)
def test_keywordize(src: str, first: int, expected: str) -> None:
    assert on_call(src, lambda c, call: c.keywordize(call, ("x", "y", "z"), first)) == expected


def test_wrap() -> None:
    assert on_call("f(a + b)\n", lambda c, call: c.wrap(call.args[0], "g(", ")")) == "f(g(a + b))\n"
    assert on_call("f((a))\n", lambda c, call: c.wrap(call.args[0], "g(", ")")) == "f((g(a)))\n"
    assert (
        on_call("f(\n    a,  # keep\n)\n", lambda c, call: c.wrap(call.args[0], "g(x=", ")"))
        == "f(\n    g(x=a),  # keep\n)\n"
    )


def test_replace_and_insert_before() -> None:
    assert on_call("y = tf.nn.relu(x)\n", lambda c, call: c.replace(call.func, "relu")) == (
        "y = relu(x)\n"
    )
    assert on_call("y = f(é, x)\n", lambda c, call: c.insert_before(call.args[1], "k=")) == (
        "y = f(é, k=x)\n"
    )


# -- open_paren ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("f(a)\n", 1),
        ("a.b (\n1)\n", 4),
        ("(f)(a)\n", 3),
        ("((f))(a)\n", 5),
        ("(f  # c(\n)  (a)\n", 12),
        ("f \\\n(a)\n", 4),
        ("f[0](a)\n", 4),
        ("'(x)'.format(a)\n", 12),
        ("é(a)\n", 1),
    ],
)
def test_open_paren(src: str, expected: int) -> None:
    ctx = make_ctx(src)
    offset = ctx.open_paren(first_call(ctx))
    assert offset == expected
    assert ctx.text[offset] == "("


# -- arguments, keyword, argument ----------------------------------------------------------------
def test_arguments_in_source_order() -> None:
    ctx = make_ctx("f(a, *b, c, k=1, **d)\n")
    items = ctx.arguments(first_call(ctx))
    assert [ast.unparse(i) for i in items] == ["a", "*b", "c", "k=1", "**d"]
    ctx = make_ctx("f(k=1, *b)\n")
    assert [ast.unparse(i) for i in ctx.arguments(first_call(ctx))] == ["k=1", "*b"]


def test_keyword_and_argument() -> None:
    ctx = make_ctx("f(a, b, k=1)\n")
    call = first_call(ctx)
    assert ctx.keyword(call, "k") is call.keywords[0]
    assert ctx.keyword(call, "z") is None
    assert ctx.argument(call, 1, "b") is call.args[1]
    assert ctx.argument(call, 5, "k") is call.keywords[0].value
    assert ctx.argument(call, 2, "c") is None
    assert ctx.argument(call, None, "b") is None


def test_argument_after_a_star_has_no_known_position() -> None:
    ctx = make_ctx("f(*a, b)\n")
    call = first_call(ctx)
    assert ctx.argument(call, 1, "b") is None
    assert ctx.argument(call, 0, "a") is None


# -- owns_lines, block_of -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("x = 1\n", [True]),
        ("x = 1", [True]),
        ("x = 1  # c\n", [True]),
        ("x = (1,\n     2)\n", [True]),
        ("x = 1 \\\n    + 2\n", [True]),
        ("x = 1; y = 2\n", [False, False]),
        ("x = 1;\n", [False]),
        ("if a: x = 1\n", [True, False]),
        ("if a:\n    x = 1\n", [True, True]),
        ("if a:\n\tx = 1\n", [True, True]),
    ],
)
def test_owns_lines(src: str, expected: list[bool]) -> None:
    ctx = make_ctx(src)
    assert [ctx.owns_lines(s) for s in statements(ctx)] == expected


def test_block_of() -> None:
    src = (
        "if a:\n    x = 1\nelse:\n    y = 2\n"
        "try:\n    t = 1\nexcept E:\n    h = 1\nfinally:\n    z = 1\n"
    )
    ctx = make_ctx(src)
    if_stmt, try_stmt = ctx.tree.body
    assert isinstance(if_stmt, ast.If) and isinstance(try_stmt, ast.Try)
    assert ctx.block_of(if_stmt) is ctx.tree.body
    assert ctx.block_of(if_stmt.body[0]) is if_stmt.body
    assert ctx.block_of(if_stmt.orelse[0]) is if_stmt.orelse
    assert ctx.block_of(try_stmt.handlers[0].body[0]) is try_stmt.handlers[0].body
    assert ctx.block_of(try_stmt.finalbody[0]) is try_stmt.finalbody


# -- insert_lines_before / after ----------------------------------------------------------------
def test_insert_lines_before_uses_the_statement_indentation() -> None:
    src = "def f():\n    x = 1\n"
    assert on_stmt(src, 1, lambda c, s: c.insert_lines_before(s, ["a()", "b()"])) == (
        "def f():\n    a()\n    b()\n    x = 1\n"
    )


def test_insert_lines_after_a_multiline_statement() -> None:
    src = "def f():\n    x = (1,\n         2)  # c\n    y = 2\n"
    assert on_stmt(src, 1, lambda c, s: c.insert_lines_after(s, ["a()"])) == (
        "def f():\n    x = (1,\n         2)  # c\n    a()\n    y = 2\n"
    )


def test_insert_lines_after_a_compound_statement() -> None:
    src = "with x:\n    y = 1\n    # end\nz = 2\n"
    assert on_stmt(src, 0, lambda c, s: c.insert_lines_after(s, ["a()"])) == (
        "with x:\n    y = 1\na()\n    # end\nz = 2\n"
    )


def test_insert_lines_after_with_an_explicit_indent() -> None:
    src = "def f():\n    x = 1\n"
    assert on_stmt(src, 1, lambda c, s: c.insert_lines_after(s, ["a()"], indent="")) == (
        "def f():\n    x = 1\na()\n"
    )


def test_insert_lines_in_a_crlf_file_with_tabs() -> None:
    src = "def f():\r\n\tx = 1\r\n"
    assert on_stmt(src, 1, lambda c, s: c.insert_lines_before(s, ["a()"])) == (
        "def f():\r\n\ta()\r\n\tx = 1\r\n"
    )
    assert on_stmt(src, 1, lambda c, s: c.insert_lines_after(s, ["a()", "b()"])) == (
        "def f():\r\n\tx = 1\r\n\ta()\r\n\tb()\r\n"
    )


def test_insert_lines_after_the_last_line_without_newline() -> None:
    assert on_stmt("x = 1", 0, lambda c, s: c.insert_lines_after(s, ["a()"])) == "x = 1\na()\n"
    assert on_stmt("x = 1\r\ny = 2", 1, lambda c, s: c.insert_lines_after(s, ["a()"])) == (
        "x = 1\r\ny = 2\r\na()\r\n"
    )


@pytest.mark.parametrize("src", ["if a: x = 1\n", "x = 1; y = 2\n"])
def test_insert_lines_next_to_a_statement_sharing_its_line_is_refused(src: str) -> None:
    index = len(statements(make_ctx(src))) - 1
    assert on_stmt(src, index, lambda c, s: c.insert_lines_before(s, ["a()"])) is None
    assert on_stmt(src, index, lambda c, s: c.insert_lines_after(s, ["a()"])) is None


# -- remove_statement ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("src", "index", "expected"),
    [
        ("a = 1\nb = 2\n", 0, "b = 2\n"),
        ("a = 1\nb = 2", 1, "a = 1\n"),
        ("a = 1\nb = (2,\n     3)\nc = 4\n", 1, "a = 1\nc = 4\n"),
        ("a = 1\nb = 2  # about b\nc = 3\n", 1, "a = 1\nc = 3\n"),
        ("a = 1\n# about b\nb = 2\n", 1, "a = 1\n# about b\n"),
        ("def f():\n    x = 1\n", 1, "def f():\n    pass\n"),
        ("def f():\n    x = 1\n    y = 2\n", 1, "def f():\n    y = 2\n"),
        ("if c:\n    x = 1\nelse:\n    y = 2\n", 2, "if c:\n    x = 1\nelse:\n    pass\n"),
        ("if c: x = 1\n", 1, "if c: pass\n"),
        ("a = 1; b = 2\n", 0, "pass; b = 2\n"),
        ("a = 1; b = 2\n", 1, "a = 1; pass\n"),
        ("x = 1\r\ny = 2\r\nz = 3\r\n", 1, "x = 1\r\nz = 3\r\n"),
    ],
)
def test_remove_statement(src: str, index: int, expected: str) -> None:
    assert on_stmt(src, index, lambda c, s: c.remove_statement(s)) == expected


# -- string_lines, reindent ---------------------------------------------------------------------
REINDENT_SRC = (
    "if a:\n"
    '    x = """\n'
    "    keep\n"
    '    """\n'
    "    y = 1\n"
    "\n"
    '    z = f"""\n'
    "  {y}\n"
    '    """\n'
    "    w = b'''\n"
    "    raw\n"
    "    '''\n"
    "    v = 2\n"
)


def test_string_lines_are_lines_starting_inside_a_string() -> None:
    assert make_ctx(REINDENT_SRC).string_lines == frozenset({3, 4, 8, 9, 11, 12})


def test_reindent_skips_lines_inside_multiline_strings() -> None:
    ctx = make_ctx(REINDENT_SRC)
    out = apply_edits(ctx.text, ctx.reindent(2, 13, "    ", ""))
    assert out == (
        "if a:\n"
        'x = """\n'
        "    keep\n"
        '    """\n'
        "y = 1\n"
        "\n"
        'z = f"""\n'
        "  {y}\n"
        '    """\n'
        "w = b'''\n"
        "    raw\n"
        "    '''\n"
        "v = 2\n"
    )


def test_reindent_only_lines_with_the_old_prefix() -> None:
    src = "if a:\n    if b:\n        x = 1\n    y = 2\n"
    ctx = make_ctx(src)
    assert apply_edits(ctx.text, ctx.reindent(3, 4, "        ", "    ")) == (
        "if a:\n    if b:\n    x = 1\n    y = 2\n"
    )


def test_reindent_leaves_blank_lines_alone() -> None:
    src = "if a:\n    x = 1\n    \n    y = 2\n"
    ctx = make_ctx(src)
    assert apply_edits(ctx.text, ctx.reindent(2, 4, "    ", "  ")) == (
        "if a:\n  x = 1\n    \n  y = 2\n"
    )

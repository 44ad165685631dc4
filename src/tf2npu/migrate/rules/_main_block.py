"""The ``if __name__ == "__main__":`` block, and wrapping its body in setup / try / finally.

Rules that need code around the script's real work (``entry_point``: ``init_resource`` /
``shutdown_resource``; ``keras_session``: the Keras NPU session) use :func:`wrap_main_block`.
The body goes into ``try: ... finally: ...`` so the cleanup also runs when ``tf.app.run`` or
``absl.app.run`` leaves through ``sys.exit`` (statements placed after the body never would).

Several rules can wrap the same block without overlapping edits: the first one writes the
``try:`` / ``finally:`` structure, each later one adds its setup lines before the earlier rules'
setup and its cleanup lines after theirs, so a later rule's resources live outermost::

    if __name__ == "__main__":
        <setup of the later rule>
        <setup of the earlier rule>
        try:
            <body>
        finally:
            <cleanup of the earlier rule>
            <cleanup of the later rule>
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit, Patch
from tf2npu.migrate.rules._patches import clash, removed_lines


@dataclass(frozen=True, slots=True)
class _WrapPatch(Patch):
    """A patch of the wrapper; ``block`` (the block's offset) tells later rules it is there."""

    block: int = 0


def is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    if not isinstance(test.ops[0], ast.Eq):
        return False
    sides = (test.left, test.comparators[0])
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(consts) == 1


def main_block(ctx: FileContext) -> ast.If | None:
    """The module-level ``if __name__ == "__main__":`` block (the last one if there are several)."""
    found = [s for s in ctx.tree.body if isinstance(s, ast.If) and is_main_test(s.test)]
    return found[-1] if found else None


def calls_in(block: ast.If, name: str) -> bool:
    """True when the block's body calls the bare name ``name`` (e.g. an npu_init helper)."""
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
        for stmt in block.body
        for node in ast.walk(stmt)
    )


def _inserts_statements(ctx: FileContext, top: int, bottom: int) -> bool:
    """True when another rule adds whole lines inside the body (they would miss the new indent).

    Lines added inside brackets would be harmless, but they cannot be told apart cheaply; refusing
    is the safe side (the caller reports).
    """
    starts = set(ctx.source.line_starts)
    for patch in ctx.patches:
        if isinstance(patch, _WrapPatch):
            continue
        for e in patch.edits:
            adds_line = any(c in e.new for c in "\r\n")
            if adds_line and top < e.start <= bottom and (e.start in starts or e.new[-1] in "\r\n"):
                return True
    return False


def wrap_main_block(
    ctx: FileContext, rule: str, block: ast.If, setup: list[str], cleanup: list[str]
) -> bool:
    """Run ``setup`` before the block's body and ``cleanup`` after it, however the body exits.

    Lines are statements without indentation; the file's own indentation unit is used. Returns
    False (recording nothing) when the block cannot be wrapped safely: a one-line block, or a
    body another rule already edits in a way that conflicts.
    """
    if not cleanup:
        raise ValueError("a wrapper needs cleanup lines (use insert_lines_before for setup only)")
    body = block.body
    source = ctx.source
    header = ctx.header_last_line(block.test)
    if header is None:
        return False
    if body[0].lineno == header:
        return False  # ``if __name__ == "__main__": main()`` on one line
    unit = source.indent_of(body[0].lineno)
    if not unit or source.indent_of(block.lineno):
        return False
    nl = source.newline
    last = body[-1].end_lineno
    assert last is not None
    # From the line after the header, so comments leading the body stay with it.
    first = header + 1
    top, bottom = source.line_start(first), source.line_end(last)
    lead = "" if ctx.text[:bottom].endswith(("\n", "\r")) else nl
    if _inserts_statements(ctx, top, bottom):
        return False
    key = ctx.span(block)[0]
    existing = [
        i for i, p in enumerate(ctx.patches) if isinstance(p, _WrapPatch) and p.block == key
    ]

    def lines(items: list[str], indent: str) -> str:
        return "".join(f"{indent}{item}{nl}" for item in items)

    def patch(edits: list[Edit]) -> _WrapPatch:
        where = ctx.span(block)
        return _WrapPatch(rule, tuple(edits), where, block.lineno, block.col_offset + 1, key)

    if existing:
        # Around the earlier wrapper: setup before its setup, cleanup after its cleanup.
        before = [Edit(top, top, lines(setup, unit))] if setup else []
        after = [Edit(bottom, bottom, lines(cleanup, unit * 2))]
        if clash(ctx, [*before, *after]) is not None:
            return False
        ctx.patches.insert(existing[-1] + 1, patch(after))
        if before:
            ctx.patches.insert(existing[0], patch(before))
        return True
    # Lines another rule deletes whole need no new indentation (and must not clash with it).
    gone = {source.line_start(n) for n in removed_lines(ctx, first, last)}
    indented = ctx.reindent(first, last, unit, unit * 2)
    indented = [e for e in indented if e.start not in gone]
    edits = [
        Edit(top, top, lines(setup, unit) + f"{unit}try:{nl}"),
        *indented,
        Edit(bottom, bottom, f"{lead}{unit}finally:{nl}" + lines(cleanup, unit * 2)),
    ]
    if clash(ctx, edits) is not None:
        return False
    ctx.patches.append(patch(edits))
    return True

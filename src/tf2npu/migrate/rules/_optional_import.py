"""The "optional import" idiom: ``try: import x / except ImportError: <fallback>``.

When a rule removes every import of such a ``try`` body, the handler is dead code that still binds
its fallback names; the whole statement can go unless something after it uses those names.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit
from tf2npu.migrate.rules._horovod_handles import scope_of
from tf2npu.migrate.rules._patches import removed

IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


def optional_import_try(ctx: FileContext, imports: Collection[ast.stmt]) -> ast.Try | None:
    """The ``try`` whose body is exactly some of ``imports`` and that only catches import errors.

    ``else`` and ``finally`` blocks run when the import works, so a ``try`` with one is not the
    idiom.
    """
    first = next(iter(imports), None)
    stmt = ctx.index.parent(first) if first is not None else None
    if not isinstance(stmt, ast.Try) or stmt.orelse or stmt.finalbody:
        return None
    if not all(any(s is i for i in imports) for s in stmt.body):
        return None
    return stmt if all(_only_import_errors(h) for h in stmt.handlers) else None


def _only_import_errors(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    if caught is None:
        return False  # a bare ``except:`` catches more than a missing module
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return all(isinstance(n, ast.Name) and n.id in IMPORT_ERRORS for n in names)


def handler_names(stmt: ast.Try) -> set[str]:
    """Names the ``except`` blocks bind (imports, assignments, ``def``/``class``, ``as e``)."""
    found: set[str] = set()
    for handler in stmt.handlers:
        if handler.name:
            found.add(handler.name)
        for node in ast.walk(handler):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                found.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, ast.alias):
                found.add(node.asname or node.name.split(".")[0])
    return found


def used_after(
    ctx: FileContext, parents: dict[int, ast.AST], stmt: ast.Try, names: Collection[str]
) -> list[str]:
    """Those of ``names`` that code outside ``stmt`` still reads as the binding of its scope.

    ``parents`` maps every node of the tree to its parent; uses earlier rewrites remove do not
    count.
    """
    home = ctx.index.scope_at(stmt)
    resolver = ctx.index.resolver
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    used: set[str] = set()
    for node in ast.walk(ctx.tree):
        if not (isinstance(node, ast.Name) and node.id in names and node.id not in used):
            continue
        if isinstance(node.ctx, ast.Store) or first <= node.lineno <= last:
            continue
        if removed(ctx, *ctx.span(node)):
            continue
        seen = resolver.bindings_of(node.id, scope_of(ctx, parents, node))
        if seen is not None and seen[0] is home:
            used.add(node.id)
    return sorted(used)


def remove_lines(ctx: FileContext, stmt: ast.stmt) -> Edit | None:
    """Delete the statement's lines, and the blank lines before it when blank lines follow it.

    Between two blank runs, the one before would double the gap (``import``, blank, ``try``,
    blank, blank, ``def`` must not leave three blank lines). None when the statement shares a
    line with another one.
    """
    if not ctx.owns_lines(stmt):
        return None
    source = ctx.source
    assert stmt.end_lineno is not None
    first, after = stmt.lineno, stmt.end_lineno + 1
    if after > source.line_count or source.line_text(after).strip() == "":
        while first > 1 and source.line_text(first - 1).strip() == "":
            first -= 1
    return Edit(source.line_start(first), source.line_end(stmt.end_lineno), "")

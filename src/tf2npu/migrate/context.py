"""The per-file context rules work in: the parsed module, the shared index, and edit builders.

Rules read (``ctx.index``, ``ctx.kinds``, ``ctx.text``) and write only through ``ctx.patch``,
``ctx.finding`` and ``ctx.need_import``; the engine applies the patches and schedules imports.
Edit builders return :class:`Edit` values (or None when a construct cannot be edited safely, so the
rule reports instead of guessing).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from tf2npu.migrate.edits import Edit, Patch
from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.kinds import Kinds
from tf2npu.migrate.model import Finding, Severity
from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.source import SourceFile

NPU_INIT_IMPORT = "from npu_bridge.npu_init import *"

_SKIP_TO_PAREN = re.compile(r"(?:\s|\\\r?\n|#[^\r\n]*|\))*")
_SKIP_TO_COLON = re.compile(r"(?:\s|\\\r?\n|#[^\r\n]*|\))*:")
_REST_OF_LINE = re.compile(r"[ \t\f]*(?:#[^\r\n]*)?(?:\r\n|\r|\n|$)")
_COMMA_REST = re.compile(r"[ \t\f]*,[ \t\f]*(?:\r\n|\r|\n|$)")
_COMMA_COMMENT = re.compile(r"[ \t\f]*,[ \t\f]*(?=#)")

Arg = ast.expr | ast.keyword


@dataclass
class FileContext:
    """Everything a rule may read and the outputs it may add to, for one file."""

    path: str
    source: SourceFile
    tree: ast.Module
    index: ModuleIndex
    options: MigrateOptions
    is_entry: bool = False
    patches: list[Patch] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    """Import statements the rewritten file needs (in first-requested order)."""
    helpers: dict[str, list[str]] = field(default_factory=dict)
    """Module-level helper definitions the rewritten file needs, by name."""
    memo: dict[str, object] = field(default_factory=dict)
    """Facts derived once per pass and shared by rules (e.g. the input pipeline's functions)."""

    @cached_property
    def kinds(self) -> Kinds:
        return Kinds(self.index)

    # -- reading ----------------------------------------------------------------------------
    @property
    def text(self) -> str:
        return self.source.text

    def segment(self, node: ast.AST) -> str:
        return self.source.segment(node)

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.source.span(node)

    # -- outputs ----------------------------------------------------------------------------
    def patch(self, rule: str, subject: ast.AST, edits: Iterable[Edit | None]) -> bool:
        """Record one change to ``subject``; False (and nothing recorded) if an edit is None."""
        collected = list(edits)
        if not collected or any(e is None for e in collected):
            return False
        node: ast.expr = subject  # type: ignore[assignment]
        kept = tuple(e for e in collected if e is not None)
        start, end = self.span(subject)
        start = min(start, *(e.start for e in kept))
        end = max(end, *(e.end for e in kept))
        self.patches.append(Patch(rule, kept, (start, end), node.lineno, node.col_offset + 1))
        return True

    def finding(
        self, rule: str, node: ast.AST | None, severity: Severity, message: str, fix: str = ""
    ) -> None:
        line = getattr(node, "lineno", 1) if node is not None else 1
        col = getattr(node, "col_offset", 0) + 1 if node is not None else 1
        self.findings.append(Finding(self.path, line, col, rule, severity, message, fix))

    def need_import(self, statement: str = NPU_INIT_IMPORT) -> None:
        if statement not in self.imports:
            self.imports.append(statement)

    def need_helper(self, name: str, lines: list[str]) -> None:
        """Ask for a module-level ``def name`` (added after the imports unless already defined)."""
        self.need_import()
        self.helpers.setdefault(name, lines)

    # -- expression edits -------------------------------------------------------------------
    def replace(self, node: ast.AST, new: str) -> Edit:
        start, end = self.span(node)
        return Edit(start, end, new)

    def wrap(self, node: ast.AST, prefix: str, suffix: str) -> list[Edit | None]:
        start, end = self.span(node)
        return [Edit(start, start, prefix), Edit(end, end, suffix)]

    def insert_before(self, node: ast.AST, text: str) -> Edit:
        start, _ = self.span(node)
        return Edit(start, start, text)

    def open_paren(self, call: ast.Call) -> int | None:
        """Offset of the ``(`` that opens the call's arguments."""
        _, pos = self.span(call.func)
        pos = _SKIP_TO_PAREN.match(self.text, pos).end()  # type: ignore[union-attr]
        return pos if self.text.startswith("(", pos) else None

    def header_last_line(self, node: ast.AST) -> int | None:
        """The line of the ``:`` that ends a compound statement's header after ``node``.

        ``node`` is the header's last expression (a ``with`` item, an ``if`` test).
        """
        found = _SKIP_TO_COLON.match(self.text, self.span(node)[1])
        if found is None:
            return None
        return bisect.bisect_right(self.source.line_starts, found.end() - 1)

    @staticmethod
    def arguments(call: ast.Call) -> list[Arg]:
        """Positional arguments and keywords in source order."""
        items: list[Arg] = [*call.args, *call.keywords]
        items.sort(key=lambda n: (n.lineno, n.col_offset))
        return items

    @staticmethod
    def keyword(call: ast.Call, name: str) -> ast.keyword | None:
        return next((k for k in call.keywords if k.arg == name), None)

    @staticmethod
    def argument(call: ast.Call, position: int | None, name: str) -> ast.expr | None:
        """The value passed for a parameter, by keyword or (when ``position`` given) by position."""
        for kw in call.keywords:
            if kw.arg == name:
                return kw.value
        if position is not None and position < len(call.args):
            arg = call.args[position]
            if not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
                return arg
        return None

    def add_keyword(self, call: ast.Call, name: str, value: str) -> Edit | None:
        """Append ``name=value`` to the call's arguments, in the call's own layout."""
        items = self.arguments(call)
        if not items:
            paren = self.open_paren(call)
            return None if paren is None else Edit(paren + 1, paren + 1, f"{name}={value}")
        if len(items) == 1 and isinstance(items[0], ast.GeneratorExp):
            return None
        last = items[-1]
        _, end = self.span(last)
        trailing = _COMMA_REST.match(self.text, end)
        if trailing is not None and last.lineno != call.lineno and self._starts_line(last):
            indent = self.source.indent_of(last.lineno)
            pos = trailing.end()
            nl = self.source.newline
            if not self.text[trailing.start() : pos].endswith(("\n", "\r")):
                return Edit(pos, pos, f"{nl}{indent}{name}={value},")
            return Edit(pos, pos, f"{indent}{name}={value},{nl}")
        return Edit(end, end, f", {name}={value}")

    def set_keyword(self, call: ast.Call, name: str, value: str) -> Edit | None:
        """Set keyword ``name`` to ``value``: replace its value, or add it."""
        kw = self.keyword(call, name)
        if kw is not None:
            return self.replace(kw.value, value)
        return self.add_keyword(call, name, value)

    def remove_argument(self, call: ast.Call, item: Arg) -> Edit | None:
        """Remove one argument with its separator, keeping comments on other lines."""
        items = self.arguments(call)
        i = next(n for n, x in enumerate(items) if x is item)
        start, end = self.span(item)
        if len(items) > 1 and item.lineno != call.lineno and self._starts_line(item):
            after = _COMMA_REST.match(self.text, end)
            if after is None and i == len(items) - 1:
                # Only the last argument may lack its comma (``a\n, b``: the comma is b's).
                after = _REST_OF_LINE.match(self.text, end)
            # None when the call's ``)`` follows on the same line: handled below.
            if after is not None and not self.text[end : after.end()].strip(" \t\f,\r\n"):
                # The argument has its own line(s): drop them whole, comments elsewhere stay.
                return Edit(self.source.line_start(item.lineno), after.end(), "")
            noted = _COMMA_COMMENT.match(self.text, end)
            if noted is not None:
                # ``arg,  # note``: drop the argument and its comma, keep the comment in place.
                return Edit(start, noted.end(), "")
        if len(items) == 1:
            paren = self.open_paren(call)
            _, call_end = self.span(call)
            return None if paren is None else Edit(paren + 1, call_end - 1, "")
        if i > 0:
            _, prev_end = self.span(items[i - 1])
            return Edit(prev_end, end, "")
        next_start, _ = self.span(items[1])
        return Edit(start, next_start, "")

    def keywordize(self, call: ast.Call, names: tuple[str, ...], first: int = 0) -> list[Edit]:
        """Turn positional arguments from index ``first`` on into keywords named by ``names``.

        Nothing changes when there is a ``*args``: the positions after it are unknown, and a
        keyword before it would take a position the unpacked values fill first.
        """
        if any(isinstance(arg, ast.Starred) for arg in call.args):
            return []
        return [
            self.insert_before(arg, f"{names[i]}=")
            for i, arg in enumerate(call.args[: len(names)])
            if i >= first
        ]

    def _starts_line(self, node: ast.AST) -> bool:
        start, _ = self.span(node)
        line_start = self.source.line_start(node.lineno)  # type: ignore[attr-defined]
        return not self.text[line_start:start].strip(" \t\f")

    # -- statement edits --------------------------------------------------------------------
    def owns_lines(self, stmt: ast.stmt) -> bool:
        """True when ``stmt`` alone occupies its lines (no ``;`` neighbours, not after ``if:``)."""
        _, end = self.span(stmt)
        assert stmt.end_lineno is not None
        rest = _REST_OF_LINE.match(self.text, end)
        return self._starts_line(stmt) and rest is not None

    def block_of(self, stmt: ast.stmt) -> list[ast.stmt]:
        """The statement list that contains ``stmt``."""
        parent = self.index.parent(stmt) or self.tree
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if isinstance(block, list) and any(s is stmt for s in block):
                return block
        return [stmt]

    def insert_lines_before(self, stmt: ast.stmt, lines: list[str]) -> Edit | None:
        if not self.owns_lines(stmt):
            return None
        indent = self.source.indent_of(stmt.lineno)
        nl = self.source.newline
        start = self.source.line_start(stmt.lineno)
        return Edit(start, start, "".join(f"{indent}{line}{nl}" for line in lines))

    def insert_lines_after(
        self, stmt: ast.stmt, lines: list[str], indent: str | None = None
    ) -> Edit | None:
        if not self.owns_lines(stmt):
            return None
        assert stmt.end_lineno is not None
        indent = self.source.indent_of(stmt.lineno) if indent is None else indent
        nl = self.source.newline
        pos = self.source.line_end(stmt.end_lineno)
        lead = "" if self.text[:pos].endswith(("\n", "\r")) else nl
        return Edit(pos, pos, lead + "".join(f"{indent}{line}{nl}" for line in lines))

    def remove_statement(self, stmt: ast.stmt) -> Edit:
        """Delete a statement; the only statement of a block becomes ``pass``."""
        if len(self.block_of(stmt)) == 1 or not self.owns_lines(stmt):
            return self.replace(stmt, "pass")
        assert stmt.end_lineno is not None
        return Edit(self.source.line_start(stmt.lineno), self.source.line_end(stmt.end_lineno), "")

    @cached_property
    def string_lines(self) -> frozenset[int]:
        """Lines that begin inside a multi-line string literal (their indentation is data)."""
        lines: set[int] = set()
        for node in self.index.nodes():
            if isinstance(node, (ast.Constant, ast.JoinedStr)) and node.end_lineno:
                if node.end_lineno > node.lineno and isinstance(
                    getattr(node, "value", ""), (str, bytes, list)
                ):
                    lines.update(range(node.lineno + 1, node.end_lineno + 1))
        return frozenset(lines)

    def reindent(self, first: int, last: int, old: str, new: str) -> list[Edit]:
        """Change the indentation prefix ``old`` to ``new`` on lines ``first..last``."""
        edits: list[Edit] = []
        for line in range(first, last + 1):
            if line in self.string_lines:
                continue
            start = self.source.line_start(line)
            text = self.source.line_text(line)
            if text.strip() and text.startswith(old):
                edits.append(Edit(start, start + len(old), new))
        return edits

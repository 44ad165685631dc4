"""``with tf.device(...)`` scopes are removed; their bodies stay."""

from __future__ import annotations

import ast
from typing import ClassVar

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit
from tf2npu.migrate.model import Severity
from tf2npu.migrate.rule import Example, Rule, register

_DEVICE = ("tf.device",)
_REASON = "device scope removed: the NPU adapter places every op itself"


class _Unwrap:
    """A ``with tf.device(...):`` whose header goes and whose body moves out one level."""

    def __init__(self, stmt: ast.With, header_last: int, outer: str, inner: str) -> None:
        self.stmt = stmt
        self.header_last = header_last
        self.outer = outer
        self.inner = inner

    def contains(self, other: _Unwrap) -> bool:
        end = self.stmt.end_lineno or 0
        return self.header_last < other.stmt.lineno <= end


@register
class DeviceScope(Rule):
    """``with tf.device(...):`` is removed and its body dedented (the adapter decides placement).

    In a ``with`` with several items only the ``tf.device`` item goes; nested device scopes are
    removed together. Other uses of ``tf.device`` (a device function, ``as`` names) are reported
    for a manual change.
    """

    name: ClassVar[str] = "device_scope"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\nwith tf.device('/gpu:0'):\n    # the model\n    y = f(x)\n",
            "import tensorflow as tf\n# the model\ny = f(x)\n",
        ),
        Example(
            "import tensorflow as tf\nwith tf.device('/cpu:0'), tf.name_scope('in'):\n    y = 1\n",
            "import tensorflow as tf\nwith tf.name_scope('in'):\n    y = 1\n",
            "other context managers stay",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        device_calls = {id(r.call) for r in ctx.index.calls_to(*_DEVICE) if r.call is not None}
        handled: set[int] = set()
        blocks: list[_Unwrap] = []
        for stmt in ctx.index.withs:
            for item in stmt.items:
                if id(item.context_expr) not in device_calls:
                    continue
                handled.add(id(item.context_expr))
                unwrap = self._classify(ctx, stmt, item)
                if unwrap is not None:
                    blocks.append(unwrap)
        outermost = [b for b in blocks if not any(o.contains(b) for o in blocks if o is not b)]
        for block in outermost:
            nested = [b for b in blocks if b is block or block.contains(b)]
            # One patch per scope (one change each in the report); their edits are disjoint.
            for scope, edits in self._unwrap_all(ctx, nested).items():
                if ctx.patch(self.name, scope.stmt, edits):
                    ctx.finding(self.name, scope.stmt, Severity.INFO, _REASON)
        for ref in ctx.index.calls_to(*_DEVICE):
            if ref.call is not None and id(ref.call) not in handled:
                ctx.finding(
                    self.name,
                    ref.call,
                    Severity.WARNING,
                    "tf.device used outside a with statement",
                    "remove the device placement: the adapter places ops itself",
                )

    def _classify(self, ctx: FileContext, stmt: ast.With, item: ast.withitem) -> _Unwrap | None:
        """Edit in place (patched here) or return the block to unwrap."""
        if item.optional_vars is not None:
            ctx.finding(
                self.name,
                stmt,
                Severity.WARNING,
                "tf.device(...) as <name>: scope kept",
                "remove the device scope by hand",
            )
            return None  # fmt: skip
        if len(stmt.items) > 1:
            if ctx.patch(self.name, stmt, self._drop_item(ctx, stmt, item)):
                ctx.finding(self.name, stmt, Severity.INFO, _REASON)
            return None
        header_last = ctx.header_last_line(item.context_expr)
        if header_last is None or not ctx.owns_lines(stmt):
            ctx.finding(
                self.name,
                stmt,
                Severity.WARNING,
                "device scope in an unusual layout: kept",
                "remove it by hand",
            )
            return None  # fmt: skip
        body = stmt.body
        if body[0].lineno == header_last:
            # ``with tf.device(d): stmt`` on one line: keep just the body
            edit = Edit(ctx.span(stmt)[0], ctx.span(body[0])[0], "")
            if ctx.patch(self.name, stmt, [edit]):
                ctx.finding(self.name, stmt, Severity.INFO, _REASON)
            return None
        outer = ctx.source.indent_of(stmt.lineno)
        return _Unwrap(stmt, header_last, outer, ctx.source.indent_of(body[0].lineno))

    @staticmethod
    def _drop_item(ctx: FileContext, stmt: ast.With, item: ast.withitem) -> list[Edit | None]:
        i = stmt.items.index(item)
        start, end = ctx.span(item.context_expr)
        if i + 1 < len(stmt.items):
            return [Edit(start, ctx.span(stmt.items[i + 1].context_expr)[0], "")]
        return [Edit(ctx.span(stmt.items[i - 1].context_expr)[1], end, "")]

    @staticmethod
    def _unwrap_all(ctx: FileContext, blocks: list[_Unwrap]) -> dict[_Unwrap, list[Edit | None]]:
        """Delete every header and move each body line out by all the levels around it.

        Each edit belongs to the innermost scope it serves: its header, or a body line.
        """
        source = ctx.source
        edits: dict[_Unwrap, list[Edit | None]] = {block: [] for block in blocks}
        headers: set[int] = set()
        for block in blocks:
            lines = range(block.stmt.lineno, block.header_last + 1)
            headers.update(lines)
            edits[block].append(Edit(source.line_start(lines[0]), source.line_end(lines[-1]), ""))
        outer = blocks[0]
        assert outer.stmt.end_lineno is not None
        for line in range(outer.header_last + 1, outer.stmt.end_lineno + 1):
            if line in headers or line in ctx.string_lines:
                continue
            text = source.line_text(line)
            around = [b for b in blocks if b.header_last < line <= (b.stmt.end_lineno or 0)]
            if not text.strip() or not text.startswith(around[-1].inner):
                continue
            new, pos = "", 0
            for block in around:
                new += text[pos : len(block.outer)]
                pos = len(block.inner)
            start = source.line_start(line)
            edits[around[-1]].append(Edit(start, start + pos, new))
        return edits

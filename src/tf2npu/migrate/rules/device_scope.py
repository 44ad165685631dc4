"""``with tf.device(...)`` scopes are removed; their bodies stay."""

from __future__ import annotations

import ast
import bisect
import re
from typing import ClassVar

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit
from tf2npu.migrate.model import Severity
from tf2npu.migrate.rule import Example, Rule, register

_TO_COLON = re.compile(r"(?:\s|\\\r?\n|#[^\r\n]*|\))*:")
_DEVICE = ("tf.device",)
_REASON = "device scope removed: the NPU adapter places every op itself"


@register
class DeviceScope(Rule):
    """``with tf.device(...):`` is removed and its body dedented (the adapter decides placement).

    In a ``with`` with several items only the ``tf.device`` item goes. Other uses of
    ``tf.device`` (a device function, a variable) are reported for a manual change.
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
        in_with: set[int] = set()
        for stmt in ctx.index.withs:
            for item in stmt.items:
                expr = item.context_expr
                if isinstance(expr, ast.Call) and self._is_device(ctx, expr):
                    in_with.add(id(expr))
                    self._remove(ctx, stmt, item)
        for ref in ctx.index.calls_to(*_DEVICE):
            if ref.call is not None and id(ref.call) not in in_with:
                ctx.finding(self.name, ref.call, Severity.WARNING,
                            "tf.device used outside a with statement",
                            "remove the device placement: the adapter places ops itself")  # fmt: skip

    @staticmethod
    def _is_device(ctx: FileContext, call: ast.Call) -> bool:
        return any(r.call is call for r in ctx.index.calls_to(*_DEVICE))

    def _remove(self, ctx: FileContext, stmt: ast.With, item: ast.withitem) -> None:
        if item.optional_vars is not None:
            ctx.finding(self.name, stmt, Severity.WARNING,
                        "tf.device(...) as <name>: scope kept", "remove the device scope by hand")
            return  # fmt: skip
        if len(stmt.items) > 1:
            edit = self._drop_item(ctx, stmt, item)
        else:
            edit = self._unwrap(ctx, stmt)
        if edit is not None and ctx.patch(self.name, stmt, edit):
            ctx.finding(self.name, stmt, Severity.INFO, _REASON)

    @staticmethod
    def _drop_item(ctx: FileContext, stmt: ast.With, item: ast.withitem) -> list[Edit] | None:
        i = stmt.items.index(item)
        start, end = ctx.span(item.context_expr)
        if i + 1 < len(stmt.items):
            return [Edit(start, ctx.span(stmt.items[i + 1].context_expr)[0], "")]
        return [Edit(ctx.span(stmt.items[i - 1].context_expr)[1], end, "")]

    @staticmethod
    def _unwrap(ctx: FileContext, stmt: ast.With) -> list[Edit] | None:
        body = stmt.body
        _, item_end = ctx.span(stmt.items[-1].context_expr)
        colon = _TO_COLON.match(ctx.text, item_end)
        if colon is None or not ctx.owns_lines(stmt):
            return None
        header_last = bisect.bisect_right(ctx.source.line_starts, colon.end() - 1)
        if body[0].lineno == header_last:
            # ``with tf.device(d): stmt`` on one line: keep just the body
            return [Edit(ctx.span(stmt)[0], ctx.span(body[0])[0], "")]
        assert stmt.end_lineno is not None
        edits = [Edit(ctx.source.line_start(stmt.lineno), ctx.source.line_end(header_last), "")]
        outer = ctx.source.indent_of(stmt.lineno)
        inner = ctx.source.indent_of(body[0].lineno)
        edits += ctx.reindent(header_last + 1, stmt.end_lineno, inner, outer)
        return edits

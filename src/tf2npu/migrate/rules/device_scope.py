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
_TOWER = (
    "tower loop `for {loop}:` (line {line}) built one copy of the model per device under "
    "tf.device scopes, which were removed: on Ascend one process drives one NPU, so every copy "
    "now lands on the same device"
)
_TOWER_FIX = (
    "build one copy of the model (a single tower) and train on several NPUs with one process "
    "per device: NPUDistributedOptimizer averages the gradients over the RANK_SIZE processes"
)


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
    for a manual change. A removed scope whose device comes from an enclosing ``for`` loop's
    variable (``for i in range(num_gpus): with tf.device('/gpu:%d' % i)``) is a multi-GPU tower
    loop: it is reported once per loop, since one process drives one NPU (use multi-rank).
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
        removed: list[tuple[ast.With, ast.expr]] = []
        blocks: list[_Unwrap] = []
        for stmt in ctx.index.withs:
            for item in stmt.items:
                if id(item.context_expr) not in device_calls:
                    continue
                handled.add(id(item.context_expr))
                unwrap = self._classify(ctx, stmt, item, removed)
                if unwrap is not None:
                    blocks.append(unwrap)
        outermost = [b for b in blocks if not any(o.contains(b) for o in blocks if o is not b)]
        for block in outermost:
            nested = [b for b in blocks if b is block or block.contains(b)]
            # One patch per scope (one change each in the report); their edits are disjoint.
            for scope, edits in self._unwrap_all(ctx, nested).items():
                if ctx.patch(self.name, scope.stmt, edits):
                    ctx.finding(self.name, scope.stmt, Severity.INFO, _REASON)
                    removed.append((scope.stmt, _device_expr(scope.stmt, device_calls)))
        self._tower_loops(ctx, removed)
        for ref in ctx.index.calls_to(*_DEVICE):
            if ref.call is not None and id(ref.call) not in handled:
                ctx.finding(
                    self.name,
                    ref.call,
                    Severity.WARNING,
                    "tf.device used outside a with statement",
                    "remove the device placement: the adapter places ops itself",
                )

    def _tower_loops(self, ctx: FileContext, removed: list[tuple[ast.With, ast.expr]]) -> None:
        """One finding per ``for`` loop whose variable chose the device of a removed scope."""
        loops: dict[int, ast.For | ast.AsyncFor] = {}
        for stmt, device in removed:
            used = {n.id for n in ast.walk(device) if isinstance(n, ast.Name)}
            node = ctx.index.parent(stmt)
            while node is not None and not isinstance(node, _SCOPE_BOUNDARIES):
                if isinstance(node, ast.For | ast.AsyncFor):
                    bound = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
                    if used & bound:
                        loops.setdefault(id(node), node)
                        break
                node = ctx.index.parent(node)
        for loop in loops.values():
            header = f"{ctx.segment(loop.target)} in {' '.join(ctx.segment(loop.iter).split())}"
            message = _TOWER.format(loop=header, line=loop.lineno)
            ctx.finding(self.name, loop, Severity.WARNING, message, _TOWER_FIX)

    def _classify(
        self,
        ctx: FileContext,
        stmt: ast.With,
        item: ast.withitem,
        removed: list[tuple[ast.With, ast.expr]],
    ) -> _Unwrap | None:
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
                removed.append((stmt, item.context_expr))
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
                removed.append((stmt, item.context_expr))
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


_SCOPE_BOUNDARIES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Module)
"""A loop variable is only the device's source within one function."""


def _device_expr(stmt: ast.With, device_calls: set[int]) -> ast.expr:
    return next(i.context_expr for i in stmt.items if id(i.context_expr) in device_calls)

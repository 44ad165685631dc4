"""What a Horovod call's arguments say: which to drop, which reduction, which ops they name.

The argument half of the horovod rule (:mod:`tf2npu.migrate.rules.horovod`): it reads calls and
builds the edits that drop Horovod-only arguments; it records nothing itself.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from tf2npu.migrate.context import Arg, FileContext
from tf2npu.migrate.edits import Edit
from tf2npu.migrate.index import Ref
from tf2npu.migrate.tables.horovod import ADASUM, AVERAGE, SUM


def constant(node: ast.expr | None, value: object) -> bool:
    """True when ``node`` is the literal ``value`` of the same type."""
    # ``type is``: ``True == 1`` must not pass for ``backward_passes_per_step=True``.
    if not isinstance(node, ast.Constant):
        return False
    return type(node.value) is type(value) and node.value == value


class Arguments:
    """Reads a file's Horovod calls in the scope of each reference.

    ``handle_names`` maps dotted expressions that reach Horovod through a handle (a parameter or
    global holding the module) to their Horovod names.
    """

    def __init__(self, ctx: FileContext, handle_names: dict[int, str]) -> None:
        self.ctx = ctx
        self.handle_names = handle_names

    def sort(
        self,
        call: ast.Call,
        keep: tuple[str, ...],
        tuning: frozenset[str],
        positional: int,
        ref: Ref,
    ) -> tuple[list[ast.keyword], str]:
        """Keywords to drop, and the reason the call cannot be rewritten ('' when it can).

        ``positional`` is how many leading parameters may be passed by position (``keep[:n]``).
        """
        drop: list[ast.keyword] = []
        # Only the optimizer may drop Adasum: it then averages, as the script does without it.
        adasum_ok = {"Average", "Adasum"} if "optimizer" in keep else {"Average"}
        if any(isinstance(a, ast.Starred) for a in call.args):
            return drop, "arguments passed with *args"
        if len(call.args) > positional:
            return drop, "Horovod options passed by position"
        for kw in call.keywords:
            if kw.arg is None:
                return drop, "arguments passed with **kwargs"
            if kw.arg in keep:
                continue
            # ``op=Average`` and one backward pass per step are what NPU all-reduce does anyway.
            harmless = kw.arg in tuning or (
                (kw.arg == "op" and self.op_choices(kw.value, ref) <= adasum_ok)
                or (kw.arg == "backward_passes_per_step" and constant(kw.value, 1))
            )
            if harmless:
                drop.append(kw)
            else:
                return drop, f"`{kw.arg}=` changes what is computed and has no NPU equivalent"
        return drop, ""

    def reduction(self, call: ast.Call, ref: Ref) -> str | None:
        """``mean`` or ``sum`` for hvd.allreduce's ``average`` / ``op``; None when unknown."""
        average, op = self.ctx.keyword(call, "average"), self.ctx.keyword(call, "op")
        if average is not None and op is not None:
            return None
        if average is not None:
            if constant(average.value, True):
                return "mean"
            return "sum" if constant(average.value, False) else None
        if op is not None:
            if self.names(op.value, AVERAGE, ref):
                return "mean"
            return "sum" if self.names(op.value, SUM, ref) else None
        return "mean"

    def op_choices(self, expr: ast.expr, ref: Ref) -> set[str]:
        """Horovod reduce ops ``expr`` may be (``a if c else b`` gives both); {"?"} if unknown."""
        if isinstance(expr, ast.IfExp):
            return self.op_choices(expr.body, ref) | self.op_choices(expr.orelse, ref)
        if self.names(expr, AVERAGE, ref):
            return {"Average"}
        return {"Adasum"} if self.names(expr, ADASUM, ref) else {"?"}

    def names(self, expr: ast.expr, names: tuple[str, ...], ref: Ref) -> bool:
        """True when ``expr`` (in the call's scope) is one of the canonical ``names``."""
        through_handle = self.handle_names.get(id(expr))
        if through_handle is not None:
            return through_handle in names
        return self.ctx.index.resolver.qualified(expr, ref.scope) in names

    def keras_optimizer(self, opt: ast.expr, ref: Ref) -> bool:
        """True when ``opt`` is provably a Keras optimizer (a call, or a name only bound to one)."""
        values: list[ast.AST | None] = [opt]
        if isinstance(opt, ast.Name):
            found = self.ctx.index.resolver.bindings_of(opt.id, ref.scope)
            values = [b.value for b in found[1]] if found else [None]
        for value in values:
            callee = self.ctx.index.callee(value) if isinstance(value, ast.Call) else None
            keras = ("tf.keras.optimizers.", "keras.optimizers.")
            if callee is None or not callee.startswith(keras):
                return False
        return True

    def drop_edits(self, call: ast.Call, drop: Sequence[Arg]) -> list[Edit | None]:
        """Edits removing ``drop`` from the call's arguments (never two overlapping edits)."""
        ctx = self.ctx
        if len(drop) == 1:
            return [ctx.remove_argument(call, drop[0])]
        items = ctx.arguments(call)
        edits: list[Edit | None] = []
        i = 0
        while i < len(items):
            if items[i] not in drop:
                i += 1
                continue
            j = i
            while j + 1 < len(items) and items[j + 1] in drop:
                j += 1
            if i > 0:  # a run after a kept argument: from its end
                edits.append(Edit(ctx.span(items[i - 1])[1], ctx.span(items[j])[1], ""))
            elif j + 1 < len(items):  # a leading run: up to the next kept argument
                edits.append(Edit(ctx.span(items[0])[0], ctx.span(items[j + 1])[0], ""))
            else:
                return [None]  # nothing would be left; the callers always keep one argument
            i = j + 1
        return edits

"""Training batches of a ``tf.data`` pipeline get a static shape: ``drop_remainder=True``."""

from __future__ import annotations

import ast
from typing import ClassVar

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.model import Severity
from tf2npu.migrate.names import Scope
from tf2npu.migrate.rule import Example, Rule, register
from tf2npu.migrate.rules._text import is_true

# method or API -> position of drop_remainder
_METHODS = {"batch": 1, "padded_batch": 3}
_APIS = {
    "tf.data.experimental.map_and_batch": 3,
    "tf.contrib.data.map_and_batch": 3,
}
_DROPPED = "The last partial batch of each epoch is now dropped (the NPU needs static shapes)"
_KEPT = (
    "{call} left without drop_remainder=True: this dataset is not proven to be training input "
    "(no unbounded repeat() before the batch, not the input_fn of a train() call), so its last "
    "batch may be partial: a dynamic batch shape, which the NPU compiles a second graph for"
)
_KEPT_FIX = (
    "add drop_remainder=True only for training input: it drops the last partial batch of every "
    "pass, and a dataset with fewer elements than the batch size becomes empty (a predict or "
    "evaluate input_fn would then see no example at all)"
)
# Dataset methods whose result is unbounded when their input is (map, shuffle, ...); take()
# bounds it, repeat(count) too, and anything else is not known.
_KEEPS_UNBOUNDED = frozenset(
    {
        "map", "flat_map", "interleave", "parallel_interleave", "filter", "shuffle", "prefetch",
        "cache", "skip", "shard", "with_options", "map_with_legacy_function", "enumerate",
        "batch", "padded_batch", "unbatch", "apply",
    }
)  # fmt: skip
_REPEATING = frozenset(
    {"tf.data.experimental.shuffle_and_repeat", "tf.contrib.data.shuffle_and_repeat"}
)
_TRAINING_CALLS = ("train",)  # estimator.train(input_fn=...)
_TRAINING_SPECS = ("tf.estimator.TrainSpec",)
_OTHER_CALLS = ("evaluate", "predict", "export_savedmodel", "export_saved_model")
_OTHER_SPECS = ("tf.estimator.EvalSpec",)


@register
class DatasetBatch(Rule):
    """``Dataset.batch`` / ``padded_batch`` / ``map_and_batch`` of training input get
    ``drop_remainder=True``; other batches are left as they are, with a warning.

    The NPU compiles graphs for static shapes, so a batch dimension of ``None`` recompiles for
    the last partial batch. Dropping that batch changes what a script computes, so it is done
    only where the input is proven to be training input: the pipeline repeats without bound
    before the batch (nothing is lost), or the batch is in the ``input_fn`` given to
    ``estimator.train`` / ``tf.estimator.TrainSpec`` and to no evaluate/predict call. Elsewhere
    (``.take(10).batch(32)`` in a predict ``input_fn`` would give no example at all) the call
    stays and a warning names the risk. Only receivers proven to be a ``tf.data.Dataset`` are
    considered; a ``drop_remainder`` already given, by keyword or by position, is respected.
    """

    name: ClassVar[str] = "dataset_batch"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\n"
            "ds = tf.data.TFRecordDataset(files).repeat()\nds = ds.batch(32)\n",
            "import tensorflow as tf\n"
            "ds = tf.data.TFRecordDataset(files).repeat()\n"
            "ds = ds.batch(32, drop_remainder=True)\n",
            "an unbounded training stream: nothing is dropped",
        ),
        Example(
            "import tensorflow as tf\n"
            "def predict_input_fn():\n"
            "    return tf.data.TFRecordDataset(files).take(10).batch(32)\n",
            "import tensorflow as tf\n"
            "def predict_input_fn():\n"
            "    return tf.data.TFRecordDataset(files).take(10).batch(32)\n",
            "not training input: left as is, with a warning (drop_remainder would empty it)",
        ),
        Example(
            "class Batcher:\n    def batch(self, n):\n        return n\nBatcher().batch(3)\n",
            "class Batcher:\n    def batch(self, n):\n        return n\nBatcher().batch(3)\n",
            "a user's own batch() is left alone",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        for method, position in _METHODS.items():
            for mc in ctx.index.method_calls.get(method, ()):
                if ctx.kinds.is_dataset(mc.receiver, mc.scope):
                    self._static(ctx, mc.call, position, mc.receiver, mc.scope)
        for ref in ctx.index.calls_to(*_APIS):
            assert ref.call is not None
            self._static(ctx, ref.call, _APIS[ref.name], _applied_to(ctx, ref.call), ref.scope)

    def _static(
        self,
        ctx: FileContext,
        call: ast.Call,
        position: int,
        receiver: ast.expr | None,
        scope: Scope,
    ) -> None:
        given = ctx.argument(call, position, "drop_remainder")
        if given is not None:
            if not is_true(given):
                ctx.finding(
                    self.name,
                    call,
                    Severity.WARNING,
                    f"drop_remainder={ctx.segment(given)} keeps a partial last batch, "
                    "whose dynamic shape the NPU must recompile for",
                    "use drop_remainder=True unless every sample must be seen",
                )
            return  # fmt: skip
        if any(k.arg is None for k in call.keywords) or any(
            isinstance(a, ast.Starred) for a in call.args
        ):
            return
        unbounded = receiver is not None and _unbounded(ctx, receiver, scope, _stmt(ctx, call))
        if not (unbounded or _is_training_input(ctx, call)):
            ctx.finding(self.name, call, Severity.WARNING,
                        _KEPT.format(call=_callee_text(ctx, call)), _KEPT_FIX)  # fmt: skip
            return
        if ctx.patch(self.name, call, [ctx.add_keyword(call, "drop_remainder", "True")]):
            ctx.finding(self.name, call, Severity.INFO, _DROPPED,
                        "keep it: static shapes are what the NPU compiles for")  # fmt: skip


def _callee_text(ctx: FileContext, call: ast.Call) -> str:
    func = call.func
    return f".{func.attr}(...)" if isinstance(func, ast.Attribute) else f"{ctx.segment(func)}(...)"


def _stmt(ctx: FileContext, node: ast.AST) -> ast.stmt:
    return ctx.index.statement_of(node)


def _applied_to(ctx: FileContext, call: ast.Call) -> ast.expr | None:
    """``ds`` in ``ds.apply(map_and_batch(...))``; None when the call is not applied there."""
    parent = ctx.index.parent(call)
    if (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr == "apply"
        and call in parent.args
    ):
        return parent.func.value
    return None


def _unbounded(ctx: FileContext, expr: ast.expr, scope: Scope, stmt: ast.stmt) -> bool:
    """True when the dataset ``expr`` (read at ``stmt``) provably never ends: a ``repeat()``
    without count, seen through methods that keep a stream unbounded, and through assignments
    earlier in the same block."""
    if isinstance(expr, ast.Name):
        value = _previous_value(ctx, expr.id, stmt)
        return value is not None and _unbounded(ctx, value[0], scope, value[1])
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return False
    method, receiver = expr.func.attr, expr.func.value
    if method == "repeat":
        count = ctx.argument(expr, 0, "count")
        return count is None or (isinstance(count, ast.Constant) and count.value in (None, -1))
    if method == "apply" and expr.args and isinstance(expr.args[0], ast.Call):
        applied = expr.args[0]
        if ctx.index.callee(applied) in _REPEATING:
            count = ctx.argument(applied, 1, "count")
            if count is None or (isinstance(count, ast.Constant) and count.value in (None, -1)):
                return True
    return method in _KEEPS_UNBOUNDED and _unbounded(ctx, receiver, scope, stmt)


def _previous_value(
    ctx: FileContext, name: str, stmt: ast.stmt
) -> tuple[ast.expr, ast.stmt] | None:
    """The value of the last ``name = ...`` before ``stmt`` in its block, when nothing else in
    between (a nested ``if``, a loop) may rebind ``name``."""
    block = ctx.block_of(stmt)
    index = next((i for i, s in enumerate(block) if s is stmt), None)
    if index is None:
        return None
    for earlier in reversed(block[:index]):
        if (
            isinstance(earlier, ast.Assign)
            and len(earlier.targets) == 1
            and isinstance(earlier.targets[0], ast.Name)
            and earlier.targets[0].id == name
        ):
            return earlier.value, earlier
        if any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
            for n in ast.walk(earlier)
        ):
            return None
    return None


def _is_training_input(ctx: FileContext, call: ast.Call) -> bool:
    """The batch is in a function that is (or whose builder is) named in the ``input_fn`` of
    an ``estimator.train`` / ``TrainSpec`` call and of no evaluate/predict call."""
    names = _enclosing_function_names(ctx, call)
    if not names:
        return False
    training, other = _input_fn_names(ctx)
    return bool(names & training) and not names & other


def _enclosing_function_names(ctx: FileContext, node: ast.AST) -> set[str]:
    """The names of the functions around ``node`` (an ``input_fn`` and its builder)."""
    names: set[str] = set()
    parent = ctx.index.parent(node)
    while parent is not None:
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(parent.name)
        parent = ctx.index.parent(parent)
    return names


def _input_fn_names(ctx: FileContext) -> tuple[set[str], set[str]]:
    """Names read in the ``input_fn`` arguments of training calls and of the other calls."""
    training: set[str] = set()
    other: set[str] = set()
    for node in ast.walk(ctx.tree):
        if not isinstance(node, ast.Call):
            continue
        value = ctx.argument(node, 0, "input_fn")
        if value is None:
            continue
        callee = ctx.index.callee(node)
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        read = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        if method in _TRAINING_CALLS or callee in _TRAINING_SPECS:
            training |= read
        elif method in _OTHER_CALLS or callee in _OTHER_SPECS:
            other |= read
    return training, other

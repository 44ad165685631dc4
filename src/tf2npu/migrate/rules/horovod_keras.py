"""Keras Horovod's callbacks and ``load_model`` become plain Keras code over the NPU API."""

from __future__ import annotations

import ast
from typing import ClassVar

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit
from tf2npu.migrate.index import Ref
from tf2npu.migrate.model import Severity
from tf2npu.migrate.names import statements
from tf2npu.migrate.options import Distributed
from tf2npu.migrate.rule import Example, Rule, register
from tf2npu.migrate.rules import _keras_callbacks as helpers
from tf2npu.migrate.rules._keras_names import KerasNames, keras_names, standalone_keras
from tf2npu.migrate.rules._patches import clash

_CALLBACKS = "hvd.keras.callbacks."
_LOAD_MODEL = "hvd.keras.load_model"
# Horovod callback -> (helper class, the keywords it accepts; Horovod's ``device=`` is dropped).
_REPLACEMENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "MetricAverageCallback": (helpers.METRIC_AVERAGE, ()),
    "LearningRateScheduleCallback": (helpers.SCHEDULE, (
        "initial_lr", "multiplier", "start_epoch", "end_epoch", "staircase",
        "momentum_correction", "steps_per_epoch",
    )),
    "LearningRateWarmupCallback": (helpers.WARMUP, (
        "initial_lr", "warmup_epochs", "momentum_correction", "steps_per_epoch", "verbose",
    )),
}  # fmt: skip
_LOAD_DROPPED = ("compression",)


@register
class HorovodKeras(Rule):
    """Keras Horovod callbacks with no Ascend counterpart become plain Keras callbacks.

    Runs before the ``horovod`` rule, with the same ``--distributed`` modes. Ascend has no
    metric-averaging or learning-rate callback, so the migrated file gets a small Keras callback
    class (written against the file's own ``keras`` or ``tf.keras``) that does what Horovod's
    documentation says its callback does, and the call is renamed to it:
    ``hvd.callbacks.MetricAverageCallback()`` -> ``NpuMetricAverageCallback()`` (each epoch's
    logged metrics averaged over the ranks with one ``npu_allreduce``),
    ``LearningRateWarmupCallback(...)`` -> ``NpuLearningRateWarmupCallback(...)`` and
    ``LearningRateScheduleCallback(...)`` -> ``NpuLearningRateScheduleCallback(...)`` (same
    keyword arguments; Horovod's argument order changed between releases, so positional
    arguments are left for the ``horovod`` rule to report). ``model = hvd.load_model(path)``
    becomes Keras' ``load_model`` followed by ``npu_distributed_optimizer_wrapper(
    model.optimizer)``, which makes the restored optimizer average gradients as Horovod's does;
    ``compression=`` is dropped and reported.
    """

    name: ClassVar[str] = "horovod_keras"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import keras\nimport tensorflow as tf\nimport horovod.keras as hvd\n"
            "model = hvd.load_model(path)\n",
            "from npu_bridge.npu_init import *\nimport keras\nimport tensorflow as tf\n"
            "model = keras.models.load_model(path)\n"
            "npu_distributed_optimizer_wrapper(model.optimizer)\n",
            "the restored optimizer averages gradients over the ranks",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        if "horovod" not in ctx.text:
            return
        if ctx.options.distributed in (Distributed.NONE, Distributed.TF_STRATEGY):
            return  # the horovod rule reports every use
        imports = [
            s
            for s in statements(ctx.tree)
            if isinstance(s, (ast.Import, ast.ImportFrom)) and _imports_horovod(s)
        ]
        standalone = standalone_keras(imports)
        for ref in ctx.index.refs:
            if ref.call is None or ref.kind != "call":
                continue
            names = keras_names(ctx, ref.scope, standalone)
            if names is None:
                continue  # `tf` is something else here: the horovod rule reports the use
            if ref.name.startswith(_CALLBACKS) and ref.name[len(_CALLBACKS) :] in _REPLACEMENTS:
                _callback(self.name, ctx, ref, ref.call, names)
            elif ref.name == _LOAD_MODEL:
                _load_model(self.name, ctx, ref, ref.call, names)


def _imports_horovod(stmt: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(stmt, ast.ImportFrom):
        return stmt.level == 0 and (stmt.module or "").split(".")[0] == "horovod"
    return any(a.name.split(".")[0] == "horovod" for a in stmt.names)


def _callback(rule: str, ctx: FileContext, ref: Ref, call: ast.Call, names: KerasNames) -> None:
    horovod_name = ref.name[len(_CALLBACKS) :]
    helper, accepted = _REPLACEMENTS[horovod_name]
    if call.args or any(k.arg not in (*accepted, "device") for k in call.keywords):
        return  # positional, **kwargs or unknown options: reported by the horovod rule
    kept = [k for k in call.keywords if k.arg != "device"]
    args = ", ".join(ctx.segment(k) for k in kept)
    edits: list[Edit | None] = [ctx.replace(call, f"{helper}({args})")]
    if len(kept) == len(call.keywords):
        # Keep the call's own layout: rename, and move lines aligned with the `(` along.
        edits = [ctx.replace(ref.node, helper), *_realign(ctx, call, len(helper))]
    if clash(ctx, edits) is not None or not ctx.patch(rule, call, edits):
        return
    for needed in helpers.NEEDS[helper]:
        ctx.need_helper(needed, helpers.helper_lines(needed, names.keras, names.tf))
    names.import_tf(ctx)
    ctx.finding(rule, call, Severity.INFO,
                f"hvd.callbacks.{horovod_name} -> {helper}, a Keras callback defined in this "
                "file: Ascend has no such callback",
                f"{helper} follows Horovod's documented behaviour; check it if the script "
                "relied on details of a particular Horovod release")  # fmt: skip


def _realign(ctx: FileContext, call: ast.Call, new_length: int) -> list[Edit]:
    """Continuation lines aligned just after the call's ``(`` follow a renamed callee."""
    paren = ctx.open_paren(call)
    if paren is None or call.end_lineno is None or call.end_lineno == call.lineno:
        return []
    column = paren - ctx.source.line_start(call.lineno) + 1
    start, end = ctx.span(call.func)
    new_column = column + new_length - (end - start)
    if new_column < 1:
        return []
    edits: list[Edit] = []
    for line in range(call.lineno + 1, call.end_lineno + 1):
        text = ctx.source.line_text(line)
        if line not in ctx.string_lines and len(text) - len(text.lstrip(" ")) == column:
            edits += ctx.reindent(line, line, " " * column, " " * new_column)
    return edits


def _load_model(rule: str, ctx: FileContext, ref: Ref, call: ast.Call, names: KerasNames) -> None:
    stmt = ctx.index.statement_of(call)
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and stmt.value is call):
        return
    target = stmt.targets[0]
    if not isinstance(target, ast.Name):
        return
    model = target.id
    if len(call.args) > 1 or any(k.arg not in ("filepath", "custom_objects", *_LOAD_DROPPED)
                                 for k in call.keywords):  # fmt: skip
        return
    dropped = [k for k in call.keywords if k.arg in _LOAD_DROPPED]
    edits: list[Edit | None] = [ctx.replace(ref.node, f"{names.keras}.models.load_model")]
    edits += [ctx.remove_argument(call, k) for k in dropped]
    wrap = f"npu_distributed_optimizer_wrapper({model}.optimizer)"
    edits.append(ctx.insert_lines_after(stmt, [wrap]))
    if len(dropped) > 1 or clash(ctx, edits) is not None or not ctx.patch(rule, call, edits):
        return
    ctx.need_import()
    if names.keras.startswith(f"{names.tf}."):
        names.import_tf(ctx)
    extra = "; compression= removed: HCCL does not compress" if dropped else ""
    ctx.finding(rule, call, Severity.INFO,
                f"hvd.load_model -> {names.keras}.models.load_model, then "
                f"npu_distributed_optimizer_wrapper({model}.optimizer) so the restored optimizer "
                f"averages gradients over the ranks{extra}")  # fmt: skip

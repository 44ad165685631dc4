"""Estimator scripts move to the NPU estimator classes."""

from __future__ import annotations

import ast
from typing import ClassVar

from tf2npu.config.run_config import NOT_IN_NPU_RUN_CONFIG, RUN_CONFIG_PARAMS
from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit
from tf2npu.migrate.kinds import RUN_CONFIG
from tf2npu.migrate.model import Severity
from tf2npu.migrate.names import Scope
from tf2npu.migrate.rule import Example, Rule, register
from tf2npu.migrate.rules._npu_config import npu_option_keywords

# RUN_CONFIG_PARAMS is in TF 1.15 order: positional arguments become keywords, because
# NPURunConfig's own order starts with iterations_per_loop.
ESTIMATOR_PARAMS = ("model_fn", "model_dir", "config", "params", "warm_start_from")
CANNED_ESTIMATORS = tuple(
    f"tf.estimator.{name}"
    for name in (
        "DNNClassifier", "DNNRegressor", "DNNEstimator", "LinearClassifier", "LinearRegressor",
        "LinearEstimator", "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor",
        "DNNLinearCombinedEstimator", "BoostedTreesClassifier", "BoostedTreesRegressor",
        "BaselineClassifier", "BaselineRegressor", "BaselineEstimator",
    )
)  # fmt: skip


@register
class Estimator(Rule):
    """``RunConfig`` / ``Estimator`` / ``EstimatorSpec`` become ``NPURunConfig`` / ``NPUEstimator``
    / ``NPUEstimatorSpec``.

    Every ``RunConfig`` argument is kept (positional ones become keywords, since NPURunConfig
    orders its parameters differently); the few that NPURunConfig does not take are removed and
    reported. ``NPUEstimator`` requires an ``NPURunConfig``: an ``Estimator`` whose config is
    built in the file (or absent) becomes an ``NPUEstimator``; one whose config comes from
    elsewhere keeps its class and gets ``config=npu_run_config_init(run_config=<config>)``, as do
    canned estimators. ``--precision-mode`` and ``--mix-compile`` become NPURunConfig arguments.
    """

    name: ClassVar[str] = "estimator"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\n"
            "config = tf.estimator.RunConfig('/tmp/m', save_checkpoints_steps=100)\n"
            "est = tf.estimator.Estimator(model_fn=model_fn, config=config)\n",
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
            "config = NPURunConfig(model_dir='/tmp/m', save_checkpoints_steps=100)\n"
            "est = NPUEstimator(model_fn=model_fn, config=config)\n",
        ),
        Example(
            "import tensorflow as tf\n"
            "def build(run_config):\n"
            "    return tf.estimator.DNNClassifier([10], feature_columns=cols, "
            "config=run_config)\n",
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
            "def build(run_config):\n"
            "    return tf.estimator.DNNClassifier([10], feature_columns=cols, "
            "config=npu_run_config_init(run_config=run_config))\n",
            "a canned estimator",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        for ref in ctx.index.calls_to("tf.estimator.RunConfig"):
            assert ref.call is not None
            self._run_config(ctx, ref.call, ref.node)
        for ref in ctx.index.calls_to("tf.estimator.Estimator"):
            assert ref.call is not None
            self._estimator(ctx, ref.call, ref.node, ref.scope)
        for ref in ctx.index.calls_to("tf.estimator.EstimatorSpec"):
            if ref.call is not None and ctx.patch(
                self.name, ref.call, [ctx.replace(ref.node, "NPUEstimatorSpec")]
            ):
                ctx.need_import()
        for ref in ctx.index.calls_to(*CANNED_ESTIMATORS):
            assert ref.call is not None
            self._init_run_config(ctx, ref.call, position=None)
        for ref in ctx.index.refs:
            if ref.kind == "base" and ref.name == "tf.estimator.Estimator":
                ctx.finding(self.name, ref.node, Severity.WARNING,
                            "a subclass of tf.estimator.Estimator runs without the NPU settings",
                            "derive from NPUEstimator and pass an NPURunConfig")  # fmt: skip

    def _run_config(self, ctx: FileContext, call: ast.Call, callee: ast.expr) -> None:
        if any(isinstance(a, ast.Starred) for a in call.args):
            ctx.finding(
                self.name,
                call,
                Severity.WARNING,
                "RunConfig(*args): not rewritten",
                "pass its arguments by keyword",
            )
            return  # fmt: skip
        edits: list[Edit | None] = [
            ctx.replace(callee, "NPURunConfig"),
            *ctx.keywordize(call, RUN_CONFIG_PARAMS),
        ]
        names = {k.arg for k in call.keywords} | set(RUN_CONFIG_PARAMS[: len(call.args)])
        for kw in call.keywords:
            if kw.arg in NOT_IN_NPU_RUN_CONFIG:
                edits.append(ctx.remove_argument(call, kw))
                ctx.finding(self.name, kw, Severity.WARNING,
                            f"RunConfig argument {kw.arg}= removed: NPURunConfig does not take it",
                            "the NPU adapter manages devices and sessions itself")  # fmt: skip
        for key, value in npu_option_keywords(ctx):
            edits.append(ctx.set_keyword(call, key, value))
        if not ctx.patch(self.name, call, edits):
            return
        ctx.need_import()
        if "save_checkpoints_steps" not in names and "save_checkpoints_secs" not in names:
            ctx.finding(self.name, call, Severity.INFO,
                        "NPURunConfig saves a checkpoint every 100 steps when neither "
                        "save_checkpoints_steps nor save_checkpoints_secs is set "
                        "(RunConfig: every 600 s)", "set one of them to choose")  # fmt: skip

    def _estimator(self, ctx: FileContext, call: ast.Call, callee: ast.expr, scope: Scope) -> None:
        config = ctx.argument(call, 2, "config")
        absent = config is None or (isinstance(config, ast.Constant) and config.value is None)
        if config is not None and not absent and ctx.kinds.of(config, scope) != RUN_CONFIG:
            self._init_run_config(ctx, call, position=2)
            return
        edits: list[Edit | None] = [
            ctx.replace(callee, "NPUEstimator"),
            *ctx.keywordize(call, ESTIMATOR_PARAMS, 4),
        ]
        options = ", ".join(f"{k}={v}" for k, v in npu_option_keywords(ctx))
        if config is None:
            edits.append(ctx.add_keyword(call, "config", f"NPURunConfig({options})"))
        elif absent:
            edits.append(ctx.replace(config, f"NPURunConfig({options})"))
        if ctx.patch(self.name, call, edits):
            ctx.need_import()

    def _init_run_config(self, ctx: FileContext, call: ast.Call, position: int | None) -> None:
        config = ctx.argument(call, position, "config") if position is not None else None
        config = config or ctx.argument(call, None, "config")
        if config is None:
            edit = ctx.add_keyword(call, "config", "npu_run_config_init()")
            ok = ctx.patch(self.name, call, [edit])
        elif isinstance(config, ast.Call) and _bare(config.func) == "npu_run_config_init":
            return
        else:
            ok = ctx.patch(
                self.name, call, ctx.wrap(config, "npu_run_config_init(run_config=", ")")
            )
        if ok:
            ctx.need_import()
            if npu_option_keywords(ctx):
                ctx.finding(self.name, call, Severity.WARNING,
                            "--precision-mode/--mix-compile not applied to this estimator: its "
                            "config is not an NPURunConfig", "build its config with "
                            "NPURunConfig(precision_mode=...) and use NPUEstimator")  # fmt: skip


def _bare(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else None

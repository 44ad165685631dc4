"""TPUEstimator scripts (the ``use_tpu=False`` path) move to the NPU estimator classes."""

from __future__ import annotations

import ast
import re
from typing import ClassVar

from tf2npu.config.run_config import NOT_IN_NPU_RUN_CONFIG
from tf2npu.migrate.context import Arg, FileContext
from tf2npu.migrate.edits import Edit
from tf2npu.migrate.kinds import RUN_CONFIG
from tf2npu.migrate.model import Severity
from tf2npu.migrate.names import Scope, _dotted
from tf2npu.migrate.rule import Example, Rule, register
from tf2npu.migrate.rules._npu_config import mix_compile, npu_option_keywords
from tf2npu.migrate.rules._text import as_operand

RULE = "tpu_estimator"

# Canonical spellings of the modules the TPU estimator classes are reached through:
# ``tf.contrib.tpu``, ``tf.compat.v1.estimator.tpu`` and the implementation modules.
_ESTIMATOR_MODULES = (
    "tf.contrib.tpu", "tf.estimator.tpu", "tf.contrib.tpu.python.tpu.tpu_estimator",
    "tf.python.tpu.tpu_estimator", "tf.estimator.python.estimator.tpu.tpu_estimator",
)  # fmt: skip
_CONFIG_MODULES = (
    "tf.contrib.tpu", "tf.estimator.tpu", "tf.contrib.tpu.python.tpu.tpu_config",
    "tf.python.tpu.tpu_config", "tf.estimator.python.estimator.tpu.tpu_config",
)  # fmt: skip
TPU_ESTIMATORS = tuple(f"{m}.TPUEstimator" for m in _ESTIMATOR_MODULES)
TPU_ESTIMATOR_SPECS = tuple(f"{m}.TPUEstimatorSpec" for m in _ESTIMATOR_MODULES)
TPU_RUN_CONFIGS = tuple(f"{m}.RunConfig" for m in _CONFIG_MODULES)
TPU_CONFIGS = tuple(f"{m}.TPUConfig" for m in _CONFIG_MODULES)
CLUSTER_RESOLVERS = (
    "tf.contrib.cluster_resolver.TPUClusterResolver",
    "tf.distribute.cluster_resolver.TPUClusterResolver",
)
CROSS_SHARD_OPTIMIZERS = ("tf.contrib.tpu.CrossShardOptimizer", "tf.tpu.CrossShardOptimizer")
_TPU_KERAS = ("tf.contrib.tpu.TPUDistributionStrategy", "tf.contrib.tpu.keras_to_tpu_model")

# Parameters in signature order (TF 1.15), so positional arguments can be named.
TPU_ESTIMATOR_PARAMS = (
    "model_fn", "model_dir", "config", "params", "use_tpu", "train_batch_size", "eval_batch_size",
    "predict_batch_size", "batch_axis", "eval_on_tpu", "export_to_tpu", "export_to_cpu",
    "warm_start_from", "embedding_config_spec", "export_saved_model_api_version",
)  # fmt: skip
_KEPT_BY_NPU_ESTIMATOR = frozenset({"model_fn", "model_dir", "config", "params", "warm_start_from"})
TPU_SPEC_PARAMS = (
    "mode", "predictions", "loss", "train_op", "eval_metrics", "export_outputs", "scaffold_fn",
    "host_call", "training_hooks", "evaluation_hooks", "prediction_hooks",
)  # fmt: skip
_SAME_SPEC_SLOTS = 4  # mode, predictions, loss, train_op: same slots in NPUEstimatorSpec
# tpu.RunConfig(tpu_config=None, evaluation_master=None, master=None, cluster=None, **kwargs):
# everything else is passed on to tf.estimator.RunConfig.
_TPU_RUN_CONFIG_OWN = ("tpu_config", "evaluation_master", "master", "cluster")

METRICS_HELPER = "npu_eval_metric_ops"
_METRICS_HELPER_LINES = [
    f"def {METRICS_HELPER}(eval_metrics):",
    '    """TPUEstimatorSpec eval_metrics=(metric_fn, tensors) as eval_metric_ops (by tf2npu)."""',
    "    if eval_metrics is None:",
    "        return None",
    "    metric_fn, tensors = eval_metrics",
    "    if isinstance(tensors, dict):",
    "        return metric_fn(**tensors)",
    "    return metric_fn(*tensors)",
]
_ARG_LINE_REST = re.compile(r"[ \t\f]*,?[ \t\f]*(?:\r\n|\r|\n)")
_CLOSING = re.compile(r"[ \t\f]*\)")
_COMMA = re.compile(r"[ \t\f]*,")

Bound = dict[str, tuple[Arg, ast.expr]]


@register
class TpuEstimator(Rule):
    """``TPUEstimator`` / ``tpu.RunConfig`` / ``TPUEstimatorSpec`` become ``NPUEstimator`` /
    ``NPURunConfig`` / ``NPUEstimatorSpec``, following TPUEstimator's ``use_tpu=False`` path.

    ``tpu.RunConfig``: the ``tf.estimator.RunConfig`` arguments are kept; the TPU-only ones
    (``tpu_config``, ``master``, ``evaluation_master``, ``cluster``) are removed and reported.
    ``TPUConfig(iterations_per_loop=N)`` is not carried over: TPUEstimator ignores it off-TPU,
    and on the NPU it would run N steps per ``session.run`` (the finding says when to add it).

    ``TPUEstimator``: on the CPU path it passed the batch size of the running mode to
    ``model_fn`` and ``input_fn`` as ``params["batch_size"]`` (and ``params["use_tpu"] = False``
    to ``model_fn``), so the port passes ``params=dict(<params>, batch_size=<train_batch_size>,
    use_tpu=False)``; a different eval/predict batch size is reported. The TPU-only arguments
    (``use_tpu``, the batch sizes, ``eval_on_tpu``, ``export_to_tpu``, ...) are removed and
    reported; ``warm_start_from`` is kept.

    ``TPUEstimatorSpec``: ``eval_metrics=(metric_fn, tensors)`` becomes
    ``eval_metric_ops=metric_fn(*tensors)`` (``**tensors`` for a dict; a helper
    ``npu_eval_metric_ops`` when the value is not visible in the file) and
    ``scaffold_fn=fn`` becomes ``scaffold=fn() if fn else None`` — exactly what TPUEstimator does
    on the CPU path. ``TPUClusterResolver``, ``CrossShardOptimizer`` and TPU Keras APIs are
    reported.
    """

    name: ClassVar[str] = RULE
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\n"
            "run_config = tf.contrib.tpu.RunConfig(\n"
            "    cluster=tpu_cluster_resolver,\n"
            "    master=FLAGS.master,\n"
            "    model_dir=FLAGS.output_dir,\n"
            "    save_checkpoints_steps=FLAGS.save_checkpoints_steps,\n"
            "    tpu_config=tf.contrib.tpu.TPUConfig(\n"
            "        iterations_per_loop=FLAGS.iterations_per_loop,\n"
            "        num_shards=FLAGS.num_tpu_cores))\n"
            "estimator = tf.contrib.tpu.TPUEstimator(\n"
            "    use_tpu=FLAGS.use_tpu,\n"
            "    model_fn=model_fn,\n"
            "    config=run_config,\n"
            "    train_batch_size=FLAGS.train_batch_size,\n"
            "    eval_batch_size=FLAGS.train_batch_size)\n",
            "from npu_bridge.npu_init import *\n"
            "import tensorflow as tf\n"
            "run_config = NPURunConfig(\n"
            "    model_dir=FLAGS.output_dir,\n"
            "    save_checkpoints_steps=FLAGS.save_checkpoints_steps)\n"
            "estimator = NPUEstimator(\n"
            "    model_fn=model_fn,\n"
            "    config=run_config,\n"
            "    params=dict(batch_size=FLAGS.train_batch_size, use_tpu=False))\n",
            "BERT's run config and estimator",
        ),
        Example(
            "import tensorflow as tf\n"
            "def model_fn(features, labels, mode, params):\n"
            "    scaffold_fn = None\n"
            "    eval_metrics = (metric_fn, [per_example_loss, label_ids, logits])\n"
            "    return tf.contrib.tpu.TPUEstimatorSpec(\n"
            "        mode=mode,\n"
            "        loss=total_loss,\n"
            "        eval_metrics=eval_metrics,\n"
            "        scaffold_fn=scaffold_fn)\n",
            "from npu_bridge.npu_init import *\n"
            "import tensorflow as tf\n"
            "def model_fn(features, labels, mode, params):\n"
            "    scaffold_fn = None\n"
            "    eval_metrics = (metric_fn, [per_example_loss, label_ids, logits])\n"
            "    return NPUEstimatorSpec(\n"
            "        mode=mode,\n"
            "        loss=total_loss,\n"
            "        eval_metric_ops=eval_metrics[0](*eval_metrics[1]),\n"
            "        scaffold=scaffold_fn() if scaffold_fn else None)\n",
            "BERT's model_fn",
        ),
        Example(
            "import tensorflow.compat.v1 as tf\n"
            "spec = tf.estimator.tpu.TPUEstimatorSpec(\n"
            "    mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))\n",
            "from npu_bridge.npu_init import *\n"
            "import tensorflow.compat.v1 as tf\n"
            "spec = NPUEstimatorSpec(\n"
            "    mode, loss=loss, eval_metric_ops=metric_fn(labels, logits))\n",
            "eval_metrics given as a literal",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        dropped_clusters: list[ast.expr] = []
        for ref in ctx.index.calls_to(*TPU_RUN_CONFIGS):
            assert ref.call is not None
            dropped_clusters += _port_run_config(ctx, ref.call, ref.node, ref.scope)
        for ref in ctx.index.calls_to(*TPU_ESTIMATORS):
            assert ref.call is not None
            _port_estimator(ctx, ref.call, ref.node, ref.scope)
        for ref in ctx.index.calls_to(*TPU_ESTIMATOR_SPECS):
            assert ref.call is not None
            _port_spec(ctx, ref.call, ref.node, ref.scope)
        removed = _remove_unused_resolvers(ctx, dropped_clusters)
        _report_tpu_only(ctx, removed)


# -- tpu.RunConfig -----------------------------------------------------------------------------
def _port_run_config(
    ctx: FileContext, call: ast.Call, callee: ast.expr, scope: Scope
) -> list[ast.expr]:
    """Rewrite one ``tpu.RunConfig``; returns the ``cluster=`` value it removed, if any."""
    bound = _bind(call, _TPU_RUN_CONFIG_OWN)
    if bound is None:
        ctx.finding(RULE, call, Severity.WARNING,
                    "tpu.RunConfig(*args/**kwargs) not rewritten: its TPU-only arguments cannot be "
                    "told apart, and NPUEstimator requires an NPURunConfig",
                    "pass the arguments by keyword, or build NPURunConfig(...) by hand without "
                    "tpu_config, master, evaluation_master and cluster")  # fmt: skip
        return []
    doomed = [item for name, (item, _) in bound.items() if name in _TPU_RUN_CONFIG_OWN]
    unsupported = [item for name, (item, _) in bound.items() if name in NOT_IN_NPU_RUN_CONFIG]
    options = npu_option_keywords(ctx)
    added = [f"{k}={v}" for k, v in options if k not in bound]
    edits: list[Edit | None] = [ctx.replace(callee, "NPURunConfig")]
    edits += [ctx.replace(bound[k][1], v) for k, v in options if k in bound]
    edits += _drop_arguments(ctx, call, doomed + unsupported, ", ".join(added) or None)
    if not ctx.patch(RULE, call, edits):
        return []
    ctx.need_import()
    if doomed:
        names = ", ".join(n for n, (item, _) in bound.items() if item in doomed)
        ctx.finding(RULE, call, Severity.INFO, f"TPU-only argument(s) removed: {names}",
                    "nothing to do: the NPU adapter manages its devices itself")  # fmt: skip
    for item in unsupported:
        assert isinstance(item, ast.keyword)
        ctx.finding(RULE, item, Severity.WARNING,
                    f"RunConfig argument {item.arg}= removed: NPURunConfig does not take it",
                    "the NPU adapter manages devices and sessions itself")  # fmt: skip
    if "tpu_config" in bound:
        _report_iterations(ctx, bound["tpu_config"][1], scope)
    if "save_checkpoints_steps" not in bound and "save_checkpoints_secs" not in bound:
        ctx.finding(RULE, call, Severity.INFO,
                    "NPURunConfig saves a checkpoint every 100 steps when neither "
                    "save_checkpoints_steps nor save_checkpoints_secs is set "
                    "(RunConfig: every 600 s)", "set one of them to choose")  # fmt: skip
    return [bound["cluster"][1]] if "cluster" in bound else []


def _report_iterations(ctx: FileContext, tpu_config: ast.expr, scope: Scope) -> None:
    """Say why ``TPUConfig(iterations_per_loop=N)`` was not carried over, and when to add it."""
    config = _single_value(ctx, tpu_config, scope)
    if not (isinstance(config, ast.Call) and ctx.index.callee(config) in TPU_CONFIGS):
        return
    loops = ctx.argument(config, 0, "iterations_per_loop")
    if loops is None or (isinstance(loops, ast.Constant) and loops.value == 1):
        return
    text = ctx.segment(loops)
    if mix_compile(ctx):
        fix = "keep the default 1: mix_compile_mode=True requires iterations_per_loop=1"
    else:
        fix = (f"for speed, add iterations_per_loop={text} to this NPURunConfig (as the Ascend "
               "ModelZoo BERT port does) once the training input has static shapes "
               "(drop_remainder=True) and the step counts (max_steps, save_checkpoints_steps) "
               "are multiples of it; hooks then run once per loop")  # fmt: skip
    ctx.finding(RULE, loops, Severity.INFO,
                f"TPUConfig(iterations_per_loop={text}) not carried over: TPUEstimator ignores it "
                "when use_tpu is False, and on the NPU it would run that many steps per "
                "session.run", fix)  # fmt: skip


# -- TPUEstimator ------------------------------------------------------------------------------
def _port_estimator(ctx: FileContext, call: ast.Call, callee: ast.expr, scope: Scope) -> None:
    bound = _bind(call, TPU_ESTIMATOR_PARAMS)
    if bound is None:
        ctx.finding(RULE, call, Severity.WARNING,
                    "TPUEstimator(*args/**kwargs) not rewritten: its TPU-only arguments cannot be "
                    "told apart", "pass the arguments by keyword, or port it by hand to "
                    "NPUEstimator(model_fn=..., config=NPURunConfig(...), "
                    "params=dict(batch_size=<train_batch_size>))")  # fmt: skip
        return
    batch = _batch_size(bound)
    injected = (f"batch_size={ctx.segment(batch)}, " if batch else "") + "use_tpu=False"
    edits: list[Edit | None] = [ctx.replace(callee, "NPUEstimator")]
    doomed = [item for name, (item, _) in bound.items() if name not in _KEPT_BY_NPU_ESTIMATOR]
    slot: str | None = None
    params = bound.get("params")
    if params is None:
        slot = f"params=dict({injected})"
    elif isinstance(params[1], ast.Constant) and params[1].value is None:
        edits.append(ctx.replace(params[1], f"dict({injected})"))
    else:
        edits += ctx.wrap(params[1], "dict(", f", {injected})")
    options = ", ".join(f"{k}={v}" for k, v in npu_option_keywords(ctx))
    if "config" not in bound:
        config = f"config=NPURunConfig({options})"
        slot = f"{slot}, {config}" if slot else config
    elif isinstance(bound["config"][1], ast.Constant) and bound["config"][1].value is None:
        edits.append(ctx.replace(bound["config"][1], f"NPURunConfig({options})"))
    warm = bound.get("warm_start_from")
    if warm is not None and warm[0] is warm[1]:  # positional: its slot differs in NPUEstimator
        edits.append(ctx.insert_before(warm[1], "warm_start_from="))
    edits += _drop_arguments(ctx, call, doomed, slot)
    if not ctx.patch(RULE, call, edits):
        return
    ctx.need_import()
    _report_estimator(ctx, call, bound, scope)


def _batch_size(bound: Bound) -> ast.expr | None:
    """The batch size the port passes: the training one, else the first other one given."""
    for name in ("train_batch_size", "eval_batch_size", "predict_batch_size"):
        value = bound.get(name)
        if value is not None and not _is_none(value[1]):
            return value[1]
    return None


def _report_estimator(ctx: FileContext, call: ast.Call, bound: Bound, scope: Scope) -> None:
    removed = [n for n in bound if n not in _KEPT_BY_NPU_ESTIMATOR]
    if removed:
        ctx.finding(RULE, call, Severity.INFO,
                    f"TPU-only argument(s) removed: {', '.join(removed)}; the batch size now "
                    "reaches model_fn and input_fn as params['batch_size'], as TPUEstimator "
                    "passed it", "nothing to do")  # fmt: skip
    _report_use_tpu(ctx, call, bound)
    _report_batch_sizes(ctx, call, bound)
    params = bound.get("params")
    if params is not None and not _is_none(params[1]) and not _is_dict(ctx, params[1], scope):
        text = ctx.segment(params[1])
        ctx.finding(RULE, params[1], Severity.WARNING,
                    f"params={text} is merged with dict(...): this assumes it is a dict",
                    f"if it is an HParams object, pass dict({text}.values(), ...)")  # fmt: skip
    config = bound.get("config")
    built = config is None or _is_none(config[1]) or ctx.kinds.of(config[1], scope) == RUN_CONFIG
    if config is not None and not built:
        text = ctx.segment(config[1])
        ctx.finding(RULE, config[1], Severity.WARNING,
                    f"NPUEstimator requires an NPURunConfig, and config={text} is not built in "
                    "this file", "make sure it is an NPURunConfig: migrate the file that builds "
                    "it (tf2npu turns tpu.RunConfig and RunConfig into NPURunConfig)")  # fmt: skip
    spec = bound.get("embedding_config_spec")
    if spec is not None and not _is_none(spec[1]):
        ctx.finding(RULE, spec[1], Severity.WARNING,
                    "embedding_config_spec removed: TPU embeddings have no NPU equivalent",
                    "build the embeddings with tf.feature_column.embedding_column or "
                    "tf.nn.embedding_lookup in model_fn")  # fmt: skip


def _report_use_tpu(ctx: FileContext, call: ast.Call, bound: Bound) -> None:
    use_tpu = bound.get("use_tpu")
    if use_tpu is not None and isinstance(use_tpu[1], ast.Constant) and not use_tpu[1].value:
        return
    if use_tpu is None or isinstance(use_tpu[1], ast.Constant):
        said = "use_tpu=True" if use_tpu is not None else "use_tpu defaults to True"
        ctx.finding(RULE, call, Severity.WARNING,
                    f"{said}: this estimator ran on a TPU; the NPU port follows TPUEstimator's "
                    "use_tpu=False path, where params['batch_size'] is the global batch size",
                    "check that model_fn and input_fn need no TPU-only code path")  # fmt: skip
        return
    text = ctx.segment(use_tpu[1])
    ctx.finding(RULE, use_tpu[1], Severity.WARNING,
                f"use_tpu={text} removed: the NPU port follows TPUEstimator's use_tpu=False path",
                f"run with {text} false: other code may still branch on it (CrossShardOptimizer, "
                "TPU scaffolds, one-hot embeddings)")  # fmt: skip


def _report_batch_sizes(ctx: FileContext, call: ast.Call, bound: Bound) -> None:
    chosen = _batch_size(bound)
    if chosen is None:
        return
    for name, mode in (("eval_batch_size", "evaluate()"), ("predict_batch_size", "predict()")):
        value = bound.get(name)
        if value is None or _is_none(value[1]) or ast.dump(value[1]) == ast.dump(chosen):
            continue
        text, used = ctx.segment(value[1]), ctx.segment(chosen)
        ctx.finding(RULE, value[1], Severity.WARNING,
                    f"{mode} now gets params['batch_size'] = {used}, not {name}={text}: "
                    "NPUEstimator passes the same params in every mode",
                    f"for {mode}, build a second NPUEstimator (with its own NPURunConfig, same "
                    f"model_dir) with params=dict(batch_size={text}, use_tpu=False)")  # fmt: skip


# -- TPUEstimatorSpec --------------------------------------------------------------------------
def _port_spec(ctx: FileContext, call: ast.Call, callee: ast.expr, scope: Scope) -> None:
    bound = _bind(call, TPU_SPEC_PARAMS)
    if bound is None:
        ctx.finding(RULE, call, Severity.ERROR,
                    "TPUEstimatorSpec(*args/**kwargs) not rewritten: NPUEstimator does not "
                    "accept it", "port it by hand to NPUEstimatorSpec(eval_metric_ops="
                    "metric_fn(*tensors), scaffold=scaffold_fn() if scaffold_fn else None, "
                    "...)")  # fmt: skip
        return
    edits: list[Edit | None] = [ctx.replace(callee, "NPUEstimatorSpec")]
    for i, arg in enumerate(call.args[_SAME_SPEC_SLOTS:], start=_SAME_SPEC_SLOTS):
        name = TPU_SPEC_PARAMS[i]
        if name not in ("eval_metrics", "scaffold_fn"):
            edits.append(ctx.insert_before(arg, f"{name}="))
    if "eval_metrics" in bound:
        edits += _renamed(ctx, bound["eval_metrics"], "eval_metric_ops")
        edits += _metric_ops(ctx, bound["eval_metrics"][1], scope)
    if "scaffold_fn" in bound:
        scaffold = _scaffold(ctx, bound["scaffold_fn"][1], scope)
        if scaffold is None:
            ctx.finding(RULE, bound["scaffold_fn"][1], Severity.ERROR,
                        "TPUEstimatorSpec not rewritten: scaffold_fn is an expression that cannot "
                        "be evaluated twice", "assign it to a variable fn, then write "
                        "NPUEstimatorSpec(..., scaffold=fn() if fn else None)")  # fmt: skip
            return
        edits += _renamed(ctx, bound["scaffold_fn"], "scaffold")
        edits += scaffold
    if ctx.patch(RULE, call, edits):
        ctx.need_import()


def _renamed(ctx: FileContext, item: tuple[Arg, ast.expr], new: str) -> list[Edit]:
    """Rename a keyword argument (``old=`` -> ``new=``), or name a positional one."""
    arg, value = item
    if isinstance(arg, ast.keyword):
        start, _ = ctx.span(arg)
        value_start, _ = ctx.span(value)
        return [Edit(start, value_start, f"{new}=")]
    return [ctx.insert_before(value, f"{new}=")]


def _metric_ops(ctx: FileContext, value: ast.expr, scope: Scope) -> list[Edit]:
    """``eval_metrics`` as the ``eval_metric_ops`` TPUEstimator computes from it off-TPU."""
    if _is_none(value):
        return []
    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == 2:
        inline = _inline_metric_call(ctx, value, *value.elts)
        if inline is not None:
            return inline
    if isinstance(value, ast.Name):
        star = _metric_tensors_kind(ctx, value.id, scope)
        if star is not None:
            return [ctx.replace(value, f"{value.id}[0]({star}{value.id}[1])")]
    ctx.need_helper(METRICS_HELPER, _METRICS_HELPER_LINES)
    return [e for e in ctx.wrap(value, f"{METRICS_HELPER}(", ")") if e is not None]


def _inline_metric_call(
    ctx: FileContext, pair: ast.expr, fn: ast.expr, tensors: ast.expr
) -> list[Edit] | None:
    """``(fn, [a, b])`` -> ``fn(a, b)``, ``(fn, {...})`` -> ``fn(**{...})``, in place."""
    start, end = ctx.span(pair)
    t_start, t_end = ctx.span(tensors)
    if "#" in ctx.text[start:t_start] + ctx.text[t_end:end] or isinstance(fn, ast.Starred):
        return None  # a comment would be lost: use the helper, which keeps the text whole
    callee = as_operand(fn, ctx.segment(fn))
    if isinstance(tensors, (ast.List, ast.Tuple)):
        return [Edit(start, t_start + 1, f"{callee}("), Edit(t_end - 1, end, ")")]
    if isinstance(tensors, ast.Dict):
        return [Edit(start, t_start, f"{callee}(**"), Edit(t_end, end, ")")]
    return None


def _metric_tensors_kind(ctx: FileContext, name: str, scope: Scope) -> str | None:
    """``*`` / ``**`` when each binding of ``name`` is a literal ``(fn, [..])`` / ``(fn, {..})``."""
    found = ctx.index.resolver.bindings_of(name, scope)
    if found is None:
        return None
    kinds: set[str] = set()
    for binding in found[1]:
        value = binding.value
        if not (isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == 2):
            return None
        tensors = value.elts[1]
        if isinstance(tensors, (ast.List, ast.Tuple)):
            kinds.add("*")
        elif isinstance(tensors, ast.Dict):
            kinds.add("**")
        else:
            return None
    return kinds.pop() if len(kinds) == 1 else None


def _scaffold(ctx: FileContext, value: ast.expr, scope: Scope) -> list[Edit] | None:
    """``scaffold_fn`` as the scaffold TPUEstimator builds from it off-TPU (None: cannot)."""
    if _is_none(value):
        return []
    text = ctx.segment(value)
    if isinstance(value, ast.Lambda):
        return [ctx.replace(value, f"({text})()")]
    if _dotted(value) is None:
        return None
    if isinstance(value, ast.Name) and _always_function(ctx, value.id, scope):
        return [ctx.replace(value, f"{text}()")]
    return [ctx.replace(value, f"{text}() if {text} else None")]


def _always_function(ctx: FileContext, name: str, scope: Scope) -> bool:
    found = ctx.index.resolver.bindings_of(name, scope)
    return found is not None and all(
        isinstance(b.value, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) for b in found[1]
    )


# -- TPUClusterResolver whose only use was cluster= ------------------------------------------
def _remove_unused_resolvers(ctx: FileContext, dropped: list[ast.expr]) -> set[int]:
    """Remove ``name = TPUClusterResolver(...)`` when every use of ``name`` was a removed
    ``cluster=`` argument; returns the ids of the resolver calls removed.

    The name's other bindings must be ``name = None`` (BERT's ``tpu_cluster_resolver = None``
    before its ``if``); they go too, and an ``if`` left with nothing but removed statements
    (and a test that only reads names) goes with them.
    """
    removed: set[int] = set()
    for ref in ctx.index.calls_to(*CLUSTER_RESOLVERS):
        assert ref.call is not None
        stmt = ctx.index.parent(ref.call)
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target = stmt.targets[0]
        if not isinstance(target, ast.Name) or id(stmt) in removed:
            continue
        doomed = _resolver_bindings(ctx, target.id, ref.scope, dropped)
        if doomed is None:
            continue
        statements = _with_emptied_ifs(ctx, doomed)
        if ctx.patch(RULE, ref.call, [_remove(ctx, s, statements) for s in statements]):
            removed.add(id(ref.call))
            removed.update(id(s) for s in doomed)
            ctx.finding(RULE, ref.call, Severity.INFO,
                        f"TPUClusterResolver call removed: {target.id} was only passed as "
                        "cluster= to tpu.RunConfig, which NPURunConfig does not take",
                        "nothing to do: the NPU adapter finds its devices itself")  # fmt: skip
    return removed


def _resolver_bindings(
    ctx: FileContext, name: str, scope: Scope, dropped: list[ast.expr]
) -> list[ast.stmt] | None:
    """The statements binding ``name`` when all are ``= None`` / ``= TPUClusterResolver(...)``
    and every read of ``name`` is in ``dropped``; otherwise None."""
    found = ctx.index.resolver.bindings_of(name, scope)
    if found is None:
        return None
    home, bindings = found
    statements: list[ast.stmt] = []
    for binding in bindings:
        value = binding.value
        stmt = ctx.index.parent(value) if isinstance(value, ast.expr) else None
        is_resolver = isinstance(value, ast.Call) and ctx.index.callee(value) in CLUSTER_RESOLVERS
        is_none = isinstance(value, ast.expr) and _is_none(value)
        if not (isinstance(stmt, ast.Assign) and (is_resolver or is_none)):
            return None
        statements.append(stmt)
    kept = {id(expr) for expr in dropped}
    reads = [
        node
        for node in ast.walk(home.node)
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
    ]
    if not reads or any(id(node) not in kept for node in reads):
        return None
    return statements


def _with_emptied_ifs(ctx: FileContext, statements: list[ast.stmt]) -> list[ast.stmt]:
    """``statements``, each replaced by its ``if`` when it is all that ``if`` holds."""
    out: list[ast.stmt] = []
    for stmt in statements:
        parent = ctx.index.parent(stmt)
        if (
            isinstance(parent, ast.If)
            and not parent.orelse
            and len(parent.body) == 1
            and _reads_only(parent.test)
        ):
            out.append(parent)
        else:
            out.append(stmt)
    return out


def _reads_only(test: ast.expr) -> bool:
    """A test without calls (names, attributes, constants, and/or/not, comparisons)."""
    return not any(isinstance(n, (ast.Call, ast.NamedExpr, ast.Await)) for n in ast.walk(test))


def _remove(ctx: FileContext, stmt: ast.stmt, removed: list[ast.stmt]) -> Edit:
    """Remove ``stmt``; a block emptied by this removal keeps a ``pass``."""
    block = ctx.block_of(stmt)
    if len(block) > 1 and all(s in removed for s in block) and block[0] is stmt:
        return ctx.replace(stmt, "pass")
    if len(block) > 1 and all(s in removed for s in block):
        assert stmt.end_lineno is not None
        start, end = ctx.source.line_start(stmt.lineno), ctx.source.line_end(stmt.end_lineno)
        return Edit(start, end, "")
    return ctx.remove_statement(stmt)


# -- reports on other TPU APIs -----------------------------------------------------------------
def _report_tpu_only(ctx: FileContext, removed: set[int]) -> None:
    for ref in ctx.index.calls_to(*CLUSTER_RESOLVERS):
        if id(ref.call) in removed:
            continue
        guarded = _guarded_by_tpu_flag(ctx, ref.node)
        ctx.finding(RULE, ref.node, Severity.INFO if guarded else Severity.WARNING,
                    "TPUClusterResolver left as is: it looks up a Cloud TPU when it is created "
                    "(failing on an NPU machine), and NPURunConfig takes no cluster",
                    "keep use_tpu false and tpu_name unset when running on the NPU" if guarded
                    else "delete this call: nothing on the NPU uses its result")  # fmt: skip
    for ref in ctx.index.calls_to(*CROSS_SHARD_OPTIMIZERS):
        guarded = _guarded_by_tpu_flag(ctx, ref.node)
        ctx.finding(RULE, ref.node, Severity.INFO if guarded else Severity.WARNING,
                    "CrossShardOptimizer left as is: it needs a TPU"
                    + (" (it only runs when use_tpu is true)" if guarded else ""),
                    "keep use_tpu false when running on the NPU" if guarded else
                    "use the wrapped optimizer itself (NPUDistributedOptimizer(opt) to train on "
                    "several NPUs)")  # fmt: skip
    for ref in ctx.index.calls_to(*_TPU_KERAS):
        ctx.finding(RULE, ref.node, Severity.WARNING,
                    f"{ref.name.rsplit('.', 1)[1]} is TPU-only and has no NPU equivalent",
                    "use the Keras model directly (tf2npu configures its NPU session)")  # fmt: skip
    for ref in ctx.index.refs:
        if ref.kind == "base" and ref.name in TPU_ESTIMATORS:
            ctx.finding(RULE, ref.node, Severity.WARNING,
                        "a subclass of TPUEstimator is not migrated",
                        "derive from NPUEstimator, pass an NPURunConfig and the batch size in "
                        "params['batch_size']")  # fmt: skip


def _guarded_by_tpu_flag(ctx: FileContext, node: ast.AST) -> bool:
    """True when ``node`` only runs if a TPU flag (``use_tpu``, ``FLAGS.tpu_name``...) is true."""
    child: ast.AST = node
    parent = ctx.index.parent(node)
    while parent is not None:
        if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test:
            polarity = _tpu_test(parent.test)
            in_body = child is parent.body or (
                isinstance(parent.body, list) and any(s is child for s in parent.body)
            )
            if polarity is not None and polarity == in_body:
                return True
        child, parent = parent, ctx.index.parent(parent)
    return False


def _tpu_test(test: ast.expr) -> bool | None:
    """True: the test holds only with a TPU flag set; False: only with it unset; None: unknown."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _tpu_test(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return True if any(_tpu_test(v) is True for v in test.values) else None
    word = None
    if isinstance(test, ast.Name):
        word = test.id
    elif isinstance(test, ast.Attribute):
        word = test.attr
    elif isinstance(test, ast.Subscript) and isinstance(test.slice, ast.Constant):
        word = str(test.slice.value)
    return True if word is not None and "tpu" in word.lower() else None


# -- shared helpers ----------------------------------------------------------------------------
def _bind(call: ast.Call, params: tuple[str, ...]) -> Bound | None:
    """Each argument under its parameter name; None when unpacking hides which is which."""
    unpacked = any(isinstance(a, ast.Starred) for a in call.args)
    if unpacked or any(k.arg is None for k in call.keywords) or len(call.args) > len(params):
        return None
    bound: Bound = {params[i]: (arg, arg) for i, arg in enumerate(call.args)}
    for kw in call.keywords:
        assert kw.arg is not None
        if kw.arg in bound:
            return None
        bound[kw.arg] = (kw, kw.value)
    return bound


def _drop_arguments(
    ctx: FileContext, call: ast.Call, doomed: list[Arg], slot: str | None
) -> list[Edit | None]:
    """Remove ``doomed`` arguments; put ``slot`` (new arguments' text), if any, in their place.

    The slot takes the place of the last argument when that one goes (so ``params=...`` lands on
    the line ``predict_batch_size=...`` had), else it is appended.
    """
    items = ctx.arguments(call)
    gone = {id(item) for item in doomed}
    edits: list[Edit | None] = []
    if slot is not None:
        if items and id(items[-1]) in gone:
            edits.append(ctx.replace(items[-1], slot))
            gone.discard(id(items[-1]))
        else:
            edits.append(ctx.add_keyword(call, *slot.split("=", 1)))
    i = 0
    while i < len(items):
        if id(items[i]) not in gone:
            i += 1
            continue
        j = i
        while j + 1 < len(items) and id(items[j + 1]) in gone:
            j += 1
        edits += _drop_run(ctx, call, items, i, j)
        i = j + 1
    return edits


def _drop_run(
    ctx: FileContext, call: ast.Call, items: list[Arg], i: int, j: int
) -> list[Edit | None]:
    """Remove ``items[i..j]`` (consecutive), keeping the separators of the others right."""
    run = items[i : j + 1]
    if len(run) < len(items) and all(_owns_line(ctx, call, item) for item in run):
        return [ctx.remove_argument(call, item) for item in run]  # whole lines: layout kept
    if i > 0:
        following = items[j + 1] if j + 1 < len(items) else None
        return _drop_after(ctx, call, items[i - 1], run, following)
    if j + 1 < len(items):
        return [Edit(ctx.span(items[i])[0], ctx.span(items[j + 1])[0], "")]
    paren = ctx.open_paren(call)
    return [None if paren is None else Edit(paren + 1, ctx.span(call)[1] - 1, "")]


def _drop_after(
    ctx: FileContext, call: ast.Call, kept: Arg, run: list[Arg], following: Arg | None
) -> list[Edit | None]:
    """Remove ``run`` and one separator, keeping a comment that follows ``kept``."""
    kept_end = ctx.span(kept)[1]
    first, _ = ctx.span(run[0])
    _, last = ctx.span(run[-1])
    if "#" not in ctx.text[kept_end:first]:
        return [Edit(kept_end, last, "")]
    if following is not None:
        return [Edit(first, ctx.span(following)[0], "")]
    closing = _CLOSING.match(ctx.text, last) is not None
    if closing and all(_starts_line(ctx, call, item) for item in run):
        # ``kept,  # comment`` stays whole; the call's ``)`` moves to a line of its own.
        indent = ctx.source.indent_of(call.lineno)
        return [Edit(ctx.source.line_start(run[0].lineno), last, indent)]
    comma = _COMMA.match(ctx.text, kept_end)
    if comma is None:
        return [Edit(kept_end, last, "")]
    return [Edit(comma.end() - 1, comma.end(), ""), Edit(first, last, "")]


def _starts_line(ctx: FileContext, call: ast.Call, item: Arg) -> bool:
    start, _ = ctx.span(item)
    before = ctx.text[ctx.source.line_start(item.lineno) : start]
    return item.lineno != call.lineno and not before.strip(" \t\f")


def _owns_line(ctx: FileContext, call: ast.Call, item: Arg) -> bool:
    """The argument sits alone on its line(s), followed by a comma or nothing (not by ``)``)."""
    rest = _ARG_LINE_REST.match(ctx.text, ctx.span(item)[1])
    return rest is not None and _starts_line(ctx, call, item)


def _single_value(ctx: FileContext, expr: ast.expr, scope: Scope) -> ast.expr | None:
    """``expr`` itself, or the value of a variable with exactly one binding."""
    if not isinstance(expr, ast.Name):
        return expr
    found = ctx.index.resolver.bindings_of(expr.id, scope)
    if found is None or len(found[1]) != 1:
        return None
    value = found[1][0].value
    return value if isinstance(value, ast.expr) else None


def _is_dict(ctx: FileContext, expr: ast.expr, scope: Scope, depth: int = 0) -> bool:
    if isinstance(expr, (ast.Dict, ast.DictComp)):
        return True
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "dict":
        return ctx.index.resolver.bindings_of("dict", scope) is None
    if isinstance(expr, ast.Name) and depth < 3:
        found = ctx.index.resolver.bindings_of(expr.id, scope)
        return found is not None and all(
            isinstance(b.value, ast.expr) and _is_dict(ctx, b.value, found[0], depth + 1)
            for b in found[1]
        )
    return False


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None

"""Known Ascend hazards are reported with their fix; nothing is rewritten."""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from tf2npu.migrate.catalog import classify
from tf2npu.migrate.context import FileContext
from tf2npu.migrate.index import Ref
from tf2npu.migrate.model import ApiStatus, Severity
from tf2npu.migrate.names import Scope
from tf2npu.migrate.report.labels import status_label
from tf2npu.migrate.rule import Example, Rule, register
from tf2npu.migrate.rules._npu_config import mix_compile_lines, mix_compile_needed
from tf2npu.migrate.rules._pipeline import Pipeline
from tf2npu.migrate.rules._pipeline_resources import (
    made_by,
    pipeline,
    pipeline_resources,
)
from tf2npu.migrate.rules._text import is_true
from tf2npu.migrate.tables import hazards as t

RULE = "hazards"
_BAD_CONTRIB = (ApiStatus.UNSUPPORTED, ApiStatus.DEPRECATED, ApiStatus.NOT_LISTED)
"""Statuses that make a tf.contrib API a warning, worst first."""


@dataclass(frozen=True, slots=True)
class _Facts:
    """What every check needs: the pipeline functions and the NPU options in effect."""

    pipeline: Pipeline
    mix_compile: bool
    """Mixed compute is on: asked for (``--mix-compile``, the file's own config) or written."""
    mix_compile_lines: tuple[int, ...]
    """Where the tool turned it on by itself (lookup tables in the pipeline), else empty."""
    precision_modes: tuple[str, ...]


@register
class Hazards(Rule):
    """Known Ascend hazards are reported, each with its fix; this rule never edits the code.

    Every finding has ``rule="hazards"`` and a message that starts with a stable hazard id in
    brackets (``[lookup_table_in_pipeline] ...``); the ids, severities, texts and trigger APIs
    are the table in ``tf2npu/migrate/tables/hazards.py``. Covered: lookup tables and variables
    used in a ``tf.data`` pipeline (the "Table not initialized" / "uninitialized variable"
    failures), ``py_func`` and friends in and outside the pipeline, v1 control flow in
    dynamic-shape networks, FusedBatchNormV3 under mixed compute, ReduceSum under fp16 mixed
    precision, batches without a static shape, queue-runner input, deprecated ``tf.contrib``
    APIs (with their replacements), GPU-only settings that do nothing on Ascend, and a per-file
    recommendation of ``--mix-compile`` when host-only operations are found. Options given on
    the command line and NPU settings already written in the file (``mix_compile_mode``,
    ``precision_mode``, ``modify_mixlist``) both count.

    A hazard that certainly fails on the device with the options the script has is never just a
    warning. A lookup table in the input pipeline under full offload (seed 000 case 01: the
    table's ``HashTableV2`` is initialised on the device, ``LookupTableFindV2`` runs on the host,
    "Table not initialized") gets the seed's own fix: ``mix_compile_mode=True`` in the NPU
    configs the tool writes for the file (``_npu_config``), reported here as
    ``mix_compile_enabled``; the seed chooses mixed compute because it keeps the paired resource
    ops together on the host and changes nothing in the model. Where the tool writes no config
    for the file, or the file sets ``iterations_per_loop`` (mixed compute needs 1), it is an
    error. A ``tf.py_function`` / ``py_func(stateful=False)`` map under an Estimator (whose
    NPURunConfig writes ``enable_data_pre_proc=True``, so the map is offloaded to a device that
    cannot run Python) is an error too: mixed compute does not change the dataset offload, so
    the fix is the user's (``tf.numpy_function`` or ``enable_data_pre_proc=False``).
    """

    name: ClassVar[str] = RULE
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\n"
            "table = tf.lookup.StaticHashTable(initializer, -1)\n"
            "ds = tf.data.TFRecordDataset(files).map(lambda x: table.lookup(x))\n",
            "import tensorflow as tf\n"
            "table = tf.lookup.StaticHashTable(initializer, -1)\n"
            "ds = tf.data.TFRecordDataset(files).map(lambda x: table.lookup(x))\n",
            "a lookup table read in Dataset.map, in a file with no session or run config to "
            "turn mixed compute on in: an error (run with --mix-compile); the code is left as "
            "it is",
        ),
        Example(
            "import tensorflow as tf\ny = tf.py_func(numpy_fn, [x], tf.float32)\n",
            "import tensorflow as tf\ny = tf.py_func(numpy_fn, [x], tf.float32)\n",
            "a py_func in the model is reported with the mixed-compute fix",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        if not ctx.index.refs:
            return  # hazards are about TensorFlow code; this file has none
        asked = _mix_compile(ctx)
        written = () if asked or not mix_compile_needed(ctx) else tuple(mix_compile_lines(ctx))
        facts = _Facts(pipeline(ctx), asked or bool(written), written, _precision_modes(ctx))
        _eager(ctx)
        _pipeline_resources(ctx, facts)
        _dataset_arguments(ctx)
        _py_funcs(ctx, facts)
        _control_flow(ctx)
        _batch_norm(ctx, facts)
        _reduce_sum(ctx, facts)
        _unproven_batches(ctx)
        _queue_input(ctx)
        _contrib(ctx)
        _contrib_batch_norm(ctx)
        _gpu_settings(ctx)
        _recommend_mix_compile(ctx, facts)


def _hazard_table() -> str:
    """The hazard ids as a Markdown table, appended to the rule's docstring (and so its docs)."""
    rows = ["The hazards, by id:", "", "| id | severity | reported |", "| --- | --- | --- |"]
    rows += [f"| `{h.id}` | {h.severity.value} | {h.when or 'always'} |" for h in t.HAZARDS]
    return "\n".join(f"    {row}".rstrip() for row in ["", *rows])


Hazards.__doc__ = (Hazards.__doc__ or "").rstrip() + "\n" + _hazard_table() + "\n"


def _report(
    ctx: FileContext, hazard: str, node: ast.AST, *, severity: Severity | None = None, **fields: str
) -> None:
    row = t.BY_ID[hazard]
    message = f"[{row.id}] " + row.message.format(**fields)
    ctx.finding(RULE, node, severity or row.severity, message, row.fix.format(**fields))


# -- options in effect ------------------------------------------------------------------------


def _mix_compile(ctx: FileContext) -> bool:
    return ctx.options.mix_compile or True in _configured(ctx, "mix_compile_mode")


def _precision_modes(ctx: FileContext) -> tuple[str, ...]:
    modes = [ctx.options.precision_mode] if ctx.options.precision_mode else []
    modes += [v for v in _configured(ctx, "precision_mode") if isinstance(v, str)]
    return tuple(modes)


def _configured(ctx: FileContext, key: str) -> list[object]:
    """Constant values the file gives the NPU option ``key``: ``NPURunConfig(key=v)`` or
    ``custom_op.parameter_map["key"].b = v`` (``.s = tf.compat.as_bytes(v)``)."""
    lines = _lines_mentioning(ctx, key)
    if not lines:
        return []
    values: list[object] = []
    for stmt in _statements(ctx.tree):
        assert stmt.end_lineno is not None
        if not any(stmt.lineno <= n <= stmt.end_lineno for n in lines):
            continue
        if isinstance(stmt, ast.Assign) and any(_is_parameter(x, key) for x in stmt.targets):
            values.append(_constant(stmt.value))
        # The statement's own expressions (a block's header), not the statements it contains.
        own = [c for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.expr | ast.withitem)]
        for node in (n for c in own for n in ast.walk(c)):
            if isinstance(node, ast.keyword) and node.arg == key:
                values.append(_constant(node.value))
    return [v for v in values if v is not None]


def _lines_mentioning(ctx: FileContext, word: str) -> set[int]:
    """Line numbers where ``word`` occurs in the text (a cheap filter before any tree walk)."""
    found: set[int] = set()
    at = ctx.text.find(word)
    while at >= 0:
        found.add(bisect.bisect_right(ctx.source.line_starts, at))
        at = ctx.text.find(word, at + len(word))
    return found


def _statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Every statement, walking only statement lists (much faster than ``ast.walk``)."""
    stack: list[ast.stmt] = list(reversed(tree.body))
    while stack:
        stmt = stack.pop()
        yield stmt
        blocks = [getattr(stmt, name, None) for name in ("body", "orelse", "finalbody")]
        blocks += [h.body for h in getattr(stmt, "handlers", ())]
        blocks += [c.body for c in getattr(stmt, "cases", ())]
        stack.extend(reversed([s for block in blocks if isinstance(block, list) for s in block]))


def _is_parameter(target: ast.expr, key: str) -> bool:
    if not (isinstance(target, ast.Attribute) and target.attr in ("b", "s", "i")):
        return False
    item = target.value
    return (
        isinstance(item, ast.Subscript)
        and isinstance(item.value, ast.Attribute)
        and item.value.attr == "parameter_map"
        and isinstance(item.slice, ast.Constant)
        and item.slice.value == key
    )


def _constant(expr: ast.expr) -> object:
    """A constant, also through one wrapping call (``tf.compat.as_bytes("x")``)."""
    if isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords:
        expr = expr.args[0]
    if not isinstance(expr, ast.Constant):
        return None
    value = expr.value
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


# -- eager execution --------------------------------------------------------------------------


def _eager(ctx: FileContext) -> None:
    for ref in ctx.index.calls_to(*t.EAGER_APIS):
        assert ref.call is not None
        _report(ctx, "eager_execution", ref.call, api=ref.name)


# -- input pipeline ---------------------------------------------------------------------------


def _pipeline_resources(ctx: FileContext, facts: _Facts) -> None:
    """Lookup tables and variables created or read inside a pipeline function (cases 01, 02)."""
    for resource in pipeline_resources(ctx):
        if not resource.is_table:
            _report(ctx, "variable_in_pipeline", resource.node, what=resource.what,
                    where=resource.entry.where)  # fmt: skip
        elif facts.mix_compile_lines:
            lines = _numbers(facts.mix_compile_lines)
            _report(ctx, "mix_compile_enabled", resource.node, what=resource.what,
                    where=resource.entry.where, lines=lines)  # fmt: skip
        elif not facts.mix_compile:
            _report(ctx, "lookup_table_in_pipeline", resource.node, what=resource.what,
                    where=resource.entry.where, why=_why_not_fixed(ctx))  # fmt: skip


def _why_not_fixed(ctx: FileContext) -> str:
    """Why the tool did not turn mixed compute on for a pipeline lookup table."""
    if mix_compile_needed(ctx):
        return (
            "tf2npu writes no NPU config in this file (it builds none, or builds its own NPU "
            "config) to turn it on in"
        )
    return "the file sets iterations_per_loop, and mixed compute requires it to be 1"


def _numbers(lines: Sequence[int]) -> str:
    return ("line " if len(lines) == 1 else "lines ") + ", ".join(str(n) for n in lines)


def _dataset_arguments(ctx: FileContext) -> None:
    """A variable passed to a dataset method (``ds.batch(batch_size_var)``, case 02)."""
    for method, calls in ctx.index.method_calls.items():
        for mc in calls:
            values = [*mc.call.args, *(k.value for k in mc.call.keywords)]
            for name in values:
                if not isinstance(name, ast.Name):
                    continue
                made = made_by(ctx, name, mc.scope, t.VARIABLE_APIS)
                # The receiver's kind last: it is the expensive question.
                if made is not None and ctx.kinds.is_dataset(mc.receiver, mc.scope):
                    call, api = made
                    what = f"variable `{name.id}` ({api}, line {call.lineno})"
                    where = f"an argument of .{method}() at line {mc.call.lineno}"
                    _report(ctx, "variable_in_pipeline", name, what=what, where=where)


# -- py_func ----------------------------------------------------------------------------------


def _py_funcs(ctx: FileContext, facts: _Facts) -> None:
    offload = _configured(ctx, "enable_data_pre_proc")
    offload_off = False in offload
    # Estimators get NPURunConfig, which writes enable_data_pre_proc=True: the map goes to the
    # device for certain, so the finding is an error; a session's default keeps it on the host.
    certain = True in offload or (not offload_off and _uses_run_config(ctx))
    for ref in ctx.index.calls_to(*t.PY_FUNC_OPS):
        assert ref.call is not None
        op = _py_func_op(ctx, ref.name, ref.call)
        api = ref.name + ("(stateful=False)" if op == t.PY_FUNC_STATELESS_OP else "")
        entry = facts.pipeline.owner(ref.call)
        if entry is None:
            if not facts.mix_compile:
                _report(ctx, "py_func_host", ref.call, api=api, op=op)
        elif op == t.PIPELINE_HOST_OP:
            _report(ctx, "py_func_in_pipeline", ref.call, api=api, where=entry.where)
        elif not offload_off:
            _report(ctx, "py_function_in_pipeline", ref.call, api=api, op=op,
                    where=entry.where, alternative=t.PY_FUNC_ALTERNATIVES[op],
                    severity=Severity.ERROR if certain else None)  # fmt: skip


def _uses_run_config(ctx: FileContext) -> bool:
    """The file builds an Estimator or run config (NPURunConfig after migration)."""
    if t.NPU_RUN_CONFIG in ctx.text:
        return True
    return any(name.startswith(t.RUN_CONFIG_PREFIXES) for name in ctx.index.calls)


def _py_func_op(ctx: FileContext, api: str, call: ast.Call) -> str:
    op = t.PY_FUNC_OPS[api]
    position = t.PY_FUNC_STATEFUL_POSITION.get(api)
    if position is not None:
        stateful = ctx.argument(call, position, "stateful")
        if stateful is not None and _is_false(stateful):
            return t.PY_FUNC_STATELESS_OP
    return op


# -- control flow, batch norm, ReduceSum --------------------------------------------------------


def _control_flow(ctx: FileContext) -> None:
    """v1 control flow (case 03): one note per file; a warning per loop with unknown dims."""
    if ctx.index.calls_to(*t.CONTROL_FLOW_V2_SWITCHES) or t.FORCE_V2_CONTROL_ENV in ctx.text:
        return
    refs = ctx.index.calls_to(*t.V1_CONTROL_FLOW_APIS)
    if not refs:
        return
    for ref in refs:
        assert ref.call is not None
        if ref.name != t.WHILE_LOOP:
            continue
        invariants = ctx.argument(ref.call, t.SHAPE_INVARIANTS_POSITION, "shape_invariants")
        if invariants is not None and _has_unknown_dimension(invariants):
            text = _shorten(" ".join(ctx.segment(invariants).split()))
            _report(ctx, "v1_loop_dynamic_shape", ref.call, invariants=text)
    first = refs[0].call
    assert first is not None
    _report(ctx, "v1_control_flow", first, apis=_names(r.name for r in refs), lines=_lines(refs))


def _has_unknown_dimension(expr: ast.expr) -> bool:
    """``None`` anywhere in the invariants: ``tf.TensorShape([None, 4])``, ``TensorShape(None)``."""
    return any(isinstance(n, ast.Constant) and n.value is None for n in ast.walk(expr))


def _is_false(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is False


def _batch_norm(ctx: FileContext, facts: _Facts) -> None:
    """FusedBatchNormV3 under mixed compute (seed 003), unless the horizon workaround is used."""
    if not facts.mix_compile:
        return
    if any(name.endswith(t.FORWARD_COMPAT_HORIZON) for name in ctx.index.calls):
        return
    for ref in ctx.index.calls_to(*t.BATCH_NORM_APIS):
        assert ref.call is not None
        fused = ctx.keyword(ref.call, "fused")
        if fused is not None and _is_false(fused.value):
            continue
        alternative = "" if ref.name == "tf.nn.fused_batch_norm" else ", or pass fused=False"
        _report(ctx, "fused_batch_norm_mix_compile", ref.call, api=ref.name,
                alternative=alternative)  # fmt: skip


def _reduce_sum(ctx: FileContext, facts: _Facts) -> None:
    """ReduceSum cast to fp16 by mixed precision (case 04): one note per file."""
    modes = [m for m in facts.precision_modes if m in t.FP16_MIXED_PRECISION_MODES]
    if not modes or "modify_mixlist" in ctx.text:
        return
    refs = ctx.index.calls_to(*t.REDUCE_SUM_APIS)
    if refs and refs[0].call is not None:
        _report(ctx, "reduce_sum_fp16", refs[0].call, lines=_lines(refs), mode=modes[0])


# -- batches and queues -----------------------------------------------------------------------


def _unproven_batches(ctx: FileContext) -> None:
    """``.batch()`` that fits Dataset.batch but whose receiver is not proven a dataset."""
    if not (ctx.index.uses("tf.data") or ctx.index.uses("tf.contrib.data")):
        return
    for method, params in t.BATCH_PARAMETERS.items():
        for mc in ctx.index.method_calls.get(method, ()):
            call = mc.call
            if not (call.args or call.keywords) or len(call.args) > len(params):
                continue
            if any(isinstance(a, ast.Starred) for a in call.args):
                continue
            if any(k.arg is None or k.arg not in params for k in call.keywords):
                continue
            if ctx.argument(call, params.index("drop_remainder"), "drop_remainder") is not None:
                continue
            if not ctx.kinds.is_dataset(mc.receiver, mc.scope):
                _report(ctx, "batch_unproven", call, method=method)


def _queue_input(ctx: FileContext) -> None:
    refs = ctx.index.calls_to(*t.QUEUE_INPUT_APIS)
    if not refs or refs[0].call is None:
        return
    _report(ctx, "queue_input", refs[0].call, apis=_names(r.name for r in refs), lines=_lines(refs))
    for ref in refs:
        assert ref.call is not None
        smaller = ctx.keyword(ref.call, "allow_smaller_final_batch")
        if smaller is not None and is_true(smaller.value):
            _report(ctx, "queue_partial_batch", ref.call, api=ref.name)


# -- tf.contrib -------------------------------------------------------------------------------


def _contrib(ctx: FileContext) -> None:
    """One finding per deprecated tf.contrib API (or per covered prefix, e.g. slim) per file."""
    groups: dict[str, list[Ref]] = {}
    for ref in ctx.index.refs:
        if not ref.name.startswith(t.CONTRIB_PREFIX):
            continue
        row = t.contrib_row(ref.name)
        if row is not None and row.handled_by:
            continue
        key = row.api if row is not None and row.prefix else ref.name
        groups.setdefault(key, []).append(ref)
    for refs in groups.values():
        row = t.contrib_row(refs[0].name)
        statuses = {classify(r.name).status for r in refs}
        worst = next((s for s in _BAD_CONTRIB if s in statuses), None)
        if worst is None and row is None:
            continue  # supported and no better API known: the API report says enough
        hazard = "contrib_deprecated" if worst is not None else "contrib_replaceable"
        status = worst or classify(refs[0].name).status
        replacement = row.replacement if row is not None else t.CONTRIB_GENERIC_FIX
        _report(ctx, hazard, refs[0].node, apis=_names(r.name for r in refs), lines=_lines(refs),
                status=status_label(status), replacement=replacement)  # fmt: skip


def _contrib_batch_norm(ctx: FileContext) -> None:
    """Each contrib batch norm, with its own arguments mapped onto tf.layers.batch_normalization."""
    for ref in ctx.index.calls_to(*t.CONTRIB_BATCH_NORM_APIS):
        assert ref.call is not None
        given = _bound_arguments(ctx, ref.call, t.CONTRIB_BATCH_NORM_SIGNATURE)
        if given is None:
            continue  # *args / **kwargs: nothing exact to say; the API report lists it
        replacement, notes = _batch_norm_mapping(given)
        _report(ctx, "contrib_batch_norm", ref.call, api=ref.name, line=str(ref.call.lineno),
                replacement=replacement, notes="".join(f"; {n}" for n in notes))  # fmt: skip


def _bound_arguments(
    ctx: FileContext, call: ast.Call, signature: tuple[str, ...]
) -> dict[str, str] | None:
    """``parameter -> source text`` of a call, positional arguments bound by ``signature``."""
    if any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > len(signature):
        return None
    if any(k.arg is None for k in call.keywords):
        return None
    bound = {signature[i]: " ".join(ctx.segment(a).split()) for i, a in enumerate(call.args)}
    bound.update({k.arg: " ".join(ctx.segment(k.value).split()) for k in call.keywords if k.arg})
    return bound


def _batch_norm_mapping(given: dict[str, str]) -> tuple[str, list[str]]:
    """The tf.layers call that computes what the contrib call does, and what it cannot carry."""
    values = {**t.BATCH_NORM_CONTRIB_DEFAULTS, **given}
    arguments: list[str] = []
    for name in t.CONTRIB_BATCH_NORM_SIGNATURE:
        value = values.get(name)
        if value is not None and name in t.BATCH_NORM_RENAMES:
            target = t.BATCH_NORM_RENAMES[name]
            arguments.append(value if target == "inputs" else f"{target}={value}")
    notes: list[str] = []
    if "data_format" in given:
        arguments.append(f"axis=1 if {given['data_format']} == 'NCHW' else -1")
    for group, names in (("param_initializers", t.BATCH_NORM_PARAM_INITIALIZERS),
                         ("param_regularizers", t.BATCH_NORM_PARAM_REGULARIZERS)):  # fmt: skip
        if group in given:
            kind = group.removeprefix("param_").removesuffix("s")
            each = ", ".join(f"{n}_{kind}={given[group]}[{n!r}]" for n in names)
            notes.append(f"pass {group} as {each} (for the keys it has)")
    call = f"tf.layers.batch_normalization({', '.join(arguments)})"
    if "activation_fn" in given and given["activation_fn"] != "None":
        call = f"{given['activation_fn']}({call})"
    notes.append(_update_ops_note(given.get("updates_collections")))
    if "scope" not in given:
        notes.append(
            "contrib names its variables under 'BatchNorm', tf.layers under "
            "'batch_normalization': pass name='BatchNorm' to restore old checkpoints"
        )
    unmapped = [n for n in t.BATCH_NORM_UNMAPPED if n in given]
    if unmapped:
        notes.append(f"{', '.join(unmapped)}: no tf.layers equivalent, handle by hand")
    return call, notes


def _update_ops_note(collections: str | None) -> str:
    if collections == "None":
        return (
            "updates_collections=None updated the moving mean and variance in place; tf.layers "
            "puts those updates in tf.GraphKeys.UPDATE_OPS, so build the train op under "
            "`with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):`"
        )
    if collections is not None and collections != t.UPDATE_OPS_DEFAULT:
        return (
            f"tf.layers puts the moving-average updates in tf.GraphKeys.UPDATE_OPS, not in "
            f"{collections}: run them from there"
        )
    return (
        "the moving-average updates stay in tf.GraphKeys.UPDATE_OPS, as with contrib: keep "
        "running them with the train op"
    )


# -- GPU-only settings --------------------------------------------------------------------------


def _gpu_settings(ctx: FileContext) -> None:
    for ref in ctx.index.refs:
        if ref.name in t.GPU_CONFIG_APIS:
            _report(ctx, "gpu_config_no_effect", ref.node, api=ref.name, fix=t.gpu_fix(ref.name))
        elif ref.name in t.GPU_QUERY_APIS:
            _report(ctx, "gpu_query", ref.node, api=ref.name)
    for ref in ctx.index.calls_to(t.CONFIG_PROTO):
        assert ref.call is not None
        given = ctx.keyword(ref.call, t.GPU_OPTIONS_FIELD)
        if given is not None and not (
            isinstance(given.value, ast.Call) and ctx.index.callee(given.value) == t.GPU_OPTIONS_API
        ):
            api = "ConfigProto(gpu_options=...)"
            _report(ctx, "gpu_config_no_effect", given.value, api=api, fix=t.gpu_fix(api))
    if t.GPU_OPTIONS_FIELD in ctx.text or any(v in ctx.text for v in t.GPU_ENV_VARS):
        _gpu_assignments(ctx)


def _gpu_assignments(ctx: FileContext) -> None:
    """``config.gpu_options.allow_growth = True``, ``os.environ["CUDA_VISIBLE_DEVICES"] = x``."""
    for node in _statements(ctx.tree):
        if not isinstance(node, (ast.Assign, ast.AugAssign)):
            continue
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if isinstance(target, ast.Attribute) and _attr(target.value) == t.GPU_OPTIONS_FIELD:
                api = f"ConfigProto.{t.GPU_OPTIONS_FIELD}.{target.attr}"
                _report(ctx, "gpu_config_no_effect", target, api=api, fix=t.gpu_fix(api))
            elif isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
                variable = target.slice.value
                scope = ctx.index.scope_at(node)
                if variable in t.GPU_ENV_VARS and _is_environ(ctx, target.value, scope):
                    name = f"os.environ[{variable!r}]"
                    _report(ctx, "gpu_env_no_effect", target, name=name, fix=t.gpu_fix(name))


def _attr(expr: ast.expr) -> str | None:
    return expr.attr if isinstance(expr, ast.Attribute) else None


def _is_environ(ctx: FileContext, expr: ast.expr, scope: Scope) -> bool:
    return ctx.index.resolver.qualified(expr, scope) == t.ENVIRON


# -- mixed compute ----------------------------------------------------------------------------


def _recommend_mix_compile(ctx: FileContext, facts: _Facts) -> None:
    """One recommendation per file listing the host-only operations found."""
    if facts.mix_compile:
        return
    found: list[Ref] = list(ctx.index.calls_to(*t.LOOKUP_TABLE_APIS))
    found += [r for r in ctx.index.calls_to(*t.PY_FUNC_OPS) if facts.pipeline.owner(r.call) is None]
    strings = [
        r for r in ctx.index.refs
        if r.kind == "call" and _is_string_op(r.name) and facts.pipeline.owner(r.call) is None
    ]  # fmt: skip
    if not found and not strings:
        return
    refs = sorted([*found, *strings], key=lambda r: (r.node.lineno, r.node.col_offset))
    severity = None if found else Severity.INFO
    _report(ctx, "mix_compile_recommended", refs[0].node, severity=severity,
            what=_names(r.name for r in refs), lines=_lines(refs))  # fmt: skip


def _is_string_op(name: str) -> bool:
    return name in t.STRING_OP_APIS or name.startswith(t.STRING_OP_PREFIXES)


# -- text helpers -----------------------------------------------------------------------------


def _lines(refs: Sequence[Ref]) -> str:
    numbers = sorted({r.node.lineno for r in refs})
    if len(numbers) == 1:
        return f"line {numbers[0]}"
    shown = ", ".join(str(n) for n in numbers[:8])
    return f"lines {shown}" + (", ..." if len(numbers) > 8 else "")


def _names(names: Iterable[str], limit: int = 4) -> str:
    distinct = list(dict.fromkeys(names))
    shown = ", ".join(distinct[:limit])
    return shown + (f" and {len(distinct) - limit} more" if len(distinct) > limit else "")


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."

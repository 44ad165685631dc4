"""Profiling: ``profiling_mode`` / ``profiling_options``, from TensorFlow's own step statistics.

:class:`OpProfile` is a run instrument. For each run of a profiled NPU session that its step
selection covers, it asks the session for a ``FULL_TRACE`` run (``RunHook.trace``) and reads the
run's ``RunMetadata.step_stats`` (``RunHook.on_metadata``): per executed node, its start, its
duration, its thread and its outputs' shapes, dtypes and bytes. Each node is mapped back to what
the graph engine decided for it (from the compile the mirror imported: its GeOp or host
placement, the precision decision, the fusion rule that made it, the user's ops it stands for)
and to the line of the user's script that created it. That raw data goes to
``<output>/PROF_<pid>_<time>_<id>/device_<n>/data/`` as it comes (the folder layout's home is
:mod:`tf2npu.artifacts.profile`) (:mod:`tf2npu.artifacts.profile_raw`); at exit the
TF-free analysis writes msprof's tables, a timeline, the advice and a page next to it
(:mod:`tf2npu.debug.profile.report`).

A session is profiled when its options say ``profiling_mode=True`` (its config, ``NPURunConfig``'s
``ProfilingConfig``, ``PROFILING_MODE``/``PROFILING_OPTIONS`` in the environment, or ``tf2npu run
--profile DIR``, which sets both). One instrument serves every session writing to the same
output folder; it is process-wide (``RuntimeContext.extra_instruments``), so ``tf2npu run``'s
exit (``RuntimeContext.close``) or the interpreter's closes it.
"""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import string
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tf2npu.artifacts import profile_raw as raw
from tf2npu.artifacts.profile import folder_name
from tf2npu.config.dump_steps import DumpSteps
from tf2npu.config.profiling import ProfilingSpec, parse_options
from tf2npu.runtime.errors import first_created_at
from tf2npu.runtime.instruments import (
    CompileEvent,
    RunHook,
    RunInstrument,
    RunSignature,
    SessionInfo,
    SyncEvent,
)

if TYPE_CHECKING:
    from tf2npu.config.options import NpuOptions
    from tf2npu.debug.profile.report import Analysis
    from tf2npu.graph.ir import Graph, Node
    from tf2npu.runtime.context import RuntimeContext

__all__ = ["OpProfile", "install", "session_profile"]

_LOG = logging.getLogger("tf2npu.runtime")
_ARG, _RETVAL = "_arg_", "_retval_"
_TIME_FORMAT = "%Y%m%d%H%M%S"
_ID_LETTERS = 16


@dataclass(frozen=True, slots=True)
class _Decided:
    """What the engine decided for one node, under the name the mirror runs it."""

    device_type: str
    geop: str
    origin: tuple[str, ...]
    precision: str
    precision_reason: str
    fused_by: str
    host_reason: str
    host_message: str


def session_profile(options: NpuOptions, ctx: RuntimeContext) -> RunInstrument | None:
    """Make sure an :class:`OpProfile` serves a session whose options ask for profiling.

    Returns None: the profile is process-wide (added to ``ctx.extra_instruments`` when first
    needed), so every session writing to one folder shares it.
    """
    if not options.profiling_mode:
        return None
    spec = parse_options(options.profiling_options)
    output = _output(spec, ctx)
    if _find(ctx, output) is None:
        env = options.env
        install(ctx, output, spec=spec, device_id=env.device_id, rank_id=env.rank_id)
    return None


def install(
    ctx: RuntimeContext,
    output: str | Path,
    *,
    steps: str = "",
    spec: ProfilingSpec | None = None,
    device_id: int | None = None,
    rank_id: int | None = None,
) -> OpProfile:
    """Add the profile writing to ``output`` to ``ctx`` (``tf2npu run --profile``): it traces
    the runs of each signature that ``steps`` selects (``dump_step`` syntax, "" = all).

    ``device_id`` / ``rank_id`` None: the job's, from the environment (``ASCEND_DEVICE_ID``,
    ``RANK_ID``, as the session's options read them).
    """
    path = Path(output).absolute()
    found = _find(ctx, path)
    if found is not None:
        return found
    if device_id is None or rank_id is None:
        from tf2npu.config.cluster import Cluster

        cluster = Cluster.from_env(os.environ)
        device_id = cluster.device_id if device_id is None else device_id
        rank_id = cluster.rank if rank_id is None else rank_id
    spec = spec or ProfilingSpec(output=os.fspath(path))
    profile = OpProfile(path, spec, steps, device_id, rank_id)
    with ctx.lock:
        ctx.extra_instruments.append(profile)
    return profile


def _find(ctx: RuntimeContext, output: Path) -> OpProfile | None:
    for instrument in ctx.extra_instruments:
        if isinstance(instrument, OpProfile) and instrument.output == output:
            return instrument
    return None


def _output(spec: ProfilingSpec, ctx: RuntimeContext) -> Path:
    from tf2npu.runtime.compile import report_dir

    return Path(spec.output or report_dir(ctx.settings)).absolute()


class OpProfile(RunInstrument):
    """Traces the selected runs of profiled sessions (see the module docstring)."""

    def __init__(
        self,
        output: Path,
        spec: ProfilingSpec,
        steps: str = "",
        device_id: int = 0,
        rank_id: int | None = None,
    ) -> None:
        self.output = output
        self.spec = spec
        self.steps = DumpSteps.parse(steps)
        self.steps_text = steps
        self.device_id = device_id
        self.rank_id = rank_id
        now = time.time()
        self.timestamp = time.strftime(_TIME_FORMAT, time.localtime(now))
        started = f"{self.timestamp}{int(now * 1000) % 1000:03d}"
        token = "".join(secrets.choice(string.ascii_uppercase) for _ in range(_ID_LETTERS))
        self.directory = _fresh(output / folder_name(os.getpid(), started, token))
        self.analysis: Analysis | None = None
        self._writer = raw.RawWriter(self.directory, device_id, rank_id)
        self._lock = threading.Lock()
        self._decided: dict[int, dict[str, _Decided]] = {}
        self._known: dict[int, set[str]] = {}
        self._models: dict[int, raw.ModelInfo] = {}
        self._runs: dict[int, int] = {}
        self._done: dict[int, int] = {}
        """Signature -> when its latest run handed its values back (``perf_counter_ns``)."""
        self._options: dict[str, Any] = {}
        self._closed = False
        self.iterations = 0
        self._write_meta()
        atexit.register(self.close)

    # -- which sessions -----------------------------------------------------------------------

    def serves(self, session: SessionInfo) -> bool:
        """Whether ``session`` is profiled into this folder."""
        options = session.options
        if options is None or not options.profiling_mode:
            return False
        spec = parse_options(options.profiling_options)
        return not spec.output or Path(spec.output).absolute() == self.output

    def on_session(self, session: SessionInfo) -> None:
        if not self.serves(session) or self._options:
            return
        options = session.options
        assert options is not None
        self._options = {
            "precision_mode": options.effective_precision_mode,
            "modify_mixlist": options.modify_mixlist,
            "fusion_switch_file": options.fusion_switch_file,
            "mix_compile_mode": options.mix_compile_mode,
        }
        spec = parse_options(options.profiling_options)
        if spec.output or spec != ProfilingSpec():
            self.spec = spec
        if spec.no_effect:
            _LOG.warning(
                "tf2npu: profiling_options %s have no effect here (device collectors); "
                "recorded in the profile",
                ", ".join(spec.no_effect),
            )
        self._write_meta()

    # -- compile time -------------------------------------------------------------------------

    def on_compile(self, event: CompileEvent) -> None:
        session = event.session
        if session is None or not self.serves(session):
            return
        summary = event.summary
        diagnostics = tuple(
            {"code": d.code, "severity": d.severity, "node": d.node, "message": d.message,
             "fix": d.fix, "where": first_created_at(session.graph, (d.node,)) if d.node else ""}
            for d in (*summary.warnings, *summary.infos)
        )  # fmt: skip
        record = raw.CompileRecord(event.graph_num, session.key, len(summary.geops), diagnostics)
        with self._lock:
            self._writer.add_compile(record)

    def on_sync(self, event: SyncEvent) -> None:
        if not self.serves(event.session):
            return
        decided = _decisions(event.compiled.graph, event.renamed)
        with self._lock:
            self._decided.setdefault(event.session.key, {}).update(decided)

    # -- run time -----------------------------------------------------------------------------

    def plan(self, run: RunSignature) -> RunHook | None:
        if not self.serves(run.session):
            return None
        with self._lock:
            model = self._models.get(run.number)
            if model is None:
                fetches = tuple(t.name for t in run.fetches)
                model = raw.ModelInfo(run.number, run.session.key, run.step, 0, 0, fetches)
                self._models[run.number] = model
            model.plans += 1
        return _ProfileHook(self, run)

    def wants(self, number: int) -> bool:
        """Whether the next run of signature ``number`` is traced."""
        return self.steps.includes(self._runs.get(number, 0))

    def ran(self, number: int) -> None:
        """A run of signature ``number`` handed its values back (after its hooks)."""
        with self._lock:
            self._runs[number] = self._runs.get(number, 0) + 1
            self._models[number].runs += 1
            self._done[number] = time.perf_counter_ns()

    def record(self, run: RunSignature, run_metadata: Any, asked: int) -> None:
        """One traced run's step stats, mapped and written.

        ``asked`` is when the run was asked for (``perf_counter_ns``): the time since the
        previous run of the signature handed its values back is the script's own (its input
        pipeline, its Python), without this profiler's work or TensorFlow's trace collection.
        """
        done = self._done.get(run.number)
        gap = asked - done if done is not None else -1
        ops, labels = _op_runs(run_metadata)
        session = run.session
        with self._lock:
            index = self._runs.get(run.number, 0)
            known = self._known.setdefault(session.key, set())
            new = [op.name for op in ops if op.name not in known]
            known.update(new)
            decided = self._decided.get(session.key, {})
        facts = [_facts(session, name, decided, labels.get(name, "")) for name in new]
        iteration = raw.Iteration(run.number, index, run.step, tuple(ops), gap)
        with self._lock:
            self._writer.add_ops(facts)
            self._writer.add_iteration(iteration)
            self.iterations += 1

    # -- the end ------------------------------------------------------------------------------

    def close(self) -> None:
        """Write the last raw data, then the tables, timeline, advice and page (once)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._write_meta()
                self._writer.close()
            except OSError as err:  # a full disk: the profile is cut short, say where
                raise OSError(err.errno, err.strerror, str(self.directory)) from None
        from tf2npu.debug.profile.report import analyse, write_outputs

        try:
            self.analysis = analyse(self.directory)
            write_outputs(self.analysis)
        except OSError as err:
            self.analysis = None  # no page to point to
            raise OSError(err.errno, err.strerror, err.filename or str(self.directory)) from None
        except ValueError as err:
            _LOG.error("tf2npu: analysing the profile in %s failed: %s", self.directory, err)

    def summary_part(self) -> dict[str, Any]:
        """One item of the summary's ``profiles``: the folder, traced runs and advice."""
        severities: dict[str, int] = {}
        for finding in self.analysis.findings if self.analysis is not None else ():
            name = finding.severity.value
            severities[name] = severities.get(name, 0) + 1
        profile = {"path": str(self.directory), "traced_runs": self.iterations,
                   "findings": severities, "complete": self.analysis is not None}  # fmt: skip
        return {"profiles": [profile]}

    def _write_meta(self) -> None:
        self._writer.write_meta(
            {
                "timestamp": self.timestamp,
                "device_id": self.device_id,
                "rank_id": self.rank_id,
                "spec": self.spec.to_json(),
                "steps": self.steps_text,
                "options": self._options,
                "models": {str(n): m.to_json() for n, m in sorted(self._models.items())},
            }
        )


def _fresh(path: Path) -> Path:
    """``path``, or ``path_1``, ``path_2``, ... when it exists (two profiles in one second)."""
    candidate, n = path, 0
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}_{n}")
    return candidate


class _ProfileHook(RunHook):
    """The runs of one signature: traced when the step selection covers them."""

    def __init__(self, profile: OpProfile, run: RunSignature) -> None:
        self._profile = profile
        self._run = run
        self._asked: int | None = None
        self._tracing = False

    def trace(self) -> bool:
        # Asked once per run, as it begins (the time the step's host-side wait ends).
        self._asked = time.perf_counter_ns()
        self._tracing = self._profile.wants(self._run.number)
        return self._tracing

    def on_metadata(self, run_metadata: Any) -> None:
        self._profile.record(self._run, run_metadata, self._asked or time.perf_counter_ns())

    def after_run(self, values: Sequence[Any], extras: Sequence[Any]) -> None:
        self._asked = None
        self._profile.ran(self._run.number)


# -- step stats -> raw rows ---------------------------------------------------------------------


def _op_runs(run_metadata: Any) -> tuple[list[raw.OpRun], dict[str, str]]:
    """Every ``NodeExecStats`` of the run as an :class:`~tf2npu.artifacts.profile_raw.OpRun`,
    and each node's ``timeline_label`` (``name = Type(inputs)``)."""
    from tf2npu.graph.report.ge_graph import ge_dtype_name

    runs = []
    labels = {}
    for device in run_metadata.step_stats.dev_stats:
        for node in device.node_stats:
            labels[node.node_name] = node.timeline_label
            start = node.all_start_nanos or node.all_start_micros * 1000
            duration = node.all_end_rel_nanos or node.all_end_rel_micros * 1000
            shapes, dtypes, sizes = [], [], []
            for output in node.output:
                tensor = output.tensor_description
                shapes.append(tuple(int(d.size) for d in tensor.shape.dim))
                dtypes.append(ge_dtype_name(tensor.dtype))
                sizes.append(int(tensor.allocation_description.requested_bytes))
            runs.append(
                raw.OpRun(
                    node.node_name, int(start), int(duration), int(node.thread_id),
                    tuple(shapes), tuple(dtypes), tuple(sizes),
                )
            )  # fmt: skip
    return runs, labels


def _decisions(graph: Graph, renamed: Mapping[str, str]) -> dict[str, _Decided]:
    """The engine's decision for each live top-level node, by the name the mirror runs it."""
    from tf2npu.graph.decisions import CLUSTER, SUPERSEDED

    found = {}
    for node in graph:
        if SUPERSEDED in node.meta:
            continue
        found[renamed.get(node.name, node.name)] = _decided(node, str(node.meta.get(CLUSTER, "")))
    return found


def _decided(node: Node, geop: str) -> _Decided:
    from tf2npu.graph.decisions import FUSED_BY, PLACEMENT, PRECISION, Placement, PrecisionDecision
    from tf2npu.graph.report.ge_graph import device_op

    precision = node.meta.get(PRECISION)
    changed = ""
    if isinstance(precision, PrecisionDecision) and precision.changed:
        changed = f"{precision.before}->{precision.after}"
    placement = node.meta.get(PLACEMENT)
    reason = message = ""
    if not geop and isinstance(placement, Placement):
        reason = "outside_geop" if placement.device else placement.reason
        message = _OUTSIDE_GEOP if placement.device else placement.message
    return _Decided(
        device_type=device_op(node),
        geop=geop,
        origin=tuple(node.origin),
        precision=changed,
        precision_reason=precision.reason if changed and precision is not None else "",
        fused_by=str(node.meta.get(FUSED_BY, "")),
        host_reason=reason,
        host_message=message,
    )


_OUTSIDE_GEOP = (
    "the device can run it, but no GeOp holds it (full-offload mode keeps only the largest "
    "GeOp; mix_compile_mode=True keeps several)"
)


def _facts(
    session: SessionInfo, name: str, decisions: Mapping[str, _Decided], label: str
) -> raw.OpFacts:
    """What the profile records about the executed node ``name`` (read once per session)."""
    decided = decisions.get(name)
    if name.startswith((_ARG, _RETVAL)):
        kind = "feed" if name.startswith(_ARG) else "fetch"
        tensor = _session_tensor(name)
        inputs = (tensor,) if kind == "fetch" else ()
        return raw.OpFacts(name, "_Arg" if kind == "feed" else "_Retval", kind=kind,
                           tensor=tensor, inputs=inputs, session=session.key)  # fmt: skip
    try:
        op = session.executed_graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return _rewritten(session, name, decisions, label)
    from tf2npu.graph.report.ge_graph import ge_dtype_name

    dtypes = tuple(ge_dtype_name(t.dtype.as_datatype_enum) for t in op.inputs)
    device_type = decided.device_type if decided is not None else op.type
    geop = decided.geop if decided is not None else ""
    info = _library().get(device_type)
    origin = decided.origin if decided is not None else ()
    return raw.OpFacts(
        name=name,
        type=op.type,
        ge_type=info.ge_op or device_type,
        geop=geop,
        origin=origin,
        where=first_created_at(session.graph, origin or (name,)),
        precision=decided.precision if decided is not None else "",
        precision_reason=decided.precision_reason if decided is not None else "",
        fused_by=decided.fused_by if decided is not None else "",
        host_reason=decided.host_reason if decided is not None else "",
        host_message=decided.host_message if decided is not None else "",
        order=int(op._id),
        inputs=tuple(t.name for t in op.inputs),
        input_dtypes=dtypes,
        input_shapes=tuple(_static_shape(t) for t in op.inputs),
        ai_core=_ai_core(info, device_type, _device_floats(decided, dtypes, op)),
        session=session.key,
    )


def _rewritten(
    session: SessionInfo, name: str, decisions: Mapping[str, _Decided], label: str
) -> raw.OpFacts:
    """A node TensorFlow's graph optimizer (grappler) made in the executed graph: its type and
    inputs from its timeline label, the rest from the node its name extends
    (``w/read/ArithmeticOptimizer/...`` stands where ``w/read`` was)."""
    op_type, inputs = _label(label)
    base = _original(name, decisions)
    decided = decisions.get(base)
    if decided is None:
        return raw.OpFacts(name, op_type, inputs=inputs, session=session.key)
    info = _library().get(op_type)
    return raw.OpFacts(
        name=name,
        type=op_type,
        ge_type=info.ge_op or op_type,
        geop=decided.geop,
        origin=decided.origin or (base,),
        where=first_created_at(session.graph, decided.origin or (base,)),
        precision=decided.precision,
        precision_reason=decided.precision_reason,
        host_reason=decided.host_reason,
        host_message=decided.host_message,
        inputs=inputs,
        ai_core=_ai_core(info, op_type, ()),
        session=session.key,
    )


def _original(name: str, known: Mapping[str, object]) -> str:
    """The node of ``known`` a grappler-made node ``name`` stands for ("" when none).

    Grappler names what it makes ``<scope>/<Optimizer>/<Rewrite>_<node's last name part>``
    (``g/ArithmeticOptimizer/ReorderCastLikeAndValuePreserving_float__tf2npu_to_f32`` for
    ``g/_tf2npu_to_f32``); failing that, the longest scope that is a node is taken.
    """
    parts = name.split("/")
    last = parts[-1]
    tails = [last] + [last[i + 1 :] for i, c in enumerate(last) if c == "_" and i + 1 < len(last)]
    for cut in range(len(parts) - 1, 0, -1):
        scope = [p for p in parts[:cut] if not p.endswith(_GRAPPLER_SUFFIXES)]
        for tail in tails:
            candidate = "/".join([*scope, tail])
            if candidate in known:
                return candidate
        if "/".join(scope) in known:
            return "/".join(scope)
    return ""


_GRAPPLER_SUFFIXES = ("Optimizer", "ConstantFolding", "Remapper")


def _label(label: str) -> tuple[str, tuple[str, ...]]:
    """``("Cast", ("a:0",))`` from a timeline label ``"b = Cast(a)"``."""
    _, _, call = label.partition(" = ")
    op_type, _, args = call.partition("(")
    names = [a.strip() for a in args.rstrip(")").split(",") if a.strip()]
    inputs = tuple(n if ":" in n else f"{n}:0" for n in names if not n.startswith("^"))
    return op_type.strip(), inputs


def _ai_core(info: Any, op_type: str, floats: Sequence[str]) -> bool:
    """Whether the device runs ``op_type`` on an AI Core (else its AI CPU): it has an AI Core
    kernel taking ``floats``; ops that only hand over a value are never AI CPU tasks."""
    if op_type in _HANDOVER or not info.device_supported:
        return True
    return bool(info.ge_op) and (not info.float_dtypes or set(floats) <= info.float_dtypes)


_HANDOVER = frozenset(
    {"Const", "Identity", "NoOp", "VariableV2", "VarHandleOp", "ReadVariableOp", "Placeholder",
     "StopGradient", "Snapshot"}
)  # fmt: skip


def _session_tensor(name: str) -> str:
    """``x:0`` for TensorFlow's ``_arg_x_0_0`` / ``_retval_x_0_0`` (``_<tensor>_<position>``)."""
    body = name.removeprefix(_ARG).removeprefix(_RETVAL)
    tensor = body.rpartition("_")[0]
    node, _, index = tensor.rpartition("_")
    return f"{node}:{index}" if node and index.isdigit() else tensor


_FLOATS = {"DT_FLOAT16": "float16", "DT_FLOAT": "float32", "DT_DOUBLE": "float64",
           "DT_BFLOAT16": "bfloat16"}  # fmt: skip


def _device_floats(decided: _Decided | None, inputs: Sequence[str], op: Any) -> list[str]:
    """The float dtypes the device computes the op in: the precision decision's (a CPU form
    computes a float16 op in float32 here), else those of its inputs and outputs."""
    if decided is not None and decided.precision:
        return [decided.precision.rpartition("->")[2]]
    return _float_names(inputs, op)


def _float_names(inputs: Sequence[str], op: Any) -> list[str]:
    """The float dtypes (``float16``, ...) among the op's inputs and outputs."""
    from tf2npu.graph.report.ge_graph import ge_dtype_name

    outputs = [ge_dtype_name(t.dtype.as_datatype_enum) for t in op.outputs]
    return sorted({_FLOATS[d] for d in (*inputs, *outputs) if d in _FLOATS})


def _static_shape(tensor: Any) -> tuple[int, ...] | None:
    shape = tensor.shape
    if shape.rank is None:
        return None
    return tuple(-1 if d is None else int(d) for d in shape.as_list())


def _library() -> Any:
    from tf2npu.graph.opinfo import load_default

    return load_default()

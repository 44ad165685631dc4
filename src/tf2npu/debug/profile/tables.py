"""msprof's tables from a raw profile: op_summary, op_statistic, step_trace, the timeline (TF-free).

Rows follow ``mindstudio_profiler_output/`` (reference debug-tools.md §6.2-6.3):

* :func:`op_rows`: one :class:`OpRow` per op execution in a traced run, plus one per tensor
  crossing a GeOp boundary (a *memcpy edge*). Device ops (GeOp members) are ``AI_CORE`` tasks,
  or ``AI_CPU`` when the device has no AI Core kernel for them in their dtypes (float64, ops
  without an AI Core kernel); host ops are ``AI_CPU`` tasks, as the adapter runs them on the
  host CPU. A memcpy row is ``MEMCPY_ASYNC`` with the tensor's bytes; host and device share
  memory here, so its duration is 0.
* :func:`step_rows`: one :class:`StepRow` per traced run: FP start, BP end, iteration end and
  time, data-augmentation bound, GetNext time, host-device copies.
* :func:`statistic_rows`: per (op type, core type): count, total/avg/min/max time, share.
* :func:`trace_events`: Chrome/Perfetto trace events: one process per GeOp, one for the host
  ops, one for memcpy edges, one for the iterations (FP/BP marked).

The device's PMU columns (``aicore_time(us)``, ``aic_mac_ratio``, ...) are left out: there is no
AI Core here to count cycles. Columns msprof does not have are appended after its own (readers
such as msprof-analyze look columns up by name).
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tf2npu.artifacts.profile import (
    NA,
    OP_STATISTIC_COLUMNS,
    OP_SUMMARY_COLUMNS,
    STEP_TRACE_COLUMNS,
)
from tf2npu.artifacts.profile_raw import HOST, Iteration, OpFacts, OpRun, RawProfile
from tf2npu.atomic import write_text_atomic

__all__ = [
    "MEMCPY",
    "OP_STATISTIC_COLUMNS",
    "OP_SUMMARY_COLUMNS",
    "STEP_TRACE_COLUMNS",
    "OpRow",
    "StatRow",
    "StepRow",
    "op_rows",
    "statistic_rows",
    "step_rows",
    "trace_events",
    "write_csv",
]


AI_CORE = "AI_CORE"
AI_CPU = "AI_CPU"
MEMCPY = "MEMCPY_ASYNC"
MEMCPY_TYPE = "MemcpyAsync"
HOST_STREAM = 0
"""Stream ID of the host ops; GeOps get 1, 2, ... in name order, memcpy edges the last."""

FP_SKIP_TYPES = frozenset(
    {"Const", "VariableV2", "VarHandleOp", "IteratorV2", "Identity", "Reshape", "Case", "NoOp",
     "Placeholder", "PlaceholderWithDefault"}
)  # fmt: skip
"""The adapter's fp_point rule skips these (reference §6.1; placeholders are fed, not run)."""
FP_SKIP_NAMES = ("step", "Dataset", "seed", "kernel")
BP_SKIP_TYPES = frozenset({"Assign", "Const", "NoOp"})
GETNEXT_TYPES = frozenset(
    {"IteratorGetNext", "IteratorGetNextSync", "IteratorGetNextAsOptional", "GetNext"}
)
REDUCE_TYPES = frozenset({"HcomAllReduce", "CollectiveReduce", "CollectiveReduceV2"})
_NOT_OPS = frozenset({"_SOURCE", "_SINK"})


# -- op_summary ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpRow:
    """One op_summary row."""

    model: int
    iteration: int
    """1-based, as msprof counts iterations."""
    task_id: int
    stream_id: int
    name: str
    op_type: str
    state: str
    task_type: str
    start_us: float
    duration_us: float
    wait_us: float
    input_shapes: str
    input_dtypes: str
    output_shapes: str
    output_dtypes: str
    geop: str = HOST
    origin: str = ""
    precision: str = ""
    fused_by: str = ""
    host_reason: str = ""
    where: str = ""
    nbytes: int = 0
    facts: OpFacts | None = None
    direction: str = ""
    """For a memcpy row: ``HtoD`` or ``DtoH``."""
    session_io: bool = False
    """For a memcpy row: the tensor is fed or fetched by the session (not between ops)."""

    @property
    def is_memcpy(self) -> bool:
        return self.task_type == MEMCPY

    def cells(self, device_id: int) -> list[Any]:
        return [
            device_id, self.model, self.task_id, self.stream_id, self.name, self.op_type,
            self.state, self.task_type, f"{self.start_us:.3f}", f"{self.duration_us:.3f}",
            f"{self.wait_us:.3f}", NA, NA, NA, self.input_shapes, self.input_dtypes,
            _formats(self.input_dtypes), self.output_shapes, self.output_dtypes,
            _formats(self.output_dtypes), NA, self.iteration, self.geop, self.origin,
            self.precision, self.fused_by, self.host_reason, self.where, self.nbytes,
        ]  # fmt: skip


def _formats(dtypes: str) -> str:
    """One ``ND`` per tensor: every tensor here is in the plain row-major layout."""
    return ";".join("ND" for _ in dtypes.split(";")) if dtypes else ""


def op_rows(profile: RawProfile) -> list[OpRow]:
    """Every op execution and memcpy edge of every traced run, in start order per run."""
    streams = _streams(profile)
    rows: list[OpRow] = []
    for iteration in profile.iterations:
        rows.extend(_iteration_rows(profile, iteration, streams))
    return rows


def _streams(profile: RawProfile) -> dict[str, int]:
    geops = sorted({op.geop for op in profile.all_facts() if op.geop})
    streams = {geop: i for i, geop in enumerate(geops, 1)}
    streams[HOST] = HOST_STREAM
    streams[MEMCPY] = len(geops) + 1
    return streams


def _iteration_rows(
    profile: RawProfile, iteration: Iteration, streams: Mapping[str, int]
) -> list[OpRow]:
    ops = profile.facts_of(iteration.model)
    runs = {run.name: run for run in iteration.ops}
    outputs = _outputs(ops, iteration)
    rows: list[OpRow] = []
    last_end: dict[int, float] = {}
    task_ids: dict[int, int] = defaultdict(int)
    for run in sorted(iteration.ops, key=lambda r: (r.start_ns, r.name)):
        facts = ops.get(run.name) or OpFacts(run.name, "")
        if run.name in _NOT_OPS or facts.kind != "op":
            continue
        stream = streams.get(facts.geop, HOST_STREAM)
        start, duration = run.start_ns / 1000, run.duration_ns / 1000
        wait = max(0.0, start - last_end[stream]) if stream in last_end else 0.0
        last_end[stream] = max(last_end.get(stream, 0.0), start + duration)
        shapes, dtypes = _inputs(facts, outputs)
        rows.append(
            OpRow(
                model=iteration.model,
                iteration=iteration.index + 1,
                task_id=task_ids[stream],
                stream_id=stream,
                name=run.name,
                op_type=facts.ge_type or facts.type,
                state=_state(facts, run),
                task_type=AI_CORE if facts.on_device and facts.ai_core else AI_CPU,
                start_us=start,
                duration_us=duration,
                wait_us=wait,
                input_shapes=shapes,
                input_dtypes=dtypes,
                output_shapes=";".join(_shape(s) for s in run.output_shapes),
                output_dtypes=";".join(run.output_dtypes),
                geop=facts.geop,
                origin=" ".join(facts.origin),
                precision=facts.precision,
                fused_by=facts.fused_by,
                host_reason=facts.host_reason,
                where=facts.where,
                facts=facts,
            )
        )
        task_ids[stream] += 1
    rows.extend(_memcpy_rows(ops, iteration, runs, outputs, streams[MEMCPY]))
    return rows


@dataclass(frozen=True, slots=True)
class _Output:
    """One tensor as a traced run produced it (or fed it)."""

    side: str
    """The producer's GeOp, ``""`` for the host (a host op, or the session's feed)."""
    shape: tuple[int, ...] | None
    dtype: str
    nbytes: int
    end_us: float
    fed: bool = False
    session_io: bool = False
    """The session feeds or fetches it (a copy every run makes, not one between ops)."""


def _outputs(ops: Mapping[str, OpFacts], iteration: Iteration) -> dict[str, _Output]:
    """Every tensor the run produced or was fed, by name (``node:index``)."""
    found: dict[str, _Output] = {}
    for run in iteration.ops:
        facts = ops.get(run.name)
        if facts is None or facts.kind == "fetch":
            continue
        fed = facts.kind == "feed"
        for index, shape in enumerate(run.output_shapes):
            name = facts.tensor if fed else f"{run.name}:{index}"
            dtype = run.output_dtypes[index] if index < len(run.output_dtypes) else ""
            nbytes = run.output_bytes[index] if index < len(run.output_bytes) else 0
            side = HOST if fed else facts.geop
            found[name] = _Output(side, shape, dtype, nbytes, run.end_ns / 1000, fed, fed)
    return found


def _inputs(facts: OpFacts, outputs: Mapping[str, _Output]) -> tuple[str, str]:
    """Input shapes and dtypes as msprof prints them: tensors joined by ``;``, dims by ``,``."""
    shapes, dtypes = [], []
    for i, tensor in enumerate(facts.inputs):
        seen = outputs.get(tensor)
        static = facts.input_shapes[i] if i < len(facts.input_shapes) else None
        shape = seen.shape if seen is not None and seen.shape is not None else static
        shapes.append(_shape(shape))
        dtype = facts.input_dtypes[i] if i < len(facts.input_dtypes) else ""
        dtypes.append(dtype or (seen.dtype if seen is not None else ""))
    return ";".join(shapes), ";".join(dtypes)


def _shape(shape: Sequence[int] | None) -> str:
    """``64,256``; a scalar is an empty string (so three scalars print as ``;;``)."""
    if shape is None:
        return "-2"
    return ",".join(str(d) for d in shape)


def _state(facts: OpFacts, run: OpRun) -> str:
    """``dynamic`` when a static input shape was unknown, else ``static``."""
    for shape in facts.input_shapes:
        if shape is None or any(d < 0 for d in shape):
            return "dynamic"
    return "static"


def _memcpy_rows(
    ops: Mapping[str, OpFacts],
    iteration: Iteration,
    runs: Mapping[str, OpRun],
    outputs: Mapping[str, _Output],
    stream: int,
) -> list[OpRow]:
    """One row per tensor crossing between a GeOp and the host (or another GeOp) in the run.

    A tensor read by several ops on the other side is copied once per side it goes to; a
    tensor going from one GeOp to another goes through the host (device to host, then host to
    device), as GeOps exchange tensors through TensorFlow.
    """
    copies: dict[tuple[str, str, str], _Output] = {}
    for_fetch = _fetch_only(ops)
    for name in runs:
        facts = ops.get(name)
        if facts is None or facts.kind == "feed":
            continue
        for tensor in facts.inputs:
            source = outputs.get(tensor)
            if source is None:
                continue
            reader = HOST if facts.kind == "fetch" else facts.geop
            if source.side == reader:
                continue
            session_io = source.fed or facts.kind == "fetch" or (not reader and name in for_fetch)
            if source.side:  # leaves a GeOp
                # A tensor the session fetches leaves its GeOp anyway: a host op reading it
                # too (a summary of the fetched loss) costs no copy of its own.
                key = (tensor, "DtoH", HOST)
                known = copies.get(key)
                if known is None or (session_io and not known.session_io):
                    copies[key] = _io(source, session_io)
            if reader:  # enters a GeOp
                copies.setdefault((tensor, "HtoD", reader), _io(source, session_io))
    rows = []
    for task, ((tensor, direction, reader), source) in enumerate(sorted(copies.items())):
        geop = source.side if direction == "DtoH" else reader
        rows.append(
            OpRow(
                model=iteration.model,
                iteration=iteration.index + 1,
                task_id=task,
                stream_id=stream,
                name=f"{MEMCPY_TYPE}:{tensor}:{direction}",
                op_type=MEMCPY_TYPE,
                state="static",
                task_type=MEMCPY,
                start_us=source.end_us,
                duration_us=0.0,
                wait_us=0.0,
                input_shapes=_shape(source.shape),
                input_dtypes=source.dtype,
                output_shapes=_shape(source.shape),
                output_dtypes=source.dtype,
                geop=geop,
                origin=tensor,
                nbytes=source.nbytes,
                direction=direction,
                session_io=source.session_io,
            )
        )
    return rows


def _fetch_only(ops: Mapping[str, OpFacts]) -> set[str]:
    """The ops whose outputs only the session's fetches read: the cast back to float32 of a
    fetched float16 loss, which the partition leaves outside the GeOp. The copy into such an
    op carries a fetch, one the session needs whatever the graph; it is session I/O."""
    readers: dict[str, set[str]] = {}
    for facts in ops.values():
        for tensor in facts.inputs:
            readers.setdefault(tensor.rpartition(":")[0], set()).add(facts.kind)
    return {name for name, kinds in readers.items() if kinds == {"fetch"}}


def _io(source: _Output, session_io: bool) -> _Output:
    """``source`` marked as fed or fetched by the session when ``session_io``."""
    return replace(source, session_io=True) if session_io else source


# -- op_statistic -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatRow:
    """One op_statistic row: one op type on one core type."""

    op_type: str
    core_type: str
    count: int
    total_us: float
    avg_us: float
    min_us: float
    max_us: float
    ratio: float
    """Percent of the total time of every op (memcpy edges excluded)."""

    def cells(self, device_id: int) -> list[Any]:
        return [
            device_id, self.op_type, self.core_type, self.count, f"{self.total_us:.3f}",
            f"{self.avg_us:.3f}", f"{self.min_us:.3f}", f"{self.max_us:.3f}",
            f"{self.ratio:.2f}",
        ]  # fmt: skip


def statistic_rows(rows: Iterable[OpRow]) -> list[StatRow]:
    """Per (op type, core type), by total time, largest first."""
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in rows:
        if not row.is_memcpy:
            groups[(row.op_type, row.task_type)].append(row.duration_us)
    total = sum(sum(times) for times in groups.values()) or 1.0
    stats = [
        StatRow(op, core, len(t), sum(t), sum(t) / len(t), min(t), max(t), 100 * sum(t) / total)
        for (op, core), t in groups.items()
    ]
    return sorted(stats, key=lambda s: (-s.total_us, s.op_type, s.core_type))


# -- step_trace ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StepRow:
    """One step_trace row (times in µs since the epoch; durations in µs; None = N/A)."""

    model: int
    iteration: int
    train: bool
    start_us: float
    end_us: float
    iteration_us: float
    fp_start_us: float | None
    bp_end_us: float | None
    data_aug_us: float | None
    getnext_us: float
    copies: int
    copy_bytes: int
    reduces: tuple[tuple[float, float], ...] = ()

    @property
    def fp_bp_us(self) -> float | None:
        if self.fp_start_us is None or self.bp_end_us is None:
            return None
        return self.bp_end_us - self.fp_start_us

    @property
    def refresh_us(self) -> float | None:
        return None if self.bp_end_us is None else self.end_us - self.bp_end_us

    @property
    def input_us(self) -> float:
        """Time spent waiting for input: the gap before the step plus GetNext."""
        return (self.data_aug_us or 0.0) + self.getnext_us

    @property
    def warmup(self) -> bool:
        """The signature's first run (TF builds its executor then)."""
        return self.iteration == 1

    def cells(self, device_id: int, reduce_pairs: int) -> list[Any]:
        reduces: list[Any] = []
        for start, duration in self.reduces:
            reduces += [_us(start), _us(duration)]
        reduces += [NA, NA] * (max(reduce_pairs, 1) - len(self.reduces))
        return [
            device_id, self.iteration, _us(self.fp_start_us), _us(self.bp_end_us),
            _us(self.end_us), _us(self.iteration_us), _us(self.fp_bp_us), _us(self.refresh_us),
            _us(self.data_aug_us), self.model, *reduces, "yes" if self.train else "no",
            _us(self.getnext_us), _us(self.input_us), self.copies, self.copy_bytes,
        ]  # fmt: skip


def _us(value: float | None) -> str:
    return NA if value is None else f"{value:.3f}"


def step_rows(profile: RawProfile, rows: Sequence[OpRow]) -> list[StepRow]:
    """One row per traced run, by model then iteration."""
    points = fp_bp_points(profile)
    copies: dict[tuple[int, int], list[OpRow]] = defaultdict(list)
    for row in rows:
        if row.is_memcpy and not row.session_io:
            copies[(row.model, row.iteration)].append(row)
    out = []
    for iteration in sorted(profile.iterations, key=lambda i: (i.model, i.index)):
        fp, bp = points.get(iteration.model, ("", ""))
        out.append(_step(profile, iteration, fp, bp, copies))
    return out


def _step(
    profile: RawProfile,
    iteration: Iteration,
    fp: str,
    bp: str,
    copies: Mapping[tuple[int, int], list[OpRow]],
) -> StepRow:
    runs = {run.name: run for run in iteration.ops}
    start, end = iteration.start_ns / 1000, iteration.end_ns / 1000
    fp_start = runs[fp].start_ns / 1000 if fp in runs else None
    bp_end = runs[bp].end_ns / 1000 if bp in runs else None
    gap = iteration.gap_ns / 1000 if iteration.gap_ns >= 0 else None
    kinds = profile.facts_of(iteration.model)
    types = {r.name: kinds[r.name].type if r.name in kinds else "" for r in iteration.ops}
    getnext_us = sum(r.duration_ns for r in iteration.ops if types[r.name] in GETNEXT_TYPES) / 1000
    reduces = tuple(
        (r.start_ns / 1000, r.duration_ns / 1000)
        for r in sorted(iteration.ops, key=lambda r: r.start_ns)
        if types[r.name] in REDUCE_TYPES
    )
    edges = copies.get((iteration.model, iteration.index + 1), [])
    return StepRow(
        model=iteration.model,
        iteration=iteration.index + 1,
        train=iteration.train,
        start_us=start,
        end_us=end,
        iteration_us=(end - start) + (gap or 0.0),
        fp_start_us=fp_start,
        bp_end_us=bp_end,
        data_aug_us=None if gap is None else gap + ((fp_start or start) - start),
        getnext_us=getnext_us,
        copies=len(edges),
        copy_bytes=sum(e.nbytes for e in edges),
        reduces=reduces,
    )


def _type(profile: RawProfile, model: int, name: str) -> str:
    facts = profile.facts_of(model).get(name)
    return facts.type if facts is not None else ""


def fp_bp_points(profile: RawProfile) -> dict[int, tuple[str, str]]:
    """Per model, the ops whose start is FP start and whose end is BP end ("" = none).

    ``fp_point``/``bp_point`` of the profiling options when given (the user's or the engine's
    name); else the adapter's rule over the model's ops in graph order: the first compute op
    (not a ``Const``, variable, iterator, ``Identity``, ``Reshape``, ``Case``, nor named after
    a step, dataset, seed or kernel), and the last op named ``gradients`` that is not an
    ``Assign``, ``Const`` or ``NoOp``. Device ops are chosen from when the model has any.
    """
    by_model: dict[int, set[str]] = defaultdict(set)
    for iteration in profile.iterations:
        by_model[iteration.model].update(run.name for run in iteration.ops)
    spec_fp, spec_bp = str(profile.spec.get("fp_point", "")), str(profile.spec.get("bp_point", ""))
    points = {}
    for model, names in by_model.items():
        known = profile.facts_of(model)
        ops = sorted(
            (known[n] for n in names if n in known and known[n].kind == "op"),
            key=lambda f: (f.order, f.name),
        )
        device = [op for op in ops if op.on_device] or ops
        fp = _named(ops, spec_fp) if spec_fp else _first_forward(device)
        bp = _named(ops, spec_bp) if spec_bp else _last_backward(device)
        points[model] = (fp, bp)
    return points


def _named(ops: Sequence[OpFacts], name: str) -> str:
    """The op called ``name``, or standing for the user's op ``name`` ("" when none)."""
    for op in ops:
        if op.name == name:
            return op.name
    for op in ops:
        if name in op.origin:
            return op.name
    return ""


def _first_forward(ops: Sequence[OpFacts]) -> str:
    for op in ops:
        if op.type in FP_SKIP_TYPES or any(word in op.name for word in FP_SKIP_NAMES):
            continue
        if "gradients" in op.name:
            return ""
        return op.name
    return ""


def _last_backward(ops: Sequence[OpFacts]) -> str:
    for op in reversed(ops):
        if "gradients" in op.name and op.type not in BP_SKIP_TYPES:
            return op.name
    return ""


# -- the timeline -------------------------------------------------------------------------------


def trace_events(
    profile: RawProfile, rows: Sequence[OpRow], steps: Sequence[StepRow]
) -> list[dict[str, Any]]:
    """The Chrome trace (``trace_view.json``) as msprof writes it, a top-level list of events:
    ``ts``/``dur`` in µs from the first traced op."""
    origin = min((row.start_us for row in rows), default=0.0)
    pids = {"Iterations": 1, "Host ops (AI CPU)": 2}
    for geop in sorted({row.geop for row in rows if row.geop and not row.is_memcpy}):
        pids[f"{geop} (device)"] = len(pids) + 1
    pids["Memcpy edges"] = len(pids) + 1
    events: list[dict[str, Any]] = []
    for name, pid in pids.items():
        events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}})
        sort = {"sort_index": pid}
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "args": sort})
    threads: dict[int, int] = {}
    runs = _thread_of(profile)
    for row in rows:
        if row.is_memcpy:
            pid, tid = pids["Memcpy edges"], 0
        else:
            pid = pids[f"{row.geop} (device)"] if row.geop else pids["Host ops (AI CPU)"]
            tid = threads.setdefault(
                runs.get((row.model, row.iteration, row.name), 0), len(threads) + 1
            )
        events.append(_event(row, pid, tid, origin))
    for step in steps:
        events.extend(_step_events(step, pids["Iterations"], origin))
    return events


def _thread_of(profile: RawProfile) -> dict[tuple[int, int, str], int]:
    return {
        (it.model, it.index + 1, run.name): run.thread
        for it in profile.iterations
        for run in it.ops
    }


def _event(row: OpRow, pid: int, tid: int, origin: float) -> dict[str, Any]:
    args: dict[str, Any] = {"type": row.op_type, "task type": row.task_type}
    for key, value in (
        ("model", row.model), ("iteration", row.iteration), ("origin", row.origin),
        ("precision", row.precision), ("fused by", row.fused_by), ("source", row.where),
        ("input shapes", row.input_shapes), ("input dtypes", row.input_dtypes),
        ("output shapes", row.output_shapes), ("bytes", row.nbytes),
    ):  # fmt: skip
        if value:
            args[key] = value
    return {
        "ph": "X",
        "name": row.name,
        "cat": row.task_type,
        "pid": pid,
        "tid": tid,
        "ts": round(row.start_us - origin, 3),
        "dur": round(row.duration_us, 3),
        "args": args,
    }


def _step_events(step: StepRow, pid: int, origin: float) -> list[dict[str, Any]]:
    name = f"model {step.model} iteration {step.iteration}"
    events: list[dict[str, Any]] = [
        {"ph": "X", "name": name, "cat": "iteration", "pid": pid, "tid": step.model,
         "ts": round(step.start_us - origin, 3), "dur": round(step.end_us - step.start_us, 3),
         "args": {"train": step.train}},
    ]  # fmt: skip
    for label, at in (("FP start", step.fp_start_us), ("BP end", step.bp_end_us)):
        if at is not None:
            events.append({"ph": "i", "s": "t", "name": label, "pid": pid, "tid": step.model,
                           "ts": round(at - origin, 3)})  # fmt: skip
    return events


# -- CSV ----------------------------------------------------------------------------------------


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """One CSV file, written atomically."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    write_text_atomic(path, buffer.getvalue())

"""Tensor dumps: the adapter's ``enable_dump`` / ``enable_dump_debug``, and golden dumps.

Three run instruments share one mechanism, :class:`TensorDump`:

* **NPU dump** (``enable_dump``, ``dump_path``, ``dump_step``, ``dump_mode``, ``dump_data``,
  ``dump_layer``): for each run signature of an NPU session, every GeOp the run executes is
  one *model*, as each run signature is one GE graph on the device. Its ops' inputs and/or
  outputs are written per step as the device writes them: one raw file per op, in the TLV
  layout msaccucmp reads without CANN, and the model's graph JSON in ``<dump_path>/graph/``
  so fused and cast ops map back to the user's ops (:mod:`tf2npu.artifacts.dump`,
  :mod:`tf2npu.artifacts.gegraph`).
* **Overflow dump** (``enable_dump_debug``, ``dump_debug_mode``): the same ops are checked each
  step; an op whose float16 output saturates (\\|x\\| >= 65504) or whose float output turns
  Inf/NaN while its inputs are finite gets an ``Opdebug`` record plus its input and output
  tensors. The CPU has no saturation mode, so where the 910 would saturate, Inf appears here.
* **Golden dump** (``tf2npu run --no-npu --dump DIR``): every op a stock session runs, outputs
  only, as precision_tool's ``tf/dump`` names them.

How values are taken: the instrument adds the tensors to the run's fetches. Only tensors the run
computes anyway are fetched (the ops the fetches and targets reach, outside v1 control-flow
frames and cond branches, whose tensors may be dead), so dumping changes no value and runs
nothing more. Files are written by one background thread per dump folder; a run waits only
when the disk falls behind by more than ``DumpWriter._BACKLOG`` bytes of tensors. Limits,
stated in ``docs/debugging.md``: nodes inside functions (``tf.function``, functional
``While``) are not dumped, nor are ref tensors (a ``VariableV2`` output; the variable's value
is dumped where it is read).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from tf2npu.artifacts import dump as dumpfile
from tf2npu.artifacts import gegraph
from tf2npu.artifacts.dump import Kind, NpuFileName
from tf2npu.config.dump_steps import DumpSteps
from tf2npu.runtime.instruments import RunHook, RunInstrument, RunSignature, SyncEvent

if TYPE_CHECKING:
    from tf2npu.config.options import NpuOptions
    from tf2npu.runtime.context import RuntimeContext

__all__ = [
    "DumpSpec",
    "DumpWriter",
    "GraphJsonDumps",
    "TensorDump",
    "golden_dump",
    "session_dump",
]

_LOG = logging.getLogger("tf2npu.runtime")
Flavour = Literal["npu", "overflow", "golden"]

_SWITCH = frozenset({"Switch", "RefSwitch"})
_MERGE = frozenset({"Merge", "RefMerge"})
_ENTER = frozenset({"Enter", "RefEnter"})
_EXIT = frozenset({"Exit", "RefExit"})
_DUMPABLE_KINDS = frozenset("biufc")
_FP16_MAX = 65504.0
_STATUS_FLOAT_OVERFLOW = 0x20
_STATUS_FP16_CONVERSION = 0x100


# -- what to dump ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DumpSpec:
    """One dump's settings, checked (the options' validation has run)."""

    flavour: Flavour
    path: Path
    steps: DumpSteps = field(default_factory=lambda: DumpSteps.parse(""))
    """``dump_step``: which executions of a model (``0|5|10-20``; "" = every one)."""
    mode: str = "output"
    """``input``, ``output`` or ``all`` (golden dumps: outputs)."""
    data: str = "tensor"
    """``tensor`` (.npy files) or ``stats`` (one CSV per op)."""
    layers: frozenset[str] = frozenset()
    """``dump_layer``: only these op names (the engine's or the user's); empty = all."""
    device_id: int = 0

    def wants_step(self, step: int) -> bool:
        return self.steps.includes(step)

    @property
    def kinds(self) -> tuple[Kind, ...]:
        if self.flavour == "overflow":
            return ("input", "output")
        if self.mode == "input":
            return ("input",)
        if self.mode == "output":
            return ("output",)
        return ("input", "output")


def session_dump(options: NpuOptions, ctx: RuntimeContext) -> RunInstrument | None:
    """The dump instrument an NPU session's options ask for, or None."""
    if not (options.enable_dump or options.enable_dump_debug):
        return None
    if not options.enable_dump and options.dump_debug_mode == "atomic_overflow":
        # What is checked here is the AI Core's: an op's own output (the CPU has no atomic
        # adds moving data from UB to global memory).
        _LOG.warning(
            "dump_debug_mode='atomic_overflow' checks atomic adds, which do not exist off the "
            "device: nothing will be recorded; use 'aicore_overflow' or 'all' to check ops"
        )
        return None
    layers = options.dump_layer.split()
    spec = DumpSpec(
        flavour="npu" if options.enable_dump else "overflow",
        path=Path(options.dump_path).absolute(),
        steps=DumpSteps.parse(options.dump_step if options.enable_dump else ""),
        mode=options.dump_mode,
        data=options.dump_data if options.enable_dump else "tensor",
        layers=frozenset(layers),
        device_id=options.env.device_id,
    )
    return TensorDump(spec, ctx)


def golden_dump(path: str | Path, ctx: RuntimeContext, steps: str = "") -> TensorDump:
    """The instrument of ``tf2npu run --no-npu --dump DIR`` (stock sessions)."""
    return TensorDump(DumpSpec("golden", Path(path).absolute(), DumpSteps.parse(steps)), ctx)


# -- graph dumps -----------------------------------------------------------------------------


class GraphJsonDumps(RunInstrument):
    """``DUMP_GE_GRAPH``: each compile's GeOps as one graph JSON in ``DUMP_GRAPH_PATH``.

    GE writes ``ge_proto_<n>_Build.txt`` there, which seed 001 converts with ``atc --mode=5``;
    we write the converted form, ``ge_proto_<graph number:08d>_Build.json``, directly (one
    graph per GeOp), so ``tf2npu compare -f`` takes it as it is.
    """

    def on_sync(self, event: SyncEvent) -> None:
        options = event.session.options
        if options is None or not options.env.dump_ge_graph:
            return
        graphs = event.ge_graphs
        if not graphs:
            return
        directory = Path(options.env.dump_graph_path or ".")
        directory.mkdir(parents=True, exist_ok=True)
        graphs = [gegraph.with_data_inputs(g) for g in graphs]
        gegraph.dump(graphs, directory / dumpfile.graph_json_name(event.graph_num))


# -- the instrument --------------------------------------------------------------------------


@dataclass
class _Model:
    """One GeOp's ops as a run signature executes them: the dump's model."""

    graph: gegraph.GeGraph
    model_id: int
    dir: Path
    """``<dump_path>/<time>/<device>/<model_name>/<model_id>``."""
    tensors: list[_Tensor] = field(default_factory=list)
    slots: dict[tuple[int, Kind], int] = field(default_factory=dict)
    """(task, input|output) -> how many tensors that side of the op has, dumped or not (a raw
    file holds them by position; one not taken is written as absent)."""
    graph_written: bool = False


@dataclass(frozen=True)
class _Tensor:
    """One dumped tensor: the op (task) it belongs to, input/output, index, fetch position."""

    task: int
    op_name: str
    op_type: str
    kind: Kind
    index: int
    fetch: int


class TensorDump(RunInstrument):
    """Dumps tensors of the runs it plans (see the module docstring)."""

    def __init__(self, spec: DumpSpec, ctx: RuntimeContext) -> None:
        self.spec = spec
        self._ctx = ctx
        self._clusters: dict[str, tuple[gegraph.GeGraph, int]] = {}
        """mirror node name -> (its GeOp's graph, the graph number of that compile)."""
        self._graphs: dict[tuple[int, str], gegraph.GeGraph] = {}
        self._writer = writer_for(ctx, spec.path)

    # -- compile time: which GeOp each node belongs to ---------------------------------------

    def on_sync(self, event: SyncEvent) -> None:
        if self.spec.flavour == "golden":
            return
        for graph in event.ge_graphs:
            self._graphs[(event.graph_num, graph.name)] = graph
            for op in graph.ops:
                self._clusters[op.name] = (graph, event.graph_num)

    # -- run time ----------------------------------------------------------------------------

    def plan(self, run: RunSignature) -> RunHook | None:
        fed = run.executed_feeds()
        executed = _executed_ops(run.executed_roots(), fed)
        skipped = _in_frames(executed)
        ops = [op for op in executed if op not in skipped]
        if self.spec.flavour == "golden":
            return _GoldenHook(self, ops, fed, run.number)
        return self._npu_hook(run, {op.name: op for op in ops}, fed)

    def _npu_hook(
        self, run: RunSignature, ops: dict[str, Any], fed: frozenset[str]
    ) -> RunHook | None:
        by_graph: dict[tuple[int, str], list[gegraph.GeOp]] = {}
        for name in ops:
            hit = self._clusters.get(name)
            if hit is None:
                continue
            graph, graph_num = hit
            by_graph.setdefault((graph_num, graph.name), [])
        extras: list[Any] = []
        positions: dict[str, int] = {}
        models: list[_Model] = []
        for key in sorted(by_graph):
            graph = self._graphs[key]
            kept = _with_producers(graph, [op for op in graph.ops if op.name in ops])
            if not any(op.name in ops and self._wanted(op) for op in kept):
                continue
            model_graph = _subgraph(graph, kept)
            model = self._model(model_graph, run.number)
            for op in model_graph.ops:
                if op.name in ops and self._wanted(op):
                    self._add_tensors(model, op, ops, fed, extras, positions)
            if model.tensors:
                models.append(model)
        if not models:
            return None
        return _NpuHook(self, models, extras, run)

    def _wanted(self, op: gegraph.GeOp) -> bool:
        layers = self.spec.layers
        return not layers or op.name in layers or any(n in layers for n in op.origins)

    def _model(self, graph: gegraph.GeGraph, model_id: int) -> _Model:
        """A GeOp as one signature runs it; its id is the signature's number (on the device,
        each run signature is a GE graph of its own), so a re-planned signature keeps it.
        Its name is the GeOp's with that number, one name per GE graph as on the device (the
        init and the train signatures running one GeOp are two models)."""
        name = dumpfile.model_name(graph.name, model_id)
        directory = self._writer.time_dir / str(self.spec.device_id) / name / str(model_id)
        return _Model(replace(graph, name=name), model_id, directory)

    def _add_tensors(
        self,
        model: _Model,
        op: gegraph.GeOp,
        ops: dict[str, Any],
        fed: frozenset[str],
        extras: list[Any],
        positions: dict[str, int],
    ) -> None:
        """Plan ``op``'s inputs and/or outputs as fetches. ``ops`` are the run's fetchable ops:
        an input made by any other op comes from inside a cond branch or while frame (a
        ``Merge``'s inputs, one of them dead in every run) and is left out."""
        tf_op = ops[op.name]
        sides: list[tuple[Kind, Sequence[Any]]] = []
        kinds = self.spec.kinds
        if "input" in kinds:  # the device form's inputs: lowering may compute it otherwise
            graph = tf_op.graph
            inputs = [t for t in op.inputs if not t.endswith(":-1")]
            sides.append(("input", [graph.get_tensor_by_name(t) for t in inputs]))
        if "output" in kinds:
            sides.append(("output", list(tf_op.outputs)))
        if self.spec.flavour == "overflow" and not any(_is_float(t) for t in tf_op.outputs):
            return
        for kind, tensors in sides:
            model.slots[(op.id, kind)] = len(tensors)
            for index, tensor in enumerate(tensors):
                if not _dumpable(tensor) or tensor.name in fed or tensor.op.name not in ops:
                    continue
                fetch = _position(tensor, extras, positions)
                model.tensors.append(_Tensor(op.id, op.name, op.type, kind, index, fetch))

    def close(self) -> None:
        self._writer.flush()


def _position(tensor: Any, extras: list[Any], positions: dict[str, int]) -> int:
    """Where ``tensor`` is among the extras (each tensor is fetched once)."""
    name = tensor.name
    if name not in positions:
        positions[name] = len(extras)
        extras.append(tensor)
    return positions[name]


class _StepCounter:
    """The step (execution) number of a signature's runs, taken when a run begins.

    :meth:`begin` and :meth:`end` pair up per thread: a signature run from two threads at
    once gives each run its own number.
    """

    def __init__(self, ctx: RuntimeContext, number: int) -> None:
        self._ctx = ctx
        self._number = number
        self._pending = threading.local()

    def begin(self) -> int:
        step = self._ctx.next_step(self._number)
        self._pending.step = step
        return step

    def end(self) -> int:
        step: int = self._pending.step
        return step


class _NpuHook(RunHook):
    """The runs of one signature: its models, and the step (execution) counter they share."""

    def __init__(
        self, dump: TensorDump, models: list[_Model], extras: list[Any], run: RunSignature
    ) -> None:
        self._dump = dump
        self._models = models
        self.extras = extras
        self._client = run.session.graph
        self._steps = _StepCounter(dump._ctx, run.number)

    def extras_for_run(self) -> Sequence[Any]:
        """Nothing on a step ``dump_step`` leaves out: it runs as fast as without a dump."""
        step = self._steps.begin()
        spec = self._dump.spec
        return self.extras if spec.flavour != "npu" or spec.wants_step(step) else ()

    def after_run(self, values: Sequence[Any], extras: Sequence[Any]) -> None:
        step = self._steps.end()
        if not extras and self.extras:
            return  # a step dump_step leaves out
        spec = self._dump.spec
        values = extras
        stamp = time.time_ns() // 1000
        writer = self._dump._writer
        with writer.holding(values):
            for model in self._models:
                if spec.flavour == "overflow":
                    _check_overflow(writer, model, step, values, stamp, self._client)
                    continue
                if not model.graph_written:
                    writer.put_graph(model, values)
                writer.put_step(model, step, values, stamp, stats=spec.data == "stats")


class _GoldenHook(RunHook):
    """A stock session's runs of one signature: every executed op's outputs."""

    def __init__(
        self, dump: TensorDump, ops: Iterable[Any], fed: frozenset[str], number: int
    ) -> None:
        self._dump = dump
        self._steps = _StepCounter(dump._ctx, number)
        self._number = number
        self.extras = []
        self._names: list[tuple[str, int]] = []
        for op in ops:
            for index, tensor in enumerate(op.outputs):
                if _dumpable(tensor) and tensor.name not in fed:
                    self.extras.append(tensor)
                    self._names.append((op.name, index))

    def extras_for_run(self) -> Sequence[Any]:
        return self.extras if self._dump.spec.wants_step(self._steps.begin()) else ()

    def after_run(self, values: Sequence[Any], extras: Sequence[Any]) -> None:
        step = self._steps.end()
        if not extras and self.extras:
            return  # a step dump_step leaves out
        stamp = time.time_ns() // 1000
        writer = self._dump._writer
        with writer.holding(extras):
            writer.put_golden(self._number, step, self._names, list(extras), stamp)


# -- overflow --------------------------------------------------------------------------------


def _check_overflow(
    writer: DumpWriter, model: _Model, step: int, values: Sequence[Any], stamp: int, client: Any
) -> None:
    """Record every op of ``model`` that overflowed in this step (inputs finite, output not)."""
    by_task: dict[int, list[_Tensor]] = {}
    for tensor in model.tensors:
        by_task.setdefault(tensor.task, []).append(tensor)
    for task, tensors in by_task.items():
        inputs = [values[t.fetch] for t in tensors if t.kind == "input"]
        outputs = [(t, values[t.fetch]) for t in tensors if t.kind == "output"]
        if not all(_finite(v) for v in inputs):
            continue
        bad = [(t, v) for t, v in outputs if _overflowed(v)]
        if not bad:
            continue
        if not model.graph_written:
            writer.put_graph(model, values)
        op = model.graph.ops[task]
        record = _opdebug_record(model, op, step, bad[0][1], _created_at(client, op.origins))
        writer.put_overflow(model, step, tensors, values, stamp + task, record)


def _finite(value: Any) -> bool:
    array = np.asarray(value)
    return array.dtype.kind != "f" or bool(np.isfinite(array).all())


def _overflowed(value: Any) -> bool:
    array = np.asarray(value)
    if array.dtype.kind != "f":
        return False
    if not np.isfinite(array).all():
        return True
    return array.dtype == np.float16 and array.size > 0 and float(np.abs(array).max()) >= _FP16_MAX


def _created_at(client: Any, names: Sequence[str]) -> str:
    """Where the user's script created the first of ``names`` that is a client op."""
    from tf2npu.runtime.errors import created_at

    for name in names:
        try:
            return created_at(client.get_operation_by_name(name))
        except (KeyError, ValueError):
            continue
    return ""


def _opdebug_record(
    model: _Model, op: gegraph.GeOp, step: int, value: Any, where: str
) -> dict[str, Any]:
    array = np.asarray(value)
    saturated = bool(np.isfinite(array).all())
    fp16_cast = op.type == "Cast" and array.dtype == np.float16
    status = _STATUS_FP16_CONVERSION if fp16_cast else _STATUS_FLOAT_OVERFLOW
    return {
        "AI Core": {
            "status": status,
            "task_id": op.id,
            "stream_id": 0,
            "model_id": model.model_id,
            "step": step,
            "op_name": op.name,
            "op_type": op.type,
            "origin": list(op.origins),
            "created_at": where,
            "kind": "saturation" if saturated else "inf_nan",
            "dtype": dumpfile.ge_dtype(array.dtype),
        }
    }


# -- writing ---------------------------------------------------------------------------------


class DumpWriter:
    """Writes one dump folder's files from a background thread, in the order given.

    One per ``dump_path`` per context, so every session of a run shares its ``time`` folder.
    """

    _QUEUE = 256
    """Items in flight; a run blocks when the disk falls this far behind."""
    _BACKLOG = 1 << 30
    """Bytes of fetched tensors the queued items keep alive; a run that would go beyond waits
    (one run's tensors always get in), so a slow disk costs time, never all the memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._time = time.strftime(dumpfile.TIME_FORMAT)
        self.time_dir = path / self._time
        self.files = 0
        self.bytes = 0
        self._queue: queue.Queue[Any] = queue.Queue(self._QUEUE)
        self._backlog = 0
        self._room = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="tf2npu-dump", daemon=True)
        self._thread.start()
        self._error: BaseException | None = None
        self.failure = ""
        """Why the dump was cut short (the first write error), "" while it is complete."""
        atexit.register(self.flush)

    # -- producers (the run's thread) --------------------------------------------------------

    @contextlib.contextmanager
    def holding(self, values: Sequence[Any]) -> Iterator[None]:
        """Items put inside keep ``values`` alive until written: waits first while the
        backlog is full (:attr:`_BACKLOG`), releases them after the last of those items."""
        nbytes = sum(int(getattr(value, "nbytes", 0)) for value in values)
        with self._room:
            while self._backlog and self._backlog + nbytes > self._BACKLOG:
                self._room.wait()
            self._backlog += nbytes
        try:
            yield
        finally:
            self._queue.put((self._release, (nbytes,)))

    def put_graph(self, model: _Model, values: Sequence[Any]) -> None:
        """Write the model's graph JSON, with the shapes this step's values have (the
        engine's graph often leaves them unknown)."""
        model.graph_written = True
        model.graph = _with_shapes(model.graph, model.tensors, values)
        path = dumpfile.model_graph_json(self.path, self._time, model.graph.name)
        self._queue.put((self._write_graph, (path, model.graph)))

    def put_step(
        self, model: _Model, step: int, values: Sequence[Any], stamp: int, *, stats: bool
    ) -> None:
        self._queue.put((self._write_step, (model, step, values, stamp, stats)))

    def put_golden(
        self,
        run: int,
        step: int,
        names: Sequence[tuple[str, int]],
        values: Sequence[Any],
        stamp: int,
    ) -> None:
        self._queue.put((self._write_golden, (run, step, names, values, stamp)))

    def put_overflow(
        self,
        model: _Model,
        step: int,
        tensors: Sequence[_Tensor],
        values: Sequence[Any],
        stamp: int,
        record: dict[str, Any],
    ) -> None:
        self._queue.put((self._write_overflow, (model, step, tensors, values, stamp, record)))

    def flush(self) -> None:
        """Wait until every queued file is written; re-raise a write error once."""
        self._queue.join()
        error, self._error = self._error, None
        if error is not None:
            raise OSError(f"tf2npu: writing the dump under {self.path} failed: {error}")

    # -- the writer thread -------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            work, args = self._queue.get()
            try:
                if self._error is None or work == self._release:
                    work(*args)
            except Exception as err:  # kept for flush(): the thread must live on
                self._error = err
                self.failure = self.failure or str(err)
                _LOG.error("tf2npu: writing the dump under %s failed: %s", self.path, err)
            finally:
                self._queue.task_done()

    def _release(self, nbytes: int) -> None:
        with self._room:
            self._backlog -= nbytes
            self._room.notify_all()

    def _save(self, path: Path, value: Any) -> None:
        array = np.asarray(value)
        dumpfile.save_npy(path, array)
        self.files += 1
        self.bytes += array.nbytes

    def _write_graph(self, path: Path, graph: gegraph.GeGraph) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        gegraph.dump(graph, path)

    def _write_step(
        self, model: _Model, step: int, values: Sequence[Any], stamp: int, stats: bool
    ) -> None:
        directory = model.dir / str(step)
        directory.mkdir(parents=True, exist_ok=True)
        if stats:
            self._write_stats(model, directory, values, stamp)
            return
        by_task: dict[int, list[_Tensor]] = {}
        for tensor in model.tensors:
            by_task.setdefault(tensor.task, []).append(tensor)
        for task, tensors in by_task.items():
            self._write_raw(model, directory, task, tensors, values, stamp)

    def _write_raw(
        self,
        model: _Model,
        directory: Path,
        task: int,
        tensors: Sequence[_Tensor],
        values: Sequence[Any],
        stamp: int,
    ) -> None:
        """One op's raw file: all its inputs, then all its outputs, by position."""
        sides: dict[Kind, list[Any]] = {
            kind: [None] * model.slots.get((task, kind), 0) for kind in ("input", "output")
        }
        for tensor in tensors:
            sides[tensor.kind][tensor.index] = values[tensor.fetch]
        op = model.graph.ops[task]
        origins = [_origin(op, i) for i in range(len(sides["output"]))]
        path = directory / _file_name(tensors[0], stamp).base
        self.bytes += dumpfile.write_nano(path, sides["input"], sides["output"], origins)
        self.files += 1

    def _write_stats(
        self, model: _Model, directory: Path, values: Sequence[Any], stamp: int
    ) -> None:
        """One CSV per op; a tensor several ops read (an output and the next op's input) is
        measured once."""
        figures: dict[int, dumpfile.TensorStats] = {}
        tasks: dict[int, tuple[_Tensor, list[dumpfile.TensorStats]]] = {}
        for tensor in model.tensors:
            row = figures.get(tensor.fetch)
            if row is None:
                value = np.asarray(values[tensor.fetch])
                row = figures[tensor.fetch] = dumpfile.tensor_stats(tensor.kind, 0, value)
            row = replace(row, kind=tensor.kind, index=tensor.index)
            tasks.setdefault(tensor.task, (tensor, []))[1].append(row)
        for first, rows in tasks.values():
            dumpfile.write_stats_csv(directory / _file_name(first, stamp).stats(), rows)
            self.files += 1

    def _write_golden(
        self,
        run: int,
        step: int,
        names: Sequence[tuple[str, int]],
        values: Sequence[Any],
        stamp: int,
    ) -> None:
        directory = self.path / str(run) / str(step)
        directory.mkdir(parents=True, exist_ok=True)
        for (op_name, index), value in zip(names, values, strict=True):
            self._save(directory / dumpfile.golden_name(op_name, index, stamp), value)

    def _write_overflow(
        self,
        model: _Model,
        step: int,
        tensors: Sequence[_Tensor],
        values: Sequence[Any],
        stamp: int,
        record: dict[str, Any],
    ) -> None:
        directory = model.dir / str(step)
        directory.mkdir(parents=True, exist_ok=True)
        task = tensors[0].task
        text = json.dumps(record, indent=1)
        (directory / dumpfile.opdebug_name(task, 0, stamp)).write_text(text, encoding="utf-8")
        self.files += 1
        self._write_raw(model, directory, task, tensors, values, stamp)


def _origin(op: gegraph.GeOp, index: int) -> tuple[str, int]:
    """The user tensor output ``index`` of ``op`` stands for (the raw header's origin)."""
    desc = op.output_desc[index] if index < len(op.output_desc) else None
    if desc is not None and desc.origin_name is not None:
        return desc.origin_name, index if desc.origin_index is None else desc.origin_index
    return op.origins[-1], index


def _file_name(tensor: _Tensor, stamp: int) -> NpuFileName:
    return NpuFileName(
        dumpfile.sanitize(tensor.op_type),
        dumpfile.sanitize(tensor.op_name),
        tensor.task,
        0,
        stamp + tensor.task,
    )


def writer_for(ctx: RuntimeContext, path: Path) -> DumpWriter:
    """The context's writer for ``path`` (made on first use)."""
    with ctx.lock:
        writer = ctx.dump_writers.get(path)
        if writer is None:
            writer = ctx.dump_writers[path] = DumpWriter(path)
        return writer


# -- which ops a run executes ----------------------------------------------------------------


def _executed_ops(roots: Iterable[Any], fed: frozenset[str]) -> list[Any]:
    """The ops a run of ``roots`` executes (data and control inputs, transitively; a fed
    tensor's producer only when something else needs it), in creation order."""
    seen: dict[str, Any] = {}
    stack = list(roots)
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen[op.name] = op
        stack.extend(t.op for t in op.inputs if t.name not in fed)
        stack.extend(op.control_inputs)
    return sorted(seen.values(), key=lambda op: op._id)


def _in_frames(ops: Sequence[Any]) -> set[Any]:
    """Ops inside v1 while frames (after ``Enter``, before ``Exit``) or cond branches (after
    ``Switch``, before ``Merge``): their tensors may be dead or per-iteration, never fetchable."""
    members = set(ops)
    inside: set[Any] = set()
    for starts, stops in ((_SWITCH, _MERGE), (_ENTER, _EXIT)):
        stack = [op for op in ops if op.type in starts]
        seen: set[Any] = set()
        while stack:
            op = stack.pop()
            if op in seen or op.type in stops:
                continue
            seen.add(op)
            inside.add(op)
            for tensor in op.outputs:
                stack.extend(c for c in tensor.consumers() if c in members)
            stack.extend(c for c in op._control_outputs if c in members)
    return inside


_ALIASING = frozenset({"Identity", "StopGradient", "PreventGradient"})
"""Ops whose output is their input's buffer, not a copy."""


def _dumpable(tensor: Any) -> bool:
    """A numeric tensor whose fetched value is the value the run computed.

    Not a ref (``VariableV2``, ``Assign``'s first input: it may be read before the run
    initialises it), nor a read of one (``w/read``, an ``Identity`` of the ref): both share the
    variable's buffer, which the same run updates in place before the value is copied out, so
    the dump would show the updated variable, not what the ops used. A resource variable's
    ``ReadVariableOp`` is copied on update, so it is dumped.
    """
    if tensor.dtype._is_ref_dtype or _reads_a_ref(tensor):
        return False
    dtype = tensor.dtype.base_dtype
    return (
        bool(dtype.is_numpy_compatible) and np.dtype(dtype.as_numpy_dtype).kind in _DUMPABLE_KINDS
    )


def _reads_a_ref(tensor: Any) -> bool:
    op = tensor.op
    while op.type in _ALIASING and op.inputs:
        source = op.inputs[0]
        if source.dtype._is_ref_dtype:
            return True
        op = source.op
    return False


def _is_float(tensor: Any) -> bool:
    return bool(tensor.dtype.base_dtype.is_floating)


def _with_shapes(
    graph: gegraph.GeGraph, tensors: Sequence[_Tensor], values: Sequence[Any]
) -> gegraph.GeGraph:
    """``graph`` with each dumped tensor's descriptor given the shape of its value."""
    shapes = {(t.task, t.kind, t.index): tuple(np.shape(values[t.fetch])) for t in tensors}
    if not shapes:
        return graph

    def descs(op: gegraph.GeOp, kind: Kind) -> tuple[gegraph.TensorDesc, ...]:
        given = op.input_desc if kind == "input" else op.output_desc
        return tuple(
            replace(d, shape=shapes.get((op.id, kind, i), d.shape)) for i, d in enumerate(given)
        )

    ops = tuple(
        replace(op, input_desc=descs(op, "input"), output_desc=descs(op, "output"))
        for op in graph.ops
    )
    return replace(graph, ops=ops)


def _with_producers(graph: gegraph.GeGraph, ops: Sequence[gegraph.GeOp]) -> list[gegraph.GeOp]:
    """``ops`` and the ops of ``graph`` they read from, transitively, in the graph's order.

    An op of the GeOp the run computes under another name (a float16 op the CPU emulates in
    float32) is not among a run's ops, yet ops of the run read it: it stays in the model's
    graph JSON (undumped), so every input names an op of the JSON, as msaccucmp requires.
    """
    by_name = {op.name: op for op in graph.ops}
    wanted = {op.name for op in ops}
    stack = list(wanted)
    while stack:
        for text in by_name[stack.pop()].inputs:
            producer, _, index = text.rpartition(":")
            if index != "-1" and producer in by_name and producer not in wanted:
                wanted.add(producer)
                stack.append(producer)
    return [op for op in graph.ops if op.name in wanted]


def _subgraph(graph: gegraph.GeGraph, kept: Sequence[gegraph.GeOp]) -> gegraph.GeGraph:
    """``graph`` restricted to ``kept`` (in its order), with a ``Data`` op per input from
    outside (:func:`tf2npu.artifacts.gegraph.with_data_inputs`), ids renumbered 0..n-1."""
    return gegraph.with_data_inputs(replace(graph, ops=tuple(kept)))


def dump_figures(ctx: RuntimeContext) -> list[dict[str, Any]]:
    """Per dump folder of this context: its path, files written and tensor bytes (after
    :meth:`RuntimeContext.close` has waited for the writers)."""
    return [
        {"path": os.fspath(w.path), "files": w.files, "bytes": w.bytes}
        | ({"complete": False, "error": w.failure} if w.failure else {"complete": True})
        for w in ctx.dump_writers.values()
    ]

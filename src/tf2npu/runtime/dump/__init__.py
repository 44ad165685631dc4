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
nothing more. A ``dump_data=stats`` dump fetches no float tensor: the run computes their
statistics itself and hands over eight numbers each (:mod:`tf2npu.runtime.dump.measure`).
Files are written by one background thread per dump folder; a run waits only
when the disk falls behind by more than ``DumpWriter._BACKLOG`` bytes of tensors. Limits,
stated in ``docs/debugging.md``: nodes inside functions (``tf.function``, functional
``While``) are not dumped, nor are ref tensors (a ``VariableV2`` output; the variable's value
is dumped where it is read).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from tf2npu.artifacts import dump as dumpfile
from tf2npu.artifacts import gegraph
from tf2npu.artifacts.dump import Kind
from tf2npu.config.dump_steps import DumpSteps
from tf2npu.runtime.dump.ge_build import GraphJsonDumps
from tf2npu.runtime.dump.measure import StatsPlan
from tf2npu.runtime.dump.overflow import check_overflow
from tf2npu.runtime.dump.select import (
    DumpModel,
    DumpTensor,
    dumpable,
    executed_ops,
    in_frames,
    is_float,
    subgraph,
    with_producers,
)
from tf2npu.runtime.dump.writer import DumpWriter, writer_for
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


class TensorDump(RunInstrument):
    """Dumps tensors of the runs it plans (see the module docstring)."""

    def __init__(self, spec: DumpSpec, ctx: RuntimeContext) -> None:
        self.spec = spec
        self._ctx = ctx
        self._clusters: dict[str, tuple[gegraph.GeGraph, int]] = {}
        """mirror node name -> (its GeOp's graph, the graph number of that compile)."""
        self._graphs: dict[tuple[int, str], gegraph.GeGraph] = {}
        self._figures: dict[str, Any] = {}
        """``dump_data=stats``: mirror tensor name -> its figures in the graph (made once)."""
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
        executed = executed_ops(run.executed_roots(), fed)
        skipped = in_frames(executed)
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
        models: list[DumpModel] = []
        for key in sorted(by_graph):
            graph = self._graphs[key]
            kept = with_producers(graph, [op for op in graph.ops if op.name in ops])
            if not any(op.name in ops and self._wanted(op) for op in kept):
                continue
            model_graph = subgraph(graph, kept)
            model = self._model(model_graph, run.number)
            for op in model_graph.ops:
                if op.name in ops and self._wanted(op):
                    self._add_tensors(model, op, ops, fed, extras, positions)
            if model.tensors:
                models.append(model)
        if not models:
            return None
        if self.spec.flavour == "npu" and self.spec.data == "stats":
            plan = StatsPlan.of(extras, self._figures)
            self._writer.statistics = plan.statistics or self._writer.statistics
            return _StatsHook(self, models, list(plan.fetches), run, plan)
        return _NpuHook(self, models, extras, run)

    def _wanted(self, op: gegraph.GeOp) -> bool:
        layers = self.spec.layers
        return not layers or op.name in layers or any(n in layers for n in op.origins)

    def _model(self, graph: gegraph.GeGraph, model_id: int) -> DumpModel:
        """A GeOp as one signature runs it; its id is the signature's number (on the device,
        each run signature is a GE graph of its own), so a re-planned signature keeps it.
        Its name is the GeOp's with that number, one name per GE graph as on the device (the
        init and the train signatures running one GeOp are two models)."""
        name = dumpfile.model_name(graph.name, model_id)
        directory = self._writer.time_dir / str(self.spec.device_id) / name / str(model_id)
        return DumpModel(replace(graph, name=name), model_id, directory)

    def _add_tensors(
        self,
        model: DumpModel,
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
        if self.spec.flavour == "overflow" and not any(is_float(t) for t in tf_op.outputs):
            return
        for kind, tensors in sides:
            model.slots[(op.id, kind)] = len(tensors)
            for index, tensor in enumerate(tensors):
                if not dumpable(tensor) or tensor.name in fed or tensor.op.name not in ops:
                    continue
                fetch = _position(tensor, extras, positions)
                model.tensors.append(DumpTensor(op.id, op.name, op.type, kind, index, fetch))

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
        self, dump: TensorDump, models: list[DumpModel], extras: list[Any], run: RunSignature
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
                    check_overflow(writer, model, step, values, stamp, self._client)
                    continue
                if not model.graph_written:
                    writer.put_graph(model, [np.shape(v) for v in values])
                writer.put_step(model, step, values, stamp, stats=spec.data == "stats")


class _StatsHook(_NpuHook):
    """``dump_data=stats``: the run computes each float tensor's figures and hands over
    those (:mod:`tf2npu.runtime.dump.measure`), never the tensors."""

    def __init__(
        self,
        dump: TensorDump,
        models: list[DumpModel],
        extras: list[Any],
        run: RunSignature,
        plan: StatsPlan,
    ) -> None:
        super().__init__(dump, models, extras, run)
        self._plan = plan

    def after_run(self, values: Sequence[Any], extras: Sequence[Any]) -> None:
        step = self._steps.end()
        if not extras and self.extras:
            return  # a step dump_step leaves out
        rows, shapes = self._plan.decode(extras)
        stamp = time.time_ns() // 1000
        writer = self._dump._writer
        with writer.holding(rows):
            for model in self._models:
                if not model.graph_written:
                    writer.put_graph(model, shapes)
                writer.put_step(model, step, rows, stamp, stats=True)


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
                if dumpable(tensor) and tensor.name not in fed:
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


def dump_figures(ctx: RuntimeContext) -> list[dict[str, Any]]:
    """Per dump folder of this context: its path, files written and tensor bytes (after
    :meth:`RuntimeContext.close` has waited for the writers), and for a stats dump what
    measured its float tensors (``statistics``: the statistics op, or TensorFlow's reductions
    and why)."""
    return [
        {"path": os.fspath(w.path), "files": w.files, "bytes": w.bytes}
        | ({"statistics": w.statistics} if w.statistics else {})
        | ({"complete": False, "error": w.failure} if w.failure else {"complete": True})
        for w in ctx.dump_writers.values()
    ]

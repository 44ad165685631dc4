"""The dump writer: one background thread per dump folder writes what the hooks hand it.

A run waits only when the disk falls behind by more than ``DumpWriter._BACKLOG`` bytes; a write
error (a full disk) cuts the dump short and is reported, never a traceback.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tf2npu.artifacts import dump as dumpfile
from tf2npu.artifacts import gegraph, opdebug
from tf2npu.artifacts.dump import Kind, NpuFileName
from tf2npu.runtime.dump.select import DumpModel, DumpTensor, with_shapes

if TYPE_CHECKING:
    from tf2npu.runtime.context import RuntimeContext


_LOG = logging.getLogger("tf2npu.runtime")


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
        self.statistics = ""
        """What measured a stats dump's float tensors (``measure.Method.label``), for the run
        summary; "" when no stats dump wrote here."""
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

    def put_graph(self, model: DumpModel, shapes: Sequence[tuple[int, ...]]) -> None:
        """Write the model's graph JSON, with the shapes this step's values have (the
        engine's graph often leaves them unknown), by fetch position."""
        model.graph_written = True
        model.graph = with_shapes(model.graph, model.tensors, shapes)
        path = dumpfile.model_graph_json(self.path, self._time, model.graph.name)
        self._queue.put((self._write_graph, (path, model.graph)))

    def put_step(
        self, model: DumpModel, step: int, values: Sequence[Any], stamp: int, *, stats: bool
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
        model: DumpModel,
        step: int,
        tensors: Sequence[DumpTensor],
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
        self, model: DumpModel, step: int, values: Sequence[Any], stamp: int, stats: bool
    ) -> None:
        directory = model.dir / str(step)
        directory.mkdir(parents=True, exist_ok=True)
        if stats:
            self._write_stats(model, directory, values, stamp)
            return
        by_task: dict[int, list[DumpTensor]] = {}
        for tensor in model.tensors:
            by_task.setdefault(tensor.task, []).append(tensor)
        for task, tensors in by_task.items():
            self._write_raw(model, directory, task, tensors, values, stamp)

    def _write_raw(
        self,
        model: DumpModel,
        directory: Path,
        task: int,
        tensors: Sequence[DumpTensor],
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
        origins = [origin(op, i) for i in range(len(sides["output"]))]
        path = directory / file_name(tensors[0], stamp).base
        self.bytes += dumpfile.write_nano(path, sides["input"], sides["output"], origins)
        self.files += 1

    def _write_stats(
        self, model: DumpModel, directory: Path, values: Sequence[Any], stamp: int
    ) -> None:
        """One CSV per op; a tensor several ops read (an output and the next op's input) is
        measured and formatted once. A value is a tensor, or its row already (measured inside
        the run: :mod:`tf2npu.runtime.dump.measure`)."""
        tails: dict[int, str] = {}
        tasks: dict[int, tuple[DumpTensor, list[tuple[Kind, int, str]]]] = {}
        for tensor in model.tensors:
            tail = tails.get(tensor.fetch)
            if tail is None:
                value = values[tensor.fetch]
                if not isinstance(value, dumpfile.TensorStats):
                    value = dumpfile.tensor_stats(tensor.kind, 0, np.asarray(value))
                tail = tails[tensor.fetch] = dumpfile.stats_line_tail(value)
            tasks.setdefault(tensor.task, (tensor, []))[1].append((tensor.kind, tensor.index, tail))
        folder = os.fspath(directory)
        for first, rows in tasks.values():
            dumpfile.write_stats_lines(f"{folder}/{file_name(first, stamp).stats()}", rows)
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
        model: DumpModel,
        step: int,
        tensors: Sequence[DumpTensor],
        values: Sequence[Any],
        stamp: int,
        record: dict[str, Any],
    ) -> None:
        directory = model.dir / str(step)
        directory.mkdir(parents=True, exist_ok=True)
        task = tensors[0].task
        core = record["AI Core"]
        unit = opdebug.UnitInfo(core["model_id"], core["stream_id"], core["task_id"])
        name = opdebug.raw_opdebug_name(task, 0, stamp)
        opdebug.write_raw_record(directory / name, opdebug.encode_old_record(unit, core["status"]))
        facts = {k: v for k, v in core.items() if k not in opdebug.DEVICE_FIELDS}
        opdebug.append_sidecar(directory, name, facts)
        self.files += 1
        self._write_raw(model, directory, task, tensors, values, stamp)


def origin(op: gegraph.GeOp, index: int) -> tuple[str, int]:
    """The user tensor output ``index`` of ``op`` stands for (the raw header's origin)."""
    desc = op.output_desc[index] if index < len(op.output_desc) else None
    if desc is not None and desc.origin_name is not None:
        return desc.origin_name, index if desc.origin_index is None else desc.origin_index
    return op.origins[-1], index


def file_name(tensor: DumpTensor, stamp: int) -> NpuFileName:
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

"""A multi-rank job as run instruments: where its sessions run, its failures, what it moved.

:class:`DistributedInstrument` puts a rank's sessions (NPU and stock alike) onto its server
(``session_target``: :func:`~tf2npu.runtime.distributed.world.session_args`, an NPU session's
``hccl_timeout`` bounding each run) and makes a failed collective fatal (``on_run_error``: the
:class:`~tf2npu.runtime.distributed.errors.CollectiveError` naming the rank, the HCCL op and
node, and the collectives a run that timed out was waiting in).

:class:`CollectiveCounter` counts. When a run signature is planned it finds the ``Hcom*`` nodes
the run executes (in the client graph, where they keep their HCCL op type in the ``_npu_op``
attr); after each run it adds one execution of each and the bytes of its input (static shape;
unknown shapes count 0 bytes). A training step's first fetched float scalar is taken as the
loss. ``tf2npu run`` puts :meth:`CollectiveCounter.summary` under the key ``distributed`` of
each rank's ``run_summary.json``; the launcher merges them.

``tf2npu run`` adds both to the instruments of a rank of a multi-rank job.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from tf2npu.client.hcom import FUSED_ATTR, hcom_type
from tf2npu.runtime.distributed.errors import fatal_failure
from tf2npu.runtime.distributed.world import session_args
from tf2npu.runtime.instruments import RunHook, RunInstrument, RunSignature, SessionInfo

__all__ = ["CollectiveCounter", "DistributedInstrument", "collective_nodes", "collectives_reached"]


def collectives_reached(ops: Sequence[Any]) -> list[tuple[str, int, int]]:
    """``(HCCL op type, input bytes, tensors)`` of the ``Hcom*`` nodes ``ops`` depend on (data,
    control); ``tensors`` is how many the node carries (several for a fused all-reduce)."""
    found = []
    for op, kind in _hcom_ops(ops):  # what the op sends; a receive, what it gets
        sent = op.outputs[0] if kind == "HcomReceive" else op.inputs[0]
        found.append((kind, _bytes(sent), _tensors(op)))
    return sorted(found)


def collective_nodes(ops: Sequence[Any]) -> list[tuple[str, str]]:
    """``(HCCL op type, node name)`` of the ``Hcom*`` nodes ``ops`` depend on, sorted."""
    return sorted((kind, op.name) for op, kind in _hcom_ops(ops))


def _hcom_ops(ops: Sequence[Any]) -> list[tuple[Any, str]]:
    """The ``Hcom*`` nodes ``ops`` depend on (data and control) with their HCCL op types."""
    seen: set[str] = set()
    stack = list(ops)
    found = []
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        kind = hcom_type(op)
        if kind is not None:
            found.append((op, kind))
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return found


def _tensors(op: Any) -> int:
    try:
        return int(op.get_attr(FUSED_ATTR))
    except ValueError:
        return 1


def _bytes(tensor: Any) -> int:
    shape = tensor.shape
    if not shape.is_fully_defined():
        return 0
    return int(shape.num_elements()) * int(tensor.dtype.size)


class DistributedInstrument(RunInstrument):
    """A rank's sessions run on its server, and a failed collective ends the rank."""

    def session_target(self, session: SessionInfo, target: str, config: Any) -> tuple[str, Any]:
        timeout = session.options.hccl_timeout if session.options is not None else None
        return session_args(target, config, timeout)

    def on_run_error(self, run: RunSignature, error: Exception) -> Exception | None:
        return fatal_failure(error, collective_nodes([*run.targets, *(t.op for t in run.fetches)]))


class CollectiveCounter(RunInstrument):
    """Counts the collectives this rank ran and remembers the last training loss."""

    def __init__(self, rank: int, size: int) -> None:
        self.rank = rank
        self.size = size
        self.counts: dict[str, list[int]] = {}
        self.loss: float | None = None
        self._lock = threading.Lock()

    def plan(self, run: RunSignature) -> RunHook | None:
        reached = collectives_reached([*run.targets, *(t.op for t in run.fetches)])
        if not reached and not run.step:
            return None
        return _CountHook(self, reached, run.step)

    def summary_part(self) -> dict[str, Any]:
        return {"distributed": self.summary()}

    def summary(self) -> dict[str, Any]:
        """``{rank, size, loss, collectives: {op: {count, bytes, tensors}}}``: executions, the
        bytes they sent and the tensors they carried (more than count when fused)."""
        with self._lock:
            collectives = {
                op: {"count": count, "bytes": size, "tensors": tensors}
                for op, (count, size, tensors) in sorted(self.counts.items())
            }
        return {"rank": self.rank, "size": self.size, "loss": self.loss, "collectives": collectives}

    def add(self, reached: Sequence[tuple[str, int, int]]) -> None:
        with self._lock:
            for kind, size, tensors in reached:
                figures = self.counts.setdefault(kind, [0, 0, 0])
                figures[0] += 1
                figures[1] += size
                figures[2] += tensors


class _CountHook(RunHook):
    def __init__(
        self, counter: CollectiveCounter, reached: list[tuple[str, int, int]], step: bool
    ) -> None:
        self._counter = counter
        self._reached = reached
        self._step = step

    def after_run(self, values: Sequence[Any], extras: Sequence[Any]) -> None:
        if self._reached:
            self._counter.add(self._reached)
        if self._step:
            loss = next((v for v in values if _is_float_scalar(v)), None)
            if loss is not None:
                self._counter.loss = float(loss)


def _is_float_scalar(value: Any) -> bool:
    return isinstance(value, (float, np.floating)) or (
        isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind == "f"
    )

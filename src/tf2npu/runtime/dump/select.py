"""Which tensors a dump may take: those the run computes anyway, outside v1 control-flow frames
and cond branches (whose tensors may be dead), of numeric dtype, never a ref tensor.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from tf2npu.artifacts import gegraph
from tf2npu.artifacts.dump import Kind

_SWITCH = frozenset({"Switch", "RefSwitch"})
_MERGE = frozenset({"Merge", "RefMerge"})
_ENTER = frozenset({"Enter", "RefEnter"})
_EXIT = frozenset({"Exit", "RefExit"})
_DUMPABLE_KINDS = frozenset("biufc")


_ALIASING = frozenset({"Identity", "StopGradient", "PreventGradient"})


@dataclass
class DumpModel:
    """One GeOp's ops as a run signature executes them: the dump's model."""

    graph: gegraph.GeGraph
    model_id: int
    dir: Path
    """``<dump_path>/<time>/<device>/<model_name>/<model_id>``."""
    tensors: list[DumpTensor] = field(default_factory=list)
    slots: dict[tuple[int, Kind], int] = field(default_factory=dict)
    """(task, input|output) -> how many tensors that side of the op has, dumped or not (a raw
    file holds them by position; one not taken is written as absent)."""
    graph_written: bool = False


@dataclass(frozen=True)
class DumpTensor:
    """One dumped tensor: the op (task) it belongs to, input/output, index, fetch position."""

    task: int
    op_name: str
    op_type: str
    kind: Kind
    index: int
    fetch: int


def executed_ops(roots: Iterable[Any], fed: frozenset[str]) -> list[Any]:
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


def in_frames(ops: Sequence[Any]) -> set[Any]:
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


def dumpable(tensor: Any) -> bool:
    """A numeric tensor whose fetched value is the value the run computed.

    Not a ref (``VariableV2``, ``Assign``'s first input: it may be read before the run
    initialises it), nor a read of one (``w/read``, an ``Identity`` of the ref): both share the
    variable's buffer, which the same run updates in place before the value is copied out, so
    the dump would show the updated variable, not what the ops used. A resource variable's
    ``ReadVariableOp`` is copied on update, so it is dumped.
    """
    if tensor.dtype._is_ref_dtype or reads_a_ref(tensor):
        return False
    dtype = tensor.dtype.base_dtype
    return (
        bool(dtype.is_numpy_compatible) and np.dtype(dtype.as_numpy_dtype).kind in _DUMPABLE_KINDS
    )


def reads_a_ref(tensor: Any) -> bool:
    op = tensor.op
    while op.type in _ALIASING and op.inputs:
        source = op.inputs[0]
        if source.dtype._is_ref_dtype:
            return True
        op = source.op
    return False


def is_float(tensor: Any) -> bool:
    return bool(tensor.dtype.base_dtype.is_floating)


def with_shapes(
    graph: gegraph.GeGraph, tensors: Sequence[DumpTensor], by_fetch: Sequence[tuple[int, ...]]
) -> gegraph.GeGraph:
    """``graph`` with each dumped tensor's descriptor given its shape in this step
    (``by_fetch``: per fetch position)."""
    shapes = {(t.task, t.kind, t.index): tuple(by_fetch[t.fetch]) for t in tensors}
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


def with_producers(graph: gegraph.GeGraph, ops: Sequence[gegraph.GeOp]) -> list[gegraph.GeOp]:
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


def subgraph(graph: gegraph.GeGraph, kept: Sequence[gegraph.GeOp]) -> gegraph.GeGraph:
    """``graph`` restricted to ``kept`` (in its order), with a ``Data`` op per input from
    outside (:func:`tf2npu.artifacts.gegraph.with_data_inputs`), ids renumbered 0..n-1."""
    return gegraph.with_data_inputs(replace(graph, ops=tuple(kept)))

"""Carry out a fusion: add the fused node(s), hand the matched nodes' outputs over to them.

A rule's ``match`` returns a :class:`Fusion` (what to build, what it replaces) and changes
nothing; :func:`rewrite` applies it the same way for every rule, so naming, provenance,
placement and supersession are decided in one place:

* every new node is named ``graph.new_name(root.name, step.tag)`` and gets as ``origin`` the
  original names of every matched node (a matched node that a pass created contributes its own
  origin, so names always lead back to the user's graph);
* it inherits the root's device string and :class:`~tf2npu.graph.decisions.Placement`, and
  records the rule under :data:`~tf2npu.graph.decisions.FUSED_BY` (the graph JSON of a dump
  names the rule's pass on it);
* the root, and every interior node, is marked superseded (``by="fusion"``, ``rule=<name>``);
  the root's readers move to the fused outputs; interior nodes stay in the graph, unread;
* in a training graph a :class:`GradientPart` (see :mod:`tf2npu.graph.fusion.gradient`) adds
  the device's gradient op(s) after the fused node, with as ``origin`` the gradient nodes TF
  built for the pattern; those are superseded the same way, their outputs read from outside
  handed to the new gradient tensors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tf2npu.errors import InternalError
from tf2npu.graph.decisions import FUSED_BY, PLACEMENT, supersede
from tf2npu.graph.fusion.pattern import (
    SHAPE_READERS,
    Match,
    output_ref,
    reads_shape_of_output0,
)
from tf2npu.graph.ir import FunctionGraph, Graph, Node, TensorRef

__all__ = ["Fusion", "GradientPart", "NewNode", "Prev", "rewrite"]


@dataclass(frozen=True)
class Prev:
    """Output ``index`` of an earlier :class:`NewNode` of the same fusion (by position)."""

    step: int
    index: int = 0


@dataclass(frozen=True)
class NewNode:
    """One node to add. ``output_args`` names its output args (one tensor each), in order:
    function bodies reference outputs as ``node:arg:index``. ``npu_dtype`` set means an NPU op,
    created with :func:`tf2npu.graph.npu_ops.add_npu_node` in that dtype."""

    tag: str
    op: str
    inputs: tuple[TensorRef | Prev, ...]
    attrs: Mapping[str, Any]
    output_args: tuple[str, ...]
    npu_dtype: int | None = None


@dataclass(frozen=True)
class GradientPart:
    """The gradient half of a fusion in a training graph.

    ``nodes`` (names) are the gradient ops TF built for the pattern, superseded; ``steps`` are
    added after the forward steps (a :class:`Prev` counts forward steps first, then these);
    ``outputs`` maps each old tensor read from outside to the new tensor carrying its value.
    """

    nodes: tuple[str, ...]
    steps: tuple[NewNode, ...]
    outputs: Mapping[TensorRef, Prev]


@dataclass(frozen=True)
class Fusion:
    """The rewrite of one match: new nodes (the last is "the fused node") and what they carry.

    ``outputs`` maps a root output index to the fused node's output index; ``interior_outputs``
    does the same for interior nodes whose values a fused output also carries (layer norm's
    mean). Interior nodes not named there are superseded with no outputs (nothing reads them).
    ``shaped`` maps an interior node to a new node's output of the same shape as its output 0:
    outside readers of only that shape (``Shape`` in a gradient) move there; the value does not
    (a fetch of the interior node is not served by it).
    """

    match: Match
    steps: tuple[NewNode, ...]
    outputs: Mapping[int, int]
    interior_outputs: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    shaped: Mapping[str, Prev] = field(default_factory=dict)
    gradient: GradientPart | None = None


def rewrite(graph: Graph, fusion: Fusion, rule: str) -> Node:
    """Apply ``fusion`` to ``graph``; returns the fused node."""
    root = fusion.match.root
    matched = [root, *fusion.match.interior()]
    origin = _origin(matched)
    placement = root.meta.get(PLACEMENT)
    made: list[Node] = []
    grad = fusion.gradient
    steps = fusion.steps + (grad.steps if grad is not None else ())
    backward = [graph[name] for name in grad.nodes] if grad is not None else []
    if grad is not None:  # the nodes whose values the gradient ops carry come first in origin
        carried_by = {old.node for old in grad.outputs}
        backward.sort(key=lambda n: n.name not in carried_by)
    grad_origin = _origin(backward)
    for i, step in enumerate(steps):
        inputs = [_resolve(graph, ref, made, steps) for ref in step.inputs]
        name = graph.new_name(root.name, step.tag)
        where = origin if i < len(fusion.steps) else grad_origin
        node = _add(graph, name, step, inputs, where, root.device)
        if placement is not None:
            node.meta[PLACEMENT] = placement
        node.meta[FUSED_BY] = rule
        made.append(node)
    for name, prev in fusion.shaped.items():
        _move_shape_readers(graph, graph[name], _resolve(graph, prev, made, steps))
    fused, last = made[len(fusion.steps) - 1], fusion.steps[-1]
    for node in matched:
        carried = fusion.outputs if node is root else fusion.interior_outputs.get(node.name, {})
        mapping = _mapping(graph, node, carried, fused, last)
        supersede(graph, node, mapping, by="fusion", rule=rule)
    if grad is not None:
        for node in backward:
            handed = {
                old: _resolve(graph, new, made, steps)
                for old, new in grad.outputs.items()
                if old.node == node.name
            }
            supersede(graph, node, handed, by="fusion", rule=rule)
    return fused


def _move_shape_readers(graph: Graph, node: Node, new: TensorRef) -> None:
    """Shape ops reading ``node`` (directly, or through a precision cast) now read ``new``.

    A cast in between keeps reading ``node``: it may serve a fetch of the original name, and
    with its shape readers gone nothing running reads it.
    """
    for user in graph.consumers(node):
        if not reads_shape_of_output0(graph, node, user):
            continue
        shape_ops = (
            [user]
            if user.op in SHAPE_READERS
            else [r for r in graph.consumers(user) if r.op in SHAPE_READERS]
        )
        for shape_op in shape_ops:
            for position, ref in enumerate(shape_op.inputs):
                if ref.node in (node.name, user.name):
                    graph.set_input(shape_op, position, new)
            if shape_op is not user:  # it read the float32 cast: T is now the fused dtype
                shape_op.attrs["T"] = graph[new.node].attrs["T"]


def _add(
    graph: Graph,
    name: str,
    step: NewNode,
    inputs: list[TensorRef],
    origin: tuple[str, ...],
    device: str,
) -> Node:
    if step.npu_dtype is None:
        return graph.add_node(
            name, step.op, inputs, attrs=dict(step.attrs), device=device, origin=origin
        )
    from tf2npu.graph import npu_ops

    node = npu_ops.add_npu_node(
        graph, name, step.op, inputs, dtype=step.npu_dtype, attrs=dict(step.attrs), origin=origin
    )
    node.device = device
    return node


def _origin(nodes: list[Node]) -> tuple[str, ...]:
    names: dict[str, None] = {}
    for node in nodes:
        for name in node.origin or (node.name,):
            names.setdefault(name, None)
    return tuple(names)


def _output(graph: Graph, node: Node, step: NewNode, index: int) -> TensorRef:
    if isinstance(graph, FunctionGraph):
        return node.output(0, step.output_args[index])
    return node.output(index)


def _resolve(
    graph: Graph, ref: TensorRef | Prev, made: list[Node], steps: tuple[NewNode, ...]
) -> TensorRef:
    if isinstance(ref, TensorRef):
        return ref
    return _output(graph, made[ref.step], steps[ref.step], ref.index)


def _mapping(
    graph: Graph, old: Node, carried: Mapping[int, int], fused: Node, step: NewNode
) -> dict[TensorRef, TensorRef]:
    mapping: dict[TensorRef, TensorRef] = {}
    for index, new in carried.items():
        ref = output_ref(graph, old, index)
        if ref is None:
            raise InternalError(f"fusion: cannot name output {index} of {old.name!r} ({old.op})")
        mapping[ref] = _output(graph, fused, step, new)
    return mapping

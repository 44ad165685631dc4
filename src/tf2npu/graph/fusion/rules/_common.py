"""Helpers the rules share: the GE refusal check around a proposed fusion, static ranks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tf2npu.graph.fusion.pattern import Match, refusal
from tf2npu.graph.fusion.rewrite import Fusion, NewNode
from tf2npu.graph.ir import Graph, Node, TensorRef

#: Ops whose output has the rank of their first input (how a rank is followed upstream).
_SAME_RANK = frozenset(
    {"BiasAdd", "Relu", "Relu6", "Identity", "Tanh", "Sigmoid", "Elu", "Selu", "Cast", "Neg"}
)
#: Ops whose output is a matrix, whatever their inputs.
_MATRIX = frozenset({"MatMul", "_FusedMatMul", "SparseMatMul"})
_MAX_HOPS = 16


def checked(
    graph: Graph,
    m: Match,
    steps: Sequence[NewNode],
    outputs: Mapping[int, int] | None = None,
    interior_outputs: Mapping[str, Mapping[int, int]] | None = None,
) -> Fusion | None:
    """``Fusion(m, steps, ...)`` unless GE would refuse the match (see ``refusal``)."""
    carried = dict(outputs) if outputs is not None else {0: 0}
    exported = dict(interior_outputs or {})
    if refusal(graph, m, carried, exported) is not None:
        return None
    return Fusion(m, tuple(steps), carried, exported)


def rank_of(graph: Graph, ref: TensorRef) -> int | None:
    """The static rank of ``ref`` when the graph proves it, else ``None``.

    Reads a ``_output_shapes`` attr when TF exported one, a placeholder's ``shape``, a matmul
    (always rank 2), and follows rank-preserving ops (bias add, activations) upstream.
    """
    for _ in range(_MAX_HOPS):
        node = graph.get(ref.node)
        if node is None:
            return None
        known = _declared_rank(node, ref.index)
        if known is not None:
            return known
        if node.op in _MATRIX:
            return 2
        if node.op not in _SAME_RANK or not node.inputs:
            return None
        ref = node.inputs[0]
    return None


def _declared_rank(node: Node, index: int) -> int | None:
    shapes: Any = node.attrs.get("_output_shapes")
    if shapes is not None and index < len(shapes.list.shape):
        shape = shapes.list.shape[index]
        return None if shape.unknown_rank else len(shape.dim)
    if node.op in ("Placeholder", "PlaceholderV2") and index == 0:
        shape = node.attrs.get("shape")
        if shape is not None and not shape.shape.unknown_rank:
            return len(shape.shape.dim)
    return None


def string_attr(node: Node, name: str, default: str) -> str:
    """A string attr decoded (``default`` when absent)."""
    value: Any = node.attrs.get(name)
    return value.s.decode() if value is not None else default


def bool_attr(node: Node, name: str, default: bool) -> bool:
    value: Any = node.attrs.get(name)
    return bool(value.b) if value is not None else default


def copy_attrs(node: Node, names: Sequence[str]) -> dict[str, Any]:
    """The attrs of ``node`` among ``names`` (shared protos: fused nodes never edit them)."""
    return {name: node.attrs[name] for name in names if name in node.attrs}


def static_shape(graph: Graph, ref: TensorRef) -> list[int] | None:
    """The fully known static shape of ``ref`` (``_output_shapes`` or a placeholder's shape)."""
    node = graph.get(ref.node)
    if node is None:
        return None
    shapes: Any = node.attrs.get("_output_shapes")
    proto: Any = None
    if shapes is not None and ref.index < len(shapes.list.shape):
        proto = shapes.list.shape[ref.index]
    elif node.op in ("Placeholder", "PlaceholderV2") and ref.index == 0 and "shape" in node.attrs:
        proto = node.attrs["shape"].shape
    if proto is None or proto.unknown_rank or any(d.size < 0 for d in proto.dim):
        return None
    return [int(d.size) for d in proto.dim]

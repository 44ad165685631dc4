"""Helpers the rules share: the GE refusal check around a proposed fusion, attr readers.

``rank_of`` and ``static_shape`` live in :mod:`tf2npu.graph.fusion.shapes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tf2npu.graph.fusion.pattern import Match, refusal
from tf2npu.graph.fusion.rewrite import Fusion, GradientPart, NewNode, Prev
from tf2npu.graph.fusion.shapes import rank_of, static_shape
from tf2npu.graph.ir import Graph, Node

__all__ = [
    "bool_attr",
    "checked",
    "copy_attrs",
    "rank_of",
    "static_shape",
    "string_attr",
]


def checked(
    graph: Graph,
    m: Match,
    steps: Sequence[NewNode],
    outputs: Mapping[int, int] | None = None,
    interior_outputs: Mapping[str, Mapping[int, int]] | None = None,
    shaped: Mapping[str, Prev] | None = None,
    gradient: GradientPart | None = None,
) -> Fusion | None:
    """``Fusion(m, steps, ...)`` unless GE would refuse the match (see ``refusal``)."""
    carried = dict(outputs) if outputs is not None else {0: 0}
    exported = dict(interior_outputs or {})
    shapes = dict(shaped or {})
    backward = gradient.nodes if gradient is not None else ()
    if refusal(graph, m, carried, exported, shapes, backward) is not None:
        return None
    return Fusion(m, tuple(steps), carried, exported, shapes, gradient)


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

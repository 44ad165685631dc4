"""The dtype of each data edge, as far as placement cares: ref, string, resource, variant.

Output dtypes come from TF's op registry (or a library function's signature) through
:func:`tf2npu.graph._opdef.output_layout`; a layout is looked up once per producer and cached.
Without TensorFlow, or for an unregistered op, the dtype is unknown (``None``) and no
propagation rule fires on that edge.
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import DT_RESOURCE, DT_STRING, DT_VARIANT, REF_OFFSET
from tf2npu.graph._opdef import attr_or_default, flat_dtypes, op_def_for, output_layout
from tf2npu.graph.ir import FunctionGraph, Graph, Node, TensorRef

__all__ = ["DT_RESOURCE", "DT_STRING", "DT_VARIANT", "EdgeTypes", "edge_kind", "input_is_ref"]

_KINDS = {DT_STRING: "string", DT_RESOURCE: "resource", DT_VARIANT: "variant"}


def edge_kind(dtype: int | None) -> str | None:
    """``"ref"``, ``"string"``, ``"resource"``, ``"variant"`` or ``None`` for other dtypes."""
    if dtype is None:
        return None
    if dtype > REF_OFFSET:
        return "ref"
    return _KINDS.get(dtype)


class EdgeTypes:
    """Cached output dtypes of one graph's nodes."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._flat: dict[str, tuple[int | None, ...] | None] = {}
        self._named: dict[str, dict[str, tuple[int | None, ...]] | None] = {}
        self._may: dict[tuple[str, int], bool] = {}

    def outputs(self, node: Node) -> tuple[int | None, ...] | None:
        """All output dtypes of ``node`` in flat order (``None`` when unknown)."""
        name = node.name
        if name not in self._flat:
            layout = output_layout(node)
            self._flat[name] = None if layout is None else flat_dtypes(layout)
            self._named[name] = None if layout is None else dict(layout)
        return self._flat[name]

    def dtype(self, ref: TensorRef) -> int | None:
        """The dtype ``ref`` carries, or ``None`` when unknown (or a function argument)."""
        producer = self.graph.get(ref.node)
        if producer is None:
            return None
        flat = self.outputs(producer)
        if flat is None:
            return None
        if ref.output_arg is None:
            return flat[ref.index] if ref.index < len(flat) else None
        named = self._named[producer.name] or {}
        dtypes = named.get(ref.output_arg, ())
        return dtypes[ref.index] if ref.index < len(dtypes) else None

    def kind(self, ref: TensorRef) -> str | None:
        """:func:`edge_kind` of the tensor ``ref``."""
        return edge_kind(self.dtype(ref))

    def has_output(self, node: Node, dtype: int) -> bool:
        """Whether some output of ``node`` has ``dtype`` (cheap for ops that never can)."""
        if not self.may_output(node, dtype):
            return False
        flat = self.outputs(node)
        return flat is not None and dtype in flat

    def may_output(self, node: Node, dtype: int) -> bool:
        """Whether ``node``'s op type can output ``dtype`` at all, judged once per op type.

        Most ops (``MatMul``, ``Relu``) restrict their type attrs to numbers; reading their
        OpDef once spares building every node's output layout.
        """
        key = (node.op, dtype)
        known = self._may.get(key)
        if known is None:
            known = self._may[key] = _may_output(node, dtype)
        return known


def _may_output(node: Node, dtype: int) -> bool:
    op_def = op_def_for(node)
    if op_def is None or _is_function(node):
        return True  # unknown op or a function: no shortcut, read the layout
    allowed = {attr.name: attr.allowed_values.list.type for attr in op_def.attr}
    for arg in op_def.output_arg:
        if arg.type == dtype:
            return True
        polymorphic = arg.type_attr or arg.type_list_attr
        if polymorphic:
            values = allowed.get(polymorphic)
            if not values or dtype in values:
                return True
    return False


def _is_function(node: Node) -> bool:
    graph = node.graph
    root = graph.parent if isinstance(graph, FunctionGraph) and graph.parent else graph
    return node.op in root.functions


def input_is_ref(node: Node, position: int) -> bool:
    """Whether data input ``position`` of ``node`` is declared as a ref input in its OpDef."""
    op_def = op_def_for(node)
    if op_def is None:
        return False
    seen = 0
    for arg in op_def.input_arg:
        count = _count(node, op_def, arg)
        if position < seen + count:
            return bool(arg.is_ref)
        seen += count
    return False


def _count(node: Node, op_def: Any, arg: Any) -> int:
    if arg.number_attr:
        value = attr_or_default(node, op_def, arg.number_attr)
        return int(value.i) if value is not None else 1
    if arg.type_list_attr:
        value = attr_or_default(node, op_def, arg.type_list_attr)
        return len(value.list.type) if value is not None else 1
    return 1

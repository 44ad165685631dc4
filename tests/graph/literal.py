"""Literal graphs for the graph tests: nodes written as ``add(g, "relu", "Relu", "x", T=F32)``.

Not a test module; tests import it as ``tests.graph.literal``.
"""

from __future__ import annotations

from typing import Any

from tf2npu.graph.ir import Graph, Node, TensorRef


class Func(str):
    """A function-name attr value."""


def attr(value: Any) -> Any:
    """``value`` as an ``AttrValue``: bool, function name, dtype, list of dtypes, string, int."""
    from tensorflow.core.framework import attr_value_pb2

    if isinstance(value, attr_value_pb2.AttrValue):
        return value
    if isinstance(value, bool):
        return attr_value_pb2.AttrValue(b=value)
    if isinstance(value, Func):
        return attr_value_pb2.AttrValue(func=attr_value_pb2.NameAttrList(name=value))
    if hasattr(value, "as_datatype_enum"):
        return attr_value_pb2.AttrValue(type=value.as_datatype_enum)
    if isinstance(value, list):
        types = [v.as_datatype_enum for v in value]
        return attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(type=types))
    if isinstance(value, str):
        return attr_value_pb2.AttrValue(s=value.encode())
    return attr_value_pb2.AttrValue(i=value)


def add(
    g: Graph, name: str, op: str, *inputs: str, ctrl: tuple[str, ...] = (), **attrs: Any
) -> Node:
    """Add node ``name`` of type ``op`` reading ``inputs`` (``"node:index"``), after ``ctrl``."""
    refs = [TensorRef.parse(i) for i in inputs]
    built = {k: attr(v) for k, v in attrs.items()}
    return g.add_node(name, op, refs, control_inputs=ctrl, attrs=built)

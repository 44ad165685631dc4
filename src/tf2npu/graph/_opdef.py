"""Output layouts of nodes from TF's op registry (or the function library), when known.

A layout is one ``(output_arg_name, dtypes)`` pair per output argument; ``dtypes`` holds one
``DataType`` enum value per tensor (``None`` where an attr is missing). Without TensorFlow,
or for an op TF does not register, the layout is ``None`` and callers skip the check; NPU ops
(:mod:`tf2npu.graph.npu_ops`), which TF does not register, report theirs from their definition.
"""

from __future__ import annotations

import functools
from typing import Any

from tf2npu.dtypes import REF_OFFSET
from tf2npu.graph.ir import FunctionGraph, Graph, Node
from tf2npu.graph.npu_ops.nodes import npu_layout

Layout = tuple[tuple[str, tuple[int | None, ...]], ...]


@functools.cache
def _registry_get(op: str) -> Any:
    try:
        from tensorflow.python.framework import op_def_registry
    except ImportError:  # pragma: no cover - TF is optional
        return None
    return op_def_registry.get(op)


def op_def_for(node: Node) -> Any:
    """The ``OpDef`` of ``node``'s op: a library function's signature, else TF's registry."""
    graph = node.graph
    root = graph.parent if isinstance(graph, FunctionGraph) else graph
    if isinstance(root, Graph):
        body = root.functions.get(node.op)
        if body is not None:
            return body.template.signature if body.template is not None else None
    return _registry_get(node.op)


def output_layout(node: Node) -> Layout | None:
    """The node's outputs per output arg, or ``None`` if the op or a count attr is unknown."""
    op_def = op_def_for(node)
    if op_def is None:
        return npu_layout(node)
    return _layout(node, op_def, op_def.output_arg)


def input_layout(node: Node) -> Layout | None:
    """The node's data inputs per input arg, or ``None`` if the op or a count attr is unknown."""
    op_def = op_def_for(node)
    return None if op_def is None else _layout(node, op_def, op_def.input_arg)


def _layout(node: Node, op_def: Any, args: Any) -> Layout | None:
    layout = []
    for arg in args:
        dtypes = _arg_dtypes(node, op_def, arg)
        if dtypes is None:
            return None
        if arg.is_ref:
            dtypes = tuple(None if d is None else d + REF_OFFSET for d in dtypes)
        layout.append((arg.name, dtypes))
    return tuple(layout)


def flat_dtypes(layout: Layout) -> tuple[int | None, ...]:
    return tuple(d for _, dtypes in layout for d in dtypes)


def _arg_dtypes(node: Node, op_def: Any, arg: Any) -> tuple[int | None, ...] | None:
    if arg.type_list_attr:
        value = attr_or_default(node, op_def, arg.type_list_attr)
        return None if value is None else tuple(value.list.type)
    dtype: int | None = arg.type or None
    if dtype is None and arg.type_attr:
        value = attr_or_default(node, op_def, arg.type_attr)
        dtype = value.type if value is not None and value.type else None
    if arg.number_attr:
        count = attr_or_default(node, op_def, arg.number_attr)
        return None if count is None else (dtype,) * count.i
    return (dtype,)


def attr_or_default(node: Node, op_def: Any, name: str) -> Any:
    """The node's attr ``name``, else the OpDef's default for it, else ``None``."""
    value = node.attrs.get(name)
    return value if value is not None else default_of(op_def, name)


def default_of(op_def: Any, name: str) -> Any:
    """The OpDef's default for attr ``name``, else ``None``."""
    for attr in op_def.attr:
        if attr.name == name and attr.HasField("default_value"):
            return attr.default_value
    return None

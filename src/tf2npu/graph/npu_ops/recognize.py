"""Turn the NPU-op calls ``npu_bridge`` emitted back into NPU-op nodes, for the graph engine.

A script's graph holds ``npu_ops.dropout`` and ``npu_unary_ops.gelu`` as calls of
``<Op>_<DT>_<digest>__tf2npu`` library functions (:mod:`tf2npu.client.ops`), which
stock TensorFlow runs. Placement, precision and fusion decide by op type, so before they run
:func:`recognize` restores each call to the NPU op it stands for: op type ``Gelu``, attrs ``T``
and the declared ones, read back from the call's ``_npu_attr_*`` attrs. ``lowering`` later
materialises the nodes again into calls of the same (deterministically named) functions.

The library functions no node calls any more are removed: their bodies are the ops' CPU
implementations (``Tanh``, ``Mul`` ...), which passes walking function bodies must not place,
convert or fuse as if they were the user's ops.
"""

from __future__ import annotations

from typing import Any

from tf2npu.errors import GraphError, InternalError
from tf2npu.graph.ir import Graph, Node
from tf2npu.graph.npu_ops.catalogue import NPU_OPS
from tf2npu.graph.npu_ops.materialize import FUNCTION_SUFFIX
from tf2npu.graph.npu_ops.nodes import NPU_ATTR_PREFIX, NPU_OP_ATTR
from tf2npu.graph.npu_ops.opdef import TYPE_ATTR, NpuOpDef, build_attrs

__all__ = ["recognize"]


def recognize(graph: Graph) -> int:
    """Restore every emitted NPU-op call (top level and function bodies) to its NPU op.

    Returns how many nodes changed; a second call finds none. Calls of NPU-op functions the
    restored nodes leave unused are dropped from ``graph.functions``.

    Raises:
        GraphError: a call marked ``_npu_op`` whose attrs do not fit the op (names the node).
    """
    changed = 0
    called: set[str] = set()
    for body in list(graph.walk()):
        for node in body:
            definition = _emitted_op(graph, node)
            if definition is not None:
                called.add(node.op)
                _restore(node, definition)
                changed += 1
    if called:
        _drop_unused(graph, called)
    return changed


def _drop_unused(graph: Graph, called: set[str]) -> None:
    """Drop the NPU-op functions no node calls any more, then the tf2npu functions only those
    called (the ``While`` cond and body of a recurrent op), until none is left over."""
    for name in called - _referenced_functions(graph):
        del graph.functions[name]
    while True:
        referenced = _referenced_functions(graph)
        unused = [n for n in graph.functions if n.endswith(FUNCTION_SUFFIX) and n not in referenced]
        if not unused:
            return
        for name in unused:
            del graph.functions[name]


def _emitted_op(graph: Graph, node: Node) -> NpuOpDef | None:
    """The NPU op a node emitted by the client stands for; ``None`` for any other node."""
    marker = node.attrs.get(NPU_OP_ATTR)
    if marker is None or not node.op.endswith(FUNCTION_SUFFIX) or node.op not in graph.functions:
        return None
    return NPU_OPS.get(marker.s.decode())


def _restore(node: Node, op: NpuOpDef) -> None:
    where = f"{node.graph.label}, node {node.name!r}"
    encoded = {
        key[len(NPU_ATTR_PREFIX) :]: value
        for key, value in node.attrs.items()
        if key.startswith(NPU_ATTR_PREFIX)
    }
    dtype = encoded.pop(TYPE_ATTR, None)
    if dtype is None:
        raise GraphError(
            f"{where}: a call of {node.op} marked as NPU op {op.name} lacks "
            f"'{NPU_ATTR_PREFIX}{TYPE_ATTR}'; rebuild the graph with npu_bridge's op wrappers"
        )
    try:
        attrs = build_attrs(op, len(node.inputs), dtype.type, encoded)
    except InternalError as err:
        raise GraphError(f"{where}: {err}") from None
    kept = {
        key: value
        for key, value in node.attrs.items()
        if key != NPU_OP_ATTR and not key.startswith(NPU_ATTR_PREFIX)
    }
    node.op = op.name
    node.attrs = {**attrs, **kept}


def _referenced_functions(graph: Graph) -> set[str]:
    """Every function a node calls (op type) or names in a ``func`` attr, anywhere."""
    names: set[str] = set()
    for body in graph.walk():
        for node in body:
            if node.op in graph.functions:
                names.add(node.op)
            for value in node.attrs.values():
                names.update(_func_names(value))
    return names


def _func_names(value: Any) -> list[str]:
    kind = value.WhichOneof("value")
    if kind == "func":
        return [value.func.name]
    if kind == "list":
        return [f.name for f in value.list.func]
    return []

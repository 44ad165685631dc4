"""The engine's input for a small graph change: the new ops, with stand-ins for what they read.

When a few ops join a large graph (an op built inside the training loop, Keras adding its
metrics), running the engine over the whole graph again costs as much as the first time
(0.4 s at 10k nodes). The mirror instead gives the engine the new ops plus one *stub* per
earlier node they read: a ``Placeholder`` of the same name and dtype (a ``NoOp`` for a node
read only through a control edge). Stubs keep the names, so the engine's output reads the real
earlier nodes once imported, and they are never imported themselves (the mirror holds those
names already). Decisions for the new ops are then made without the earlier graph's context:
a stub is a host feed to the passes, so a new op next to the device graph may be placed as if
its input came from the host. That changes where an op is counted, never its value.

:func:`delta_graph_def` declines (returns None) when stubs cannot stand in: a new op reads an
output other than an earlier node's first one, or the change brings new functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Delta", "delta_graph_def"]


@dataclass(frozen=True)
class Delta:
    """The engine's input for a change: ``graph_def`` holds the new ops and the ``stubs``."""

    graph_def: Any
    stubs: frozenset[str]


def delta_graph_def(client: Any, new_ops: Sequence[Any]) -> Delta | None:
    """The new ops of ``client`` as a ``GraphDef`` with stubs, or None if stubs cannot serve."""
    from tensorflow.core.framework import attr_value_pb2, graph_pb2

    names = {op.name for op in new_ops}
    graph_def = graph_pb2.GraphDef()
    graph_def.versions.CopyFrom(client.graph_def_versions)
    stubs: dict[str, Any] = {}
    for op in new_ops:
        for tensor in op.inputs:
            producer = tensor.op
            if producer.name in names:
                continue
            if tensor.value_index != 0:
                return None
            stubs[producer.name] = _placeholder(producer.name, tensor, attr_value_pb2)
        for control in op.control_inputs:
            if control.name not in names and control.name not in stubs:
                stubs[control.name] = _no_op(control.name)
        graph_def.node.add().CopyFrom(op.node_def)
    graph_def.node.extend(stubs.values())
    return Delta(graph_def, frozenset(stubs))


def _placeholder(name: str, tensor: Any, attr_value_pb2: Any) -> Any:
    from tensorflow.core.framework import node_def_pb2

    node = node_def_pb2.NodeDef(name=name, op="Placeholder")
    node.attr["dtype"].CopyFrom(attr_value_pb2.AttrValue(type=tensor.dtype.as_datatype_enum))
    if tensor.shape.dims is not None:
        node.attr["shape"].CopyFrom(attr_value_pb2.AttrValue(shape=tensor.shape.as_proto()))
    return node


def _no_op(name: str) -> Any:
    from tensorflow.core.framework import node_def_pb2

    return node_def_pb2.NodeDef(name=name, op="NoOp")

"""A GeOp's sub-graph as a standalone graph (what ``AfterSubGraph_<geop>.pbtxt`` shows).

Member nodes keep their names, ops, attrs and devices, so a cluster's ``outputs`` are fetch
names of the sub-graph too. Each boundary input becomes a ``Placeholder`` named like the
vendor's ``_Arg`` (``<src>_<slot>_arg``, made unique), with the dtype and shape of the tensor
when known. A ``Const`` or variable read from another GeOp is not a boundary input: the vendor
duplicates it into the GeOp, so it is copied in under its own name. Control edges from outside
are dropped (the vendor attaches them to the GeOp node). The function library is shared.
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import base_dtype
from tf2npu.errors import InternalError
from tf2npu.graph.decisions import Cluster
from tf2npu.graph.ir import Graph, Node, TensorRef
from tf2npu.graph.partition.sizes import output_dtype

__all__ = ["extract_subgraph"]


def extract_subgraph(graph: Graph, cluster: Cluster) -> Graph:
    """The nodes of ``cluster`` as a new graph, boundary inputs replaced by placeholders.

    Raises:
        InternalError: a member node named by ``cluster`` is not in ``graph``.
    """
    members = set(cluster.nodes)
    boundary = set(cluster.inputs)
    sub = Graph()
    sub.template = graph.template
    sub.functions = dict(graph.functions)
    args: dict[TensorRef, TensorRef] = {}
    for name in cluster.nodes:
        node = graph.get(name)
        if node is None:
            raise InternalError(f"cluster {cluster.name!r} names node {name!r}, not in the graph")
        refs = []
        for ref in node.inputs:
            if ref.node in members:
                refs.append(ref)
            elif str(ref) in boundary:
                refs.append(_arg(sub, graph, ref, args))
            else:
                _copy_in(sub, graph[ref.node])
                refs.append(ref)
        control = [c for c in node.control_inputs if c in members]
        _clone(sub, node, refs, control)
    return sub


def _arg(sub: Graph, graph: Graph, ref: TensorRef, args: dict[TensorRef, TensorRef]) -> TensorRef:
    known = args.get(ref)
    if known is not None:
        return known
    stem = f"{ref.node}_{ref.index}_arg"
    name, n = stem, 0
    while name in graph or name in sub:  # never a name a member or a copied node could take
        n += 1
        name = f"{stem}_{n}"
    sub.add_node(name, "Placeholder", attrs=_placeholder_attrs(graph[ref.node], ref.index))
    args[ref] = TensorRef(name)
    return args[ref]


def _placeholder_attrs(producer: Node, index: int) -> dict[str, Any]:
    """``dtype``/``shape`` AttrValues when known (knowing the dtype implies TF is installed)."""
    dtype = output_dtype(producer, index)
    if dtype is None:
        return {}
    from tensorflow.core.framework import attr_value_pb2

    attrs = {"dtype": attr_value_pb2.AttrValue(type=base_dtype(dtype))}
    shape = _shape_proto(producer, index)
    if shape is not None:
        attrs["shape"] = attr_value_pb2.AttrValue(shape=shape)
    return attrs


def _shape_proto(producer: Node, index: int) -> Any:
    """The (possibly partial) ``TensorShapeProto`` of an output, as the node records it."""
    attrs = producer.attrs
    if "_output_shapes" in attrs:
        listed = attrs["_output_shapes"].list.shape
        return listed[index] if index < len(listed) else None
    if index == 0 and producer.op in ("Placeholder", "PlaceholderWithDefault"):
        return attrs["shape"].shape if "shape" in attrs else None
    if index == 0 and producer.op == "Const" and "value" in attrs:
        return attrs["value"].tensor.tensor_shape
    return None


def _copy_in(sub: Graph, node: Node) -> None:
    if node.name not in sub:
        _clone(sub, node, [r for r in node.inputs if r.node in sub], [])


def _clone(sub: Graph, node: Node, refs: list[TensorRef], control: list[str]) -> None:
    sub.add_node(
        node.name,
        node.op,
        refs,
        control_inputs=control,
        attrs=dict(node.attrs),
        device=node.device,
        origin=node.origin,
    )

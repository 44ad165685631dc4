"""The tensors crossing between the host and GeOps, and the user's ops behind internal names.

Both feed the reports (:class:`~tf2npu.graph.report.summary.GraphSummary`):

* :func:`crossings`: one :class:`Crossing` per (tensor, other side) of each GeOp's boundary, as
  the partition recorded it (:attr:`Cluster.inputs` / ``outputs``): where it comes from, where
  it goes (a host reason or a GeOp), its dtype and shape when the graph says them;
* :func:`user_ops`: the user's nodes a pass-made node stands for, following ``node.origin``
  through chains such as ``dense/Relu/_tf2npu_fp16/_tf2npu_fused_matmul`` (a float16 clone,
  then fused): ``("dense/Relu", "dense/BiasAdd", "dense/MatMul")``.

>>> from tf2npu.graph.ir import Graph
>>> g = Graph()
>>> relu = g.add_node("dense/Relu", "Relu")
>>> clone = g.add_node(g.new_name("dense/Relu", "fp16"), "Relu", origin=["dense/Relu"])
>>> fused = g.add_node(g.new_name(clone.name, "fused_matmul"), "_FusedMatMul",
...                    origin=[clone.name, "dense/MatMul"])
>>> fused.name
'dense/Relu/_tf2npu_fp16/_tf2npu_fused_matmul'
>>> user_ops(g, fused.name)
('dense/Relu', 'dense/MatMul')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from tf2npu.dtypes import DTYPES, base_dtype
from tf2npu.graph.decisions import CLUSTER, Cluster
from tf2npu.graph.ir import RESERVED_SUFFIX, Graph, TensorRef

__all__ = ["Crossing", "crossings", "is_internal", "sides", "user_names", "user_ops"]


@dataclass(frozen=True, slots=True)
class Crossing:
    """One tensor copied between a GeOp and the other side each step."""

    tensor: str
    source: str
    """A GeOp's name, or the host reason of the op producing it (``feed``, ``not_in_library``)."""
    dest: str
    """A GeOp's name, or the host reasons of the ops reading it (``gray_op, outside_geop``):
    a tensor leaving a GeOp is copied out once, whoever reads it."""
    dtype: str = ""
    """``DT_FLOAT``, ...; "" when the graph does not say."""
    shape: str = ""
    """``64,128``, ``scalar``; "" when the graph does not fully say."""


def is_internal(name: str) -> bool:
    """Whether a pass made the node ``name`` (a clone, a cast, a fused op)."""
    return RESERVED_SUFFIX in name


def user_ops(graph: Graph, name: str) -> tuple[str, ...]:
    """The user's nodes ``name`` stands for (itself when the user made it); a pass-made node
    without a known origin stands for the name before its first reserved suffix."""
    seen: set[str] = set()
    out: list[str] = []

    def walk(current: str) -> None:
        if current in seen:
            return
        seen.add(current)
        if not is_internal(current):
            out.append(current)
            return
        node = graph.get(current)
        origin = node.origin if node is not None else ()
        if not origin:
            out.append(current.split(RESERVED_SUFFIX, 1)[0])
        for parent in origin:
            walk(parent)

    walk(name)
    return tuple(dict.fromkeys(out))


def user_names(graph: Graph, names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """:func:`user_ops` of each internal name of ``names`` (tensor names are read as nodes)."""
    found: dict[str, tuple[str, ...]] = {}
    for name in names:
        node = TensorRef.parse(name).node if ":" in name else name
        if is_internal(node) and node not in found:
            found[node] = user_ops(graph, node)
    return found


def crossings(
    graph: Graph,
    clusters: Iterable[Cluster],
    side: Callable[[str], str],
    dtype_of: Callable[[str], tuple[str, str]] | None = None,
    *,
    unknown: str = "undecided",
) -> list[Crossing]:
    """Every tensor crossing a GeOp's boundary, by GeOp, its inputs then its outputs (one row
    each); ``side(node)`` names the node's side (its GeOp or host reason), ``dtype_of(tensor)``
    its dtype and shape. A producer of no known side is ``unknown``; readers of none (superseded
    nodes) are left out."""
    describe = dtype_of or _describe(graph)
    out: list[Crossing] = []
    for cluster in clusters:
        for tensor in cluster.inputs:
            source = side(TensorRef.parse(tensor).node) or unknown
            out.append(Crossing(tensor, source, cluster.name, *describe(tensor)))
        for tensor in cluster.outputs:
            readers = sorted(
                {side(n.name) for n, _ in graph.uses(TensorRef.parse(tensor))} - {cluster.name, ""}
            )
            if readers:
                out.append(Crossing(tensor, cluster.name, ", ".join(readers), *describe(tensor)))
    return out


def _describe(graph: Graph) -> Callable[[str], tuple[str, str]]:
    """``describe(tensor)``: its dtype's enum name and its shape, from the graph ("" = not said).
    Reading an op's output dtypes imports TensorFlow's op registry (shapes are attrs)."""
    from tf2npu.graph.partition.sizes import output_dtype, output_shape

    def describe(tensor: str) -> tuple[str, str]:
        ref = TensorRef.parse(tensor)
        node = graph.get(ref.node)
        if node is None:
            return "", ""
        number = output_dtype(node, ref.index)
        known = DTYPES.get(base_dtype(number)) if number else None
        shape = output_shape(node, ref.index)
        text = "" if shape is None else ",".join(str(d) for d in shape) or "scalar"
        return (known.enum if known else ""), text

    return describe


def sides(graph: Graph, reasons: Mapping[str, str]) -> Callable[[str], str]:
    """``side(node)``: the node's GeOp, else its host reason (``reasons``: the host ops'), else
    "" (a node no report counts: superseded, or only fetched)."""

    def side(name: str) -> str:
        node = graph.get(name)
        cluster = node.meta.get(CLUSTER) if node is not None else None
        return str(cluster) if cluster else reasons.get(name, "")

    return side

"""Step 3 of candidate selection (reference §3.3): each top-level node on its own.

The result maps every node to a :class:`Placement` (device = candidate) except ``Const`` nodes
without a control edge from an NPU-supporting node: those are *pending*, decided after
propagation by whether they feed a device node (step 6).
"""

from __future__ import annotations

from tf2npu.graph.decisions import Placement
from tf2npu.graph.ir import Graph, Node
from tf2npu.graph.placement.predicates import Support
from tf2npu.graph.placement.reasons import device, host
from tf2npu.graph.placement.regions import GET_NEXT, ITERATORS
from tf2npu.graph.placement.tensors import EdgeTypes

__all__ = ["select"]


def select(
    graph: Graph,
    support: Support,
    types: EdgeTypes,
    *,
    data_pre_proc: bool,
    fixed: dict[str, Placement],
) -> tuple[dict[str, Placement], list[str]]:
    """Step-3 placements (``fixed`` ones kept as given) and the pending ``Const`` names."""
    out: dict[str, Placement] = {}
    pending: list[str] = []
    supporting: dict[str, bool] = {}
    for node in graph:
        name = node.name
        if name in fixed:
            out[name] = fixed[name]
        elif data_pre_proc and node.op in (ITERATORS | GET_NEXT):
            out[name] = _iterator_pair(graph, node, support)
        elif node.op == "Const":
            source = _supporting_control_source(graph, node, support, supporting)
            if source is None:
                pending.append(name)
            else:
                out[name] = device("const_pulled", f"control-dependent on device node {source!r}")
        else:
            refusal = support.node(node, types)
            out[name] = device() if refusal is None else refusal
    return out, pending


def _iterator_pair(graph: Graph, node: Node, support: Support) -> Placement:
    """With ``enable_data_pre_proc``: an ``Iterator(V2)`` → ``IteratorGetNext`` pair goes down."""
    if node.op in ITERATORS:
        paired = any(user.op in GET_NEXT for user in graph.consumers(node))
        partner = "feeds an IteratorGetNext"
    else:
        producer = graph.get(node.inputs[0].node) if node.inputs else None
        paired = producer is not None and producer.op in ITERATORS
        partner = "fed by an Iterator"
    if paired:
        return device("supported", f"{node.op}: {partner} (enable_data_pre_proc)")
    refusal = support.op(node)
    if refusal is not None:
        return refusal
    return host("iterator_unpaired", f"{node.op}: not part of an Iterator -> IteratorGetNext pair")


def _supporting_control_source(
    graph: Graph, node: Node, support: Support, memo: dict[str, bool]
) -> str | None:
    """The first control producer of ``node`` that is NPU-supporting, if any."""
    for name in node.control_inputs:
        producer = graph.get(name)
        if producer is None or producer.name == "_SOURCE":
            continue
        ok = memo.get(name)
        if ok is None:
            ok = memo[name] = support.op(producer) is None
        if ok:
            return name
    return None

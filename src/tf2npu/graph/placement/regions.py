"""Whole-graph rules (reference §3.3 steps 1–2): host-call graphs and dataset-init graphs.

The adapter sees one pruned graph per ``session.run``: a graph holding an
``OutfeedDequeueOp`` (or, in the anchor, ``StopOutfeedDequeueOp``) is a host-call graph and
gets no candidates; a graph holding a ``MakeIterator`` and an ``Iterator``/``IteratorV2`` is the
dataset-initialisation graph and gets none either. tf2npu sees the whole ``GraphDef``, in which
these runs share one graph with the training step, so the rules apply to the part of the graph
those runs execute: every node downstream of an outfeed dequeue op (the host call), and every
node upstream of a ``MakeIterator`` (the dataset initialisation). When the graph is nothing
but that run, this is exactly the vendor rule.

Exceptions, because the training run shares them: ``Const`` nodes (decided by the Const rule)
and, when a ``MakeIterator`` is present, an ``Iterator``/``IteratorV2`` that also feeds an
``IteratorGetNext`` (the training run's iterator, a candidate under ``enable_data_pre_proc``).
Nodes in a region belong to another ``session.run``, so no propagation starts from them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from tf2npu.graph.decisions import Placement
from tf2npu.graph.ir import Graph, Node
from tf2npu.graph.placement.reasons import host

__all__ = ["ITERATORS", "OUTFEED_DEQUEUE", "regions"]

OUTFEED_DEQUEUE = frozenset({"OutfeedDequeueOp", "StopOutfeedDequeueOp"})
ITERATORS = frozenset({"Iterator", "IteratorV2"})
GET_NEXT = frozenset({"IteratorGetNext", "IteratorGetNextSync", "GetNext"})


def regions(graph: Graph) -> dict[str, Placement]:
    """Host placements for the nodes of host-call and dataset-init runs, by node name."""
    dequeues = [n for n in graph if n.op in OUTFEED_DEQUEUE]
    inits = [n for n in graph if n.op.startswith("MakeIterator")]
    out: dict[str, Placement] = {}
    if dequeues:
        first = dequeues[0].name
        message = f"in the host-call graph of outfeed dequeue op {first!r}"
        decision = host("host_call_graph", message)
        for node in _reach(graph, dequeues, downstream=True):
            out.setdefault(node.name, decision)
    if inits and any(n.op in ITERATORS for n in graph):
        first = inits[0].name
        decision = host("dataset_init_graph", f"in the dataset-initialisation graph of {first!r}")
        for node in _reach(graph, inits, downstream=False):
            if node.op in ITERATORS and _feeds_get_next(graph, node):
                continue
            out.setdefault(node.name, decision)
    for name in [name for name in out if graph[name].op == "Const"]:
        del out[name]
    return out


def _feeds_get_next(graph: Graph, node: Node) -> bool:
    return any(user.op in GET_NEXT for user in graph.consumers(node))


def _reach(graph: Graph, starts: Iterable[Node], *, downstream: bool) -> list[Node]:
    """``starts`` and every node reachable from them over data and control edges."""
    seen = {n.name for n in starts}
    queue = deque(starts)
    found: list[Node] = []
    while queue:
        node = queue.popleft()
        found.append(node)
        if downstream:
            nexts = [*graph.consumers(node), *graph.consumers(node, control=True)]
        else:
            names = [ref.node for ref in node.inputs] + list(node.control_inputs)
            nexts = [n for n in map(graph.get, names) if n is not None]
        for nxt in nexts:
            if nxt.name not in seen:
                seen.add(nxt.name)
                queue.append(nxt)
    return found

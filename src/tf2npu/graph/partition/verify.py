"""An after-the-fact check that a recorded partition is cycle-free.

Independent of how the GeOps were chosen: contract every GeOp named by ``node.meta[CLUSTER]``
to one vertex (host nodes stay single vertices) and look for a cycle with Kahn's algorithm.
A GeOp that a path leaves and re-enters shows up as such a cycle, so this also proves each
GeOp convex. Tests and ``--verify`` style callers use it; the pass itself does not need it.
"""

from __future__ import annotations

from collections import deque

from tf2npu.graph.decisions import CLUSTER, live_nodes
from tf2npu.graph.ir import Graph

__all__ = ["cluster_cycle"]

_BACK_EDGES = (frozenset({"NextIteration", "RefNextIteration"}), frozenset({"Merge", "RefMerge"}))


def cluster_cycle(graph: Graph) -> list[str]:
    """The contracted vertices (GeOp or host node names) left on or after a cycle; ``[]`` if none.

    >>> from tf2npu.graph.ir import Graph
    >>> g = Graph()
    >>> a = g.add_node("a", "X"); h = g.add_node("h", "Y", [a.output()])
    >>> b = g.add_node("b", "X", [a.output(), h.output()])
    >>> a.meta[CLUSTER] = b.meta[CLUSTER] = "GeOp1_0"
    >>> cluster_cycle(g)
    ['GeOp1_0', 'h']
    """
    live = {n.name: n for n in live_nodes(graph)}
    vertex = {name: n.meta.get(CLUSTER, name) for name, n in live.items()}
    succ: dict[str, set[str]] = {v: set() for v in vertex.values()}
    for name, node in live.items():
        back = node.op in _BACK_EDGES[1]
        for ref in node.inputs:
            if ref.node in live and not (back and live[ref.node].op in _BACK_EDGES[0]):
                succ[vertex[ref.node]].add(vertex[name])
        for control in node.control_inputs:
            if control in live:
                succ[vertex[control]].add(vertex[name])
    indegree = dict.fromkeys(succ, 0)
    for v, targets in succ.items():
        targets.discard(v)  # edges inside one GeOp
        for t in targets:
            indegree[t] += 1
    ready = deque(v for v, d in indegree.items() if d == 0)
    while ready:
        for t in succ[ready.popleft()]:
            indegree[t] -= 1
            if indegree[t] == 0:
                ready.append(t)
    return sorted(v for v, d in indegree.items() if d > 0)

"""Cycle-safe grouping of device nodes by *host rank*, in two linear sweeps.

The vendor contracts edges one by one in a ``GraphCycles`` structure, asking before each
contraction whether another path links the two ends. That is quadratic in the worst case. We
reach a cycle-free grouping in O(nodes + edges) instead, by giving every node a rank:

* ASAP sweep (topological order): a node's rank is the largest of its producers' ranks, plus one
  for each producer that is a *device* node when the node itself is a *host* node. So the rank
  only grows along an edge, and grows strictly across every device→host edge: a path that
  leaves the device, runs on the host and comes back reaches a strictly higher rank.
* ALAP sweep (reverse order): a device node is raised as far as its consumers allow (a device
  consumer's rank; a host consumer's rank minus one). Both constraints above still hold, no new
  rank value appears, and a variable or ``Const`` read only by a later GeOp moves into it
  instead of costing a copy.

Device nodes of equal rank joined by edges form a *component*; all device nodes of one rank
form a *group*. Why no grouping here can close a cycle (docs/partition.md has the long form):
ranks never decrease along a path, and a path through a host node passes a device→host edge,
so it ends at a higher rank than it started. A path between two nodes of one rank therefore
runs on device nodes of that rank only — inside one component. Hence a component or a group
is *convex* (no path leaves it and comes back), and two groups can only be linked one way,
from the lower rank to the higher: contracting every group leaves an acyclic graph.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from tf2npu.errors import GraphError
from tf2npu.graph.decisions import live_nodes
from tf2npu.graph.ir import Graph, Node

__all__ = ["LiveTopology", "components", "live_topology", "ranks"]

# v1 loop back edges carry no ordering, as in tf2npu.graph.lint.topo_order and the vendor's
# GraphCycles (which skips every edge leaving NextIteration).
_BACK_EDGE_PRODUCERS = frozenset({"NextIteration", "RefNextIteration"})
_BACK_EDGE_CONSUMERS = frozenset({"Merge", "RefMerge"})


@dataclass(frozen=True)
class LiveTopology:
    """The live top-level nodes in topological order, with edges as index lists.

    ``preds``/``succs`` hold data and control edges (one entry per edge, so duplicates
    occur), without v1 loop back edges and without edges from or to superseded nodes.
    """

    nodes: list[Node]
    position: dict[str, int]
    preds: list[list[int]]
    succs: list[list[int]]


def live_topology(graph: Graph) -> LiveTopology:
    """Order the live nodes of ``graph`` (not its function bodies) topologically.

    Ties keep load order, so the result is deterministic.

    Raises:
        GraphError: the live nodes form a cycle (the message walks it).
    """
    live = live_nodes(graph)
    load = {n.name: i for i, n in enumerate(live)}
    preds = [_producers(node, load, live) for node in live]
    order = _kahn(preds, live)
    rank_of = [0] * len(live)
    for new, old in enumerate(order):
        rank_of[old] = new
    nodes = [live[i] for i in order]
    topo_preds = [[rank_of[p] for p in preds[i]] for i in order]
    succs: list[list[int]] = [[] for _ in nodes]
    for i, ps in enumerate(topo_preds):
        for p in ps:
            succs[p].append(i)
    return LiveTopology(nodes, {n.name: i for i, n in enumerate(nodes)}, topo_preds, succs)


def _producers(node: Node, load: dict[str, int], live: list[Node]) -> list[int]:
    found = []
    back = node.op in _BACK_EDGE_CONSUMERS
    for ref in node.inputs:
        i = load.get(ref.node)
        if i is not None and not (back and live[i].op in _BACK_EDGE_PRODUCERS):
            found.append(i)
    for name in node.control_inputs:
        i = load.get(name)
        if i is not None:
            found.append(i)
    return found


def _kahn(preds: list[list[int]], live: list[Node]) -> list[int]:
    indegree = [len(ps) for ps in preds]
    succs: list[list[int]] = [[] for _ in preds]
    for i, ps in enumerate(preds):
        for p in ps:
            succs[p].append(i)
    ready = deque(i for i, d in enumerate(indegree) if d == 0)
    order = []
    while ready:
        i = ready.popleft()
        order.append(i)
        for s in succs[i]:
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    if len(order) != len(live):
        cycle = _cycle(preds, indegree, live)
        raise GraphError(
            f"graph has a cycle through {cycle[0]!r} ({' -> '.join(cycle)}); partitioning "
            "needs an acyclic graph apart from v1 loop back edges (NextIteration -> Merge)"
        )
    return order


def _cycle(preds: list[list[int]], indegree: list[int], live: list[Node]) -> list[str]:
    """Walk producers among the unordered nodes until one repeats (each has such a producer)."""
    start = next(i for i, d in enumerate(indegree) if d > 0)
    seen: dict[int, int] = {}
    path: list[int] = []
    current = start
    while current not in seen:
        seen[current] = len(path)
        path.append(current)
        current = next(p for p in preds[current] if indegree[p] > 0)
    loop = path[seen[current] :]
    loop.reverse()  # edge direction
    first = loop.index(min(loop))  # start at the first loaded node: stable across runs
    names = [live[i].name for i in loop[first:] + loop[:first]]
    return [*names, names[0]]


def ranks(topo: LiveTopology, device: list[bool]) -> list[int]:
    """Host rank per node (ASAP, then device nodes raised ALAP); see the module docstring."""
    preds, succs = topo.preds, topo.succs
    rank = [0] * len(device)
    for i, ps in enumerate(preds):
        best = 0
        host = not device[i]
        for p in ps:
            r = rank[p] + 1 if host and device[p] else rank[p]
            if r > best:
                best = r
        rank[i] = best
    for i in range(len(device) - 1, -1, -1):
        if not device[i] or not succs[i]:
            continue
        bound = min(rank[s] if device[s] else rank[s] - 1 for s in succs[i])
        if bound > rank[i]:
            rank[i] = bound
    return rank


def components(topo: LiveTopology, device: list[bool], rank: list[int]) -> list[list[int]]:
    """Device nodes joined by edges between equal ranks; each list ascending, lists by first."""
    parent = list(range(len(device)))

    def find(i: int) -> int:
        root = i
        while parent[root] != root:
            root = parent[root]
        while parent[i] != root:
            parent[i], i = root, parent[i]
        return root

    for i, ps in enumerate(topo.preds):
        if not device[i]:
            continue
        for p in ps:
            if device[p] and rank[p] == rank[i]:
                a, b = find(p), find(i)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    members: dict[int, list[int]] = {}
    for i, is_device in enumerate(device):
        if is_device:
            members.setdefault(find(i), []).append(i)
    return list(members.values())

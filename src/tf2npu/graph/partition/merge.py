"""Which device components become GeOps: one GeOp (full offload) or several (mixed compute).

Mirrors §3.5 steps 4–7 of the vendor's partition pass on top of the rank components of
:mod:`.cycles`:

* If the largest component has one node, isolated ``NoOp``/``Identity`` components are
  dropped (they stay on the host), as the vendor does.
* Mixed compute: every rank group is one GeOp. Components of one rank never reach each other,
  which is exactly the vendor's merge condition, so merging them all is allowed; the result
  has the fewest GeOps any cycle-free partition can have (one per device→host→device
  alternation on the longest such path).
* Full offload: the largest rank group is kept; every other component merges into it when
  neither reaches the other (checked against the growing merged set, as the vendor checks
  against all clusters merged so far); the rest fall back to the host.
"""

from __future__ import annotations

from dataclasses import dataclass

from tf2npu.graph.partition.cycles import LiveTopology

__all__ = ["Grouping", "group"]

_DROPPABLE = frozenset({"NoOp", "Identity"})


@dataclass(frozen=True)
class Grouping:
    """Node indices (ascending, i.e. topological) per kept GeOp, fallen-back group, dropped."""

    geops: list[list[int]]
    fallback: list[list[int]]
    dropped: list[int]


def group(topo: LiveTopology, comps: list[list[int]], rank: list[int], *, mixed: bool) -> Grouping:
    """Decide the kept GeOps from the components; see the module docstring."""
    dropped: list[int] = []
    if comps and max(len(c) for c in comps) == 1:
        dropped = [c[0] for c in comps if topo.nodes[c[0]].op in _DROPPABLE]
        comps = [c for c in comps if topo.nodes[c[0]].op not in _DROPPABLE]
    groups = _by_rank(comps, rank)
    if mixed or len(groups) <= 1:
        return Grouping(groups, [], dropped)
    kept = max(groups, key=len)  # max() keeps the first of equal sizes: the earliest group
    others = [c for c in comps if rank[c[0]] != rank[kept[0]]]
    merged, left = _merge_unreachable(topo, kept, others)
    return Grouping([sorted(merged)], _by_rank(left, rank), dropped)


def _by_rank(comps: list[list[int]], rank: list[int]) -> list[list[int]]:
    """Union of the components per rank; groups ordered by their first (topological) node."""
    by_rank: dict[int, list[int]] = {}
    for comp in comps:
        by_rank.setdefault(rank[comp[0]], []).extend(comp)
    return sorted((sorted(g) for g in by_rank.values()), key=lambda g: g[0])


def _merge_unreachable(
    topo: LiveTopology, kept: list[int], others: list[list[int]]
) -> tuple[list[int], list[list[int]]]:
    """Merge, largest first, each component that neither reaches nor is reached by the set.

    ``down``/``up`` mark what the merged set reaches and what reaches it. Both only grow, so
    a node is expanded at most once per direction: linear in all, however many merge.
    """
    down = bytearray(len(topo.nodes))
    up = bytearray(len(topo.nodes))
    merged = list(kept)
    _spread(kept, topo.succs, down)
    _spread(kept, topo.preds, up)
    left = []
    for comp in sorted(others, key=lambda c: (-len(c), c[0])):
        if any(down[i] or up[i] for i in comp):
            left.append(comp)
            continue
        merged.extend(comp)
        _spread(comp, topo.succs, down)
        _spread(comp, topo.preds, up)
    return merged, sorted(left, key=lambda c: c[0])


def _spread(seeds: list[int], edges: list[list[int]], marked: bytearray) -> None:
    stack = []
    for i in seeds:
        if not marked[i]:
            marked[i] = 1
            stack.append(i)
    while stack:
        for j in edges[stack.pop()]:
            if not marked[j]:
                marked[j] = 1
                stack.append(j)

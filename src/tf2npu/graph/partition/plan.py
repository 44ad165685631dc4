"""The partition of one top-level graph into GeOps: computed, recorded, summarised.

:func:`partition_graph` chains the linear steps — live topology, host ranks, components,
GeOp choice (:mod:`.merge`), boundary classification (:mod:`.edges`) — and writes the result:
``node.meta[CLUSTER]`` on every node of a kept GeOp, ``graph.meta[CLUSTERS]`` (the
:class:`~tf2npu.graph.decisions.Cluster` list in GeOp order) and ``graph.meta[PARTITION]``
(this module's :class:`PartitionPlan`, with what the clusters alone do not say).
"""

from __future__ import annotations

from dataclasses import dataclass

from tf2npu.gcpause import gc_paused
from tf2npu.graph.decisions import CLUSTER, CLUSTERS, PLACEMENT, Cluster
from tf2npu.graph.ir import Graph, Node
from tf2npu.graph.partition.cycles import components, live_topology, ranks
from tf2npu.graph.partition.edges import Copy, Transfer, boundary
from tf2npu.graph.partition.merge import group

__all__ = ["GRAPH_NUM", "PARTITION", "PartitionPlan", "geop_name", "partition_graph"]

#: ``graph.meta`` key → :class:`PartitionPlan` (partition pass, top-level graph).
PARTITION = "partition"
#: ``graph.meta`` key → int: the vendor's per-process graph counter in GeOp names (default 1).
GRAPH_NUM = "graph_num"


@dataclass(frozen=True)
class PartitionPlan:
    """The GeOps of a graph and what crosses between them and the host.

    ``fallback`` lists, per fallen-back group (full offload), the device-capable nodes that
    run on the host instead; ``dropped`` the isolated ``NoOp``/``Identity`` nodes left on the
    host; ``copies`` the Consts and variables duplicated into other GeOps (mixed compute);
    ``ref_to_host`` the (ref variable, host consumer) pairs the vendor rejects.
    """

    mixed: bool
    clusters: list[Cluster]
    fallback: list[tuple[str, ...]]
    dropped: tuple[str, ...]
    transfers: list[Transfer]
    copies: list[Copy]
    ref_to_host: list[tuple[str, str]]
    live_nodes: int

    def stats(self) -> dict[str, int]:
        """The pass's counters (numbers only)."""
        device = sum(len(c.nodes) for c in self.clusters)
        unknown = [t for t in self.transfers if t.bytes is None]
        return {
            "geops": len(self.clusters),
            "device_nodes": device,
            "host_nodes": self.live_nodes - device,
            "memcpy_edges": sum(t.edges for t in self.transfers),
            "memcpy_bytes": sum(t.bytes for t in self.transfers if t.bytes is not None),
            "memcpy_edges_unknown_size": sum(t.edges for t in unknown),
            "fallback_nodes": sum(len(f) for f in self.fallback),
            "const_copies": sum(1 for c in self.copies if c.kind == "const"),
            "variable_copies": sum(1 for c in self.copies if c.kind == "variable"),
        }


def geop_name(graph_num: int, seq: int) -> str:
    """The vendor's GeOp name: ``GeOp<graph_num>_<seq>``."""
    return f"GeOp{graph_num}_{seq}"


def partition_graph(graph: Graph, *, mixed: bool) -> PartitionPlan:
    """Partition the live top-level nodes of ``graph`` and record the result (module doc).

    Raises:
        GraphError: the live nodes form a cycle (other than v1 loop back edges).
    """
    with gc_paused():  # see tf2npu.gcpause: 2x slower and superlinear at 50k nodes otherwise
        return _partition(graph, mixed=mixed)


def _partition(graph: Graph, *, mixed: bool) -> PartitionPlan:
    topo = live_topology(graph)
    device = [_on_device(graph, n) for n in topo.nodes]
    rank = ranks(topo, device)
    grouping = group(topo, components(topo, device, rank), rank, mixed=mixed)
    graph_num = int(graph.meta.get(GRAPH_NUM, 1))
    names = [geop_name(graph_num, seq) for seq in range(len(grouping.geops))]
    place = [""] * len(topo.nodes)
    for name, members in zip(names, grouping.geops, strict=True):
        for i in members:
            place[i] = name
    edges = boundary(topo, place, mixed=mixed)
    clusters = [
        Cluster(
            name,
            tuple(topo.nodes[i].name for i in members),
            edges.inputs.get(name, ()),
            edges.outputs.get(name, ()),
        )
        for name, members in zip(names, grouping.geops, strict=True)
    ]
    _record(graph, topo.nodes, place, clusters)
    plan = PartitionPlan(
        mixed=mixed,
        clusters=clusters,
        fallback=[tuple(topo.nodes[i].name for i in g) for g in grouping.fallback],
        dropped=tuple(topo.nodes[i].name for i in grouping.dropped),
        transfers=edges.transfers,
        copies=edges.copies,
        ref_to_host=edges.ref_to_host,
        live_nodes=len(topo.nodes),
    )
    graph.meta[PARTITION] = plan
    return plan


def _on_device(graph: Graph, node: Node) -> bool:
    """The placement pass's verdict; a node created after it inherits from its origin nodes."""
    placement = node.meta.get(PLACEMENT)
    if placement is not None:
        return bool(placement.device)
    origins = [graph.get(name) for name in node.origin]
    return bool(origins) and all(
        o is not None and PLACEMENT in o.meta and o.meta[PLACEMENT].device for o in origins
    )


def _record(graph: Graph, live: list[Node], place: list[str], clusters: list[Cluster]) -> None:
    for node in graph:
        node.meta.pop(CLUSTER, None)
    for node, name in zip(live, place, strict=True):
        if name:
            node.meta[CLUSTER] = name
    graph.meta[CLUSTERS] = clusters

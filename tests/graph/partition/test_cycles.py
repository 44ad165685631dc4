"""Host ranks and GeOp grouping: cycle safety on random graphs, and linear time."""

from __future__ import annotations

import random

import pytest

from tf2npu.graph.decisions import CLUSTER, PLACEMENT, Placement
from tf2npu.graph.ir import Graph, TensorRef
from tf2npu.graph.partition import cluster_cycle, partition_graph
from tf2npu.graph.partition.cycles import components, live_topology, ranks


def random_graph(
    n: int, seed: int, host_share: float = 0.2, fan_in: int = 2, reach: int = 0
) -> Graph:
    """Node i reads up to ``fan_in`` earlier nodes (within ``reach`` of it, if given)."""
    rng = random.Random(seed)
    g = Graph()
    for i in range(n):
        low = max(0, i - reach) if reach else 0
        count = min(i, rng.randint(0, fan_in))
        inputs = [TensorRef(f"n{rng.randrange(low, i)}") for _ in range(count)]
        node = g.add_node(f"n{i}", "Op", inputs)
        node.meta[PLACEMENT] = Placement(rng.random() >= host_share)
    return g


def test_ranks_grow_across_device_to_host_edges_and_variables_move_late() -> None:
    g = Graph()
    for name, op, inputs, device in [
        ("d1", "Relu", [], True),
        ("h", "PyFunc", ["d1"], False),
        ("w", "Const", [], True),
        ("d2", "AddV2", ["h", "w", "d1"], True),
    ]:
        node = g.add_node(name, op, [TensorRef(i) for i in inputs])
        node.meta[PLACEMENT] = Placement(device)
    topo = live_topology(g)
    device = [bool(n.meta[PLACEMENT].device) for n in topo.nodes]
    rank = dict(zip([n.name for n in topo.nodes], ranks(topo, device), strict=True))
    assert rank == {"d1": 0, "w": 1, "h": 1, "d2": 1}
    comps = components(topo, device, ranks(topo, device))
    assert [[topo.nodes[i].name for i in c] for c in comps] == [["d1"], ["w", "d2"]]


@pytest.mark.parametrize("mixed", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_random_graphs_partition_into_an_acyclic_cluster_graph(seed: int, mixed: bool) -> None:
    g = random_graph(60, seed, host_share=0.1 + (seed % 5) / 10)
    plan = partition_graph(g, mixed=mixed)
    assert cluster_cycle(g) == []
    if not mixed:
        assert len(plan.clusters) <= 1
    else:  # every device node is in a GeOp (nothing falls back in mixed compute)
        on_device = {n.name for n in g if n.meta[PLACEMENT].device} - set(plan.dropped)
        assert on_device == {n.name for n in g if CLUSTER in n.meta}


def test_cluster_cycle_finds_a_geop_that_a_path_leaves_and_reenters() -> None:
    g = Graph()
    a = g.add_node("a", "X")
    h = g.add_node("h", "Y", [a.output()])
    g.add_node("b", "X", [h.output()])
    a.meta[CLUSTER] = g["b"].meta[CLUSTER] = "GeOp1_0"
    assert cluster_cycle(g) == ["GeOp1_0", "h"]


@pytest.mark.slow
@pytest.mark.parametrize("mixed", [False, True])
def test_a_50k_node_graph_partitions_without_cycles(mixed: bool) -> None:
    """At scale the clustering stays cycle-free (speed: benchmarks/graph_passes.py)."""
    g = random_graph(50_000, 7, host_share=0.02, fan_in=3, reach=50)  # local edges, like a model
    plan = partition_graph(g, mixed=mixed)
    assert plan.clusters and cluster_cycle(g) == []

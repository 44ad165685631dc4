"""The partition pass on small literal graphs: GeOps, fallbacks, memcpy edges, diagnostics."""

from __future__ import annotations

import dataclasses

import pytest

from tf2npu.config.options import NpuOptions
from tf2npu.errors import ConfigError, GraphError
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import (
    CLUSTER,
    CLUSTERS,
    PLACEMENT,
    Cluster,
    Diagnostics,
    Placement,
    supersede,
)
from tf2npu.graph.ir import Graph, Node, TensorRef
from tf2npu.graph.partition import GRAPH_NUM, PARTITION, PartitionPlan, cluster_cycle
from tf2npu.graph.passes.infra import PassContext, PassResult
from tf2npu.graph.passes.partition import Partition

_BASE = EngineConfig.build(NpuOptions.from_values({}))
HOST_OPS = {"PyFunc": 1, "GrayOp": 2}


def add(
    g: Graph,
    name: str,
    op: str,
    *inputs: str,
    device: bool | None = None,
    control: tuple[str, ...] = (),
    code: int | None = None,
    reason: str | None = None,
) -> Node:
    """A node placed on the device unless its op is in HOST_OPS (or ``device`` says so); a host
    Placeholder gets the placement pass's reason ``feed``."""
    node = g.add_node(name, op, [TensorRef.parse(i) for i in inputs], control_inputs=control)
    on_device = op not in HOST_OPS if device is None else device
    if code is None:
        code = 0 if on_device else HOST_OPS.get(op, 4)
    if reason is None:
        reason = "supported" if on_device else ("feed" if op == "Placeholder" else "test")
    node.meta[PLACEMENT] = Placement(
        on_device, code, reason, "" if on_device else f"{op}: not in the device op library"
    )
    return node


def run(
    g: Graph, *, mixed: bool = False, **values: object
) -> tuple[PassResult[Graph], Diagnostics]:
    options = NpuOptions.from_values({"mix_compile_mode": mixed, **values})  # type: ignore[dict-item]
    cfg = dataclasses.replace(_BASE, options=options, diagnostics=Diagnostics())
    result = Partition().run(g, PassContext(config=cfg))
    assert cluster_cycle(g) == []
    return result, cfg.diagnostics


def clusters(g: Graph) -> list[Cluster]:
    found: list[Cluster] = g.meta[CLUSTERS]
    return found


def codes(diags: Diagnostics) -> list[tuple[str, str, str]]:
    return [(d.severity, d.code, d.node) for d in diags.items]


def host_in_middle() -> Graph:
    """x -> a -> b -> py (host) -> c -> d: two device runs around a host op."""
    g = Graph()
    add(g, "x", "Placeholder", device=False)
    add(g, "a", "MatMul", "x")
    add(g, "b", "Relu", "a")
    add(g, "py", "PyFunc", "b")
    add(g, "c", "Relu", "py")
    add(g, "d", "Relu", "c")
    add(g, "e", "Relu", "d")
    return g


# -- one GeOp ---------------------------------------------------------------------------
def test_an_all_device_chain_is_one_geop_with_no_memcpy() -> None:
    g = Graph()
    add(g, "a", "VariableV2")
    add(g, "b", "Identity", "a")
    add(g, "c", "Relu", "b")
    result, diags = run(g)
    assert clusters(g) == [Cluster("GeOp1_0", ("a", "b", "c"), (), ())]
    assert {n.name: n.meta[CLUSTER] for n in g} == dict.fromkeys("abc", "GeOp1_0")
    assert result.stats == {
        "geops": 1,
        "device_nodes": 3,
        "host_nodes": 0,
        "memcpy_edges": 0,
        "memcpy_bytes": 0,
        "memcpy_edges_unknown_size": 0,
        "fallback_nodes": 0,
        "const_copies": 0,
        "variable_copies": 0,
    }
    assert not result.changed
    assert diags.items == []


def test_full_offload_keeps_the_larger_run_and_the_other_falls_back_to_host() -> None:
    g = host_in_middle()
    result, diags = run(g)
    assert clusters(g) == [Cluster("GeOp1_0", ("c", "d", "e"), ("py",), ())]
    assert CLUSTER not in g["a"].meta and CLUSTER not in g["py"].meta
    assert result.stats["geops"] == 1
    assert result.stats["fallback_nodes"] == 2
    assert result.stats["host_nodes"] == 4  # x, py and the fallen-back a, b
    assert result.stats["memcpy_edges"] == 1  # py -> c; a and b run on the host with py
    assert codes(diags) == [
        ("warning", "fallback_to_host", "a"),
        ("info", "runs_on_host", "py"),
        ("info", "host_feeds", "x"),
    ]
    warning = diags.items[0]
    assert "2 device-capable node(s) ('a', 'b')" in warning.message
    assert "GeOp1_0" in warning.message and "mix_compile_mode=True" in warning.fix
    plan: PartitionPlan = g.meta[PARTITION]
    assert plan.fallback == [("a", "b")]


def test_full_offload_reports_unsupported_host_nodes_but_not_gray_ones() -> None:
    g = Graph()
    add(g, "x", "Placeholder", device=False)  # code 4 by default in this helper
    add(g, "gray", "GrayOp", "x")  # code 2: only mixed compute keeps gray ops on the host
    add(g, "a", "Relu", "gray")
    add(g, "py", "PyFunc", "a", device=False, code=1, reason="not_in_library")
    _, diags = run(g)
    assert codes(diags) == [("info", "runs_on_host", "py"), ("info", "host_feeds", "x")]


def test_feeds_are_one_note_that_asks_for_no_replacement() -> None:
    """A Placeholder is an input copied to the device each step: telling the user to replace it
    "with an op the device supports" (one note per feed) was wrong advice."""
    g = Graph()
    add(g, "x", "Placeholder", device=False, code=4, reason="feed")
    add(g, "y", "Placeholder", device=False, code=4, reason="feed")
    add(g, "c", "Const", device=False, code=4, reason="unread")
    add(g, "a", "Add", "x", "y")
    _, diags = run(g)
    assert codes(diags) == [("info", "host_feeds", "x")]
    note = diags.items[0]
    assert note.message == (
        "2 Placeholder(s) ('x', 'y') are fed from the host: each sess.run copies their values "
        "to the device; that is how feed_dict works and needs no change"
    )
    assert "replace" not in note.fix and "tf.data pipeline" in note.fix


# -- mixed compute --------------------------------------------------------------------------
def test_mixed_mode_makes_two_geops_and_counts_the_memcpy_edges() -> None:
    g = host_in_middle()
    add(g, "py2", "PyFunc", "b")  # a second host reader of b: one more edge, same transfer
    result, diags = run(g, mixed=True)
    assert clusters(g) == [
        Cluster("GeOp1_0", ("a", "b"), ("x",), ("b",)),
        Cluster("GeOp1_1", ("c", "d", "e"), ("py",), ()),
    ]
    assert result.stats["geops"] == 2
    assert result.stats["memcpy_edges"] == 4  # x->a, b->py, b->py2, py->c
    assert result.stats["memcpy_edges_unknown_size"] == 4  # no shapes recorded
    assert result.stats["memcpy_bytes"] == 0
    plan: PartitionPlan = g.meta[PARTITION]
    assert [(t.tensor, t.source, t.dest, t.edges) for t in plan.transfers] == [
        ("b", "GeOp1_0", "", 2),
        ("py", "", "GeOp1_1", 1),
        ("x", "", "GeOp1_0", 1),
    ]
    assert diags.items == []  # no fallback and no per-node host info in mixed compute


def test_the_diamond_device_host_device_needs_two_geops_not_one() -> None:
    g = Graph()
    add(g, "d1", "Relu")
    add(g, "h", "PyFunc", "d1")
    add(g, "d2", "AddV2", "d1", "h")  # contracting d1-d2 would hide h inside a cycle
    run(g, mixed=True)
    assert [c.nodes for c in clusters(g)] == [("d1",), ("d2",)]
    run(g)
    assert [c.nodes for c in clusters(g)] == [("d1",)]  # equal sizes: the first one is kept
    assert g.meta[PARTITION].fallback == [("d2",)]


def test_a_control_edge_through_the_host_also_separates_geops() -> None:
    g = Graph()
    add(g, "d1", "Relu")
    add(g, "h", "PyFunc", control=("d1",))
    add(g, "d2", "Relu", "d1", control=("h",))
    result, _ = run(g, mixed=True)
    assert [c.nodes for c in clusters(g)] == [("d1",), ("d2",)]
    assert result.stats["memcpy_edges"] == 1  # control edges copy nothing


def test_mixed_mode_uses_the_fewest_geops_for_parallel_branches() -> None:
    g = Graph()
    for branch in "pq":
        add(g, f"{branch}1", "Relu")
        add(g, f"{branch}h", "PyFunc", f"{branch}1")
        add(g, f"{branch}2", "Relu", f"{branch}h")
    run(g, mixed=True)
    assert [c.nodes for c in clusters(g)] == [("p1", "q1"), ("p2", "q2")]


def test_full_offload_merges_a_component_that_neither_reaches_nor_is_reached() -> None:
    g = Graph()
    add(g, "x", "Relu")
    add(g, "h", "PyFunc", "x")
    add(g, "y1", "Relu", "h")
    add(g, "y2", "Relu", "y1")
    add(g, "y3", "Relu", "y2")
    add(g, "y4", "Relu", "y3")
    add(g, "z1", "Relu")  # an independent device chain: mergeable into the kept GeOp
    add(g, "z2", "Relu", "z1")
    result, diags = run(g)
    assert [c.nodes for c in clusters(g)] == [("z1", "z2", "y1", "y2", "y3", "y4")]
    assert g.meta[PARTITION].fallback == [("x",)]
    assert result.stats["fallback_nodes"] == 1
    assert codes(diags)[0] == ("warning", "fallback_to_host", "x")


def test_a_variable_read_only_by_a_later_geop_moves_into_it() -> None:
    g = Graph()
    add(g, "d1", "Relu")
    add(g, "h", "PyFunc", "d1")
    add(g, "w", "VarHandleOp")
    add(g, "d2", "MatMul", "h", "w")
    result, _ = run(g, mixed=True)
    assert [c.nodes for c in clusters(g)] == [("d1",), ("w", "d2")]
    assert result.stats["variable_copies"] == 0


# -- Consts and variables shared by GeOps ---------------------------------------------------
def const_feeding_two_geops() -> Graph:
    g = Graph()
    add(g, "k", "Const")
    add(g, "d1", "Mul", "k")
    add(g, "h", "PyFunc", "d1")
    add(g, "d2", "Mul", "h", "k")
    add(g, "v", "VarHandleOp")
    add(g, "d3", "ReadVariableOp", "v")
    add(g, "d4", "AddV2", "d2", "v")
    add(g, "d5", "AddV2", "d3", "d1")
    return g


def test_a_const_or_variable_feeding_two_geops_is_duplicated_not_copied_each_step() -> None:
    g = const_feeding_two_geops()
    result, _ = run(g, mixed=True)
    first, second = clusters(g)
    assert "k" in first.nodes and "v" in first.nodes
    assert second.inputs == ("h",)  # not k, not v: the vendor copies them into GeOp1_1
    plan: PartitionPlan = g.meta[PARTITION]
    assert [(c.node, c.into, c.kind) for c in plan.copies] == [
        ("k", "GeOp1_1", "const"),
        ("v", "GeOp1_1", "variable"),
    ]
    assert result.stats["const_copies"] == 1 and result.stats["variable_copies"] == 1
    assert result.stats["memcpy_edges"] == 2  # d1 -> h, h -> d2


def test_full_offload_does_not_duplicate_consts_for_fallen_back_nodes() -> None:
    g = const_feeding_two_geops()
    result, _ = run(g)
    assert result.stats["const_copies"] == 0
    plan: PartitionPlan = g.meta[PARTITION]
    assert ("k", "GeOp1_0", "") in [(t.tensor, t.source, t.dest) for t in plan.transfers]


def test_a_ref_variable_whose_value_a_host_node_reads_is_an_ordinary_memcpy_edge() -> None:
    """A Saver's SaveV2 reads ref variables through plain inputs: the vendor inserts an
    Identity in the GeOp and the value crosses (reference §3.5 step 9)."""
    g = Graph()
    add(g, "w", "VariableV2")
    add(g, "r", "Identity", "w")
    add(g, "name", "Const", device=False)
    add(g, "save", "SaveV2", "name", "name", "name", "w", device=False)
    result, diags = run(g, mixed=True)
    assert codes(diags) == []
    assert [c.nodes for c in clusters(g)] == [("w", "r")]
    plan: PartitionPlan = g.meta[PARTITION]
    assert [(t.tensor, t.source, t.dest) for t in plan.transfers] == [("w", "GeOp1_0", "")]
    assert plan.ref_to_host == [] and result.stats["memcpy_edges"] == 1


def test_ref_variables_a_host_node_takes_through_a_ref_input_are_one_error_with_a_list() -> None:
    g = Graph()
    for i in range(25):
        add(g, f"w{i}", "VariableV2")
        add(g, f"r{i}", "Identity", f"w{i}")
        add(g, f"assign{i}", "Assign", f"w{i}", f"r{i}", device=False)  # ref input 0
    _, diags = run(g, mixed=True)
    assert codes(diags) == [("error", "ref_variable_to_host", "w0")]
    message = diags.items[0].message
    assert message.startswith("25 ref variable(s) in a GeOp are taken by host nodes through")
    lines = message.splitlines()
    assert lines[1:3] == ["  - 'w0' -> 'assign0'", "  - 'w1' -> 'assign1'"]
    assert lines[-1] == "  - ... and 5 more" and len(lines) == 22
    assert "resource variables" in diags.items[0].fix
    assert "\nFix: use resource variables" in diags.items[0].render()


# -- what is partitioned ------------------------------------------------------------------
def test_superseded_nodes_are_ignored() -> None:
    g = Graph()
    add(g, "x", "Placeholder", device=False)
    old = add(g, "old", "Relu", "x")
    add(g, "y", "Relu", "old")
    new = g.add_node(g.new_name("old", "fused"), "Relu", [TensorRef("x")], origin=["old"])
    supersede(g, old, {0: new.output()}, by="fusion", rule="test")
    result, _ = run(g)
    assert clusters(g)[0].nodes == ("old/_tf2npu_fused", "y")  # placement inherited from old
    assert CLUSTER not in old.meta
    assert result.stats["host_nodes"] == 1  # x only; the dead node is not counted


def test_a_node_with_no_placement_and_no_origin_stays_on_the_host() -> None:
    g = Graph()
    add(g, "a", "Relu")
    g.add_node("b", "Relu", [TensorRef("a")])
    run(g)
    assert clusters(g)[0].nodes == ("a",)


def test_isolated_noop_and_identity_are_dropped_when_every_cluster_is_single() -> None:
    g = Graph()
    add(g, "x", "Placeholder", device=False)
    add(g, "n", "NoOp")
    add(g, "i", "Identity", "x")
    add(g, "r", "Relu", "x")
    add(g, "h", "PyFunc", "r")
    add(g, "s", "Relu", "h")
    run(g, mixed=True)
    assert [c.nodes for c in clusters(g)] == [("r",), ("s",)]
    assert g.meta[PARTITION].dropped == ("n", "i")


def test_a_cycle_among_live_nodes_is_a_graph_error_and_loop_back_edges_are_not() -> None:
    g = Graph()
    add(g, "enter", "Enter")
    merge = add(g, "merge", "Merge", "enter")
    add(g, "body", "Relu", "merge")
    add(g, "next", "NextIteration", "body")
    g.add_input(merge, TensorRef("next"))
    run(g)
    assert clusters(g)[0].nodes == ("enter", "merge", "body", "next")
    add(g, "a", "Relu", "b")
    add(g, "b", "Relu", "a")
    with pytest.raises(GraphError, match=r"cycle through 'a' \(a -> b -> a\)"):
        run(g)


def test_function_bodies_are_not_partitioned() -> None:
    from tf2npu.graph.ir import FunctionGraph

    g = Graph()
    body = FunctionGraph("f", g)
    inner = body.add_node("inner", "Relu")
    inner.meta[PLACEMENT] = Placement(True)
    g.functions["f"] = body
    add(g, "call", "f")
    run(g)
    assert clusters(g)[0].nodes == ("call",)
    assert CLUSTER not in inner.meta


# -- naming ------------------------------------------------------------------------------
def test_geop_names_follow_the_graph_number_and_topological_order() -> None:
    g = host_in_middle()
    g.meta[GRAPH_NUM] = 3
    run(g, mixed=True)
    first = [c.name for c in clusters(g)]
    assert first == ["GeOp3_0", "GeOp3_1"]
    again = host_in_middle()
    again.meta[GRAPH_NUM] = 3
    run(again, mixed=True)
    assert clusters(again) == clusters(g)


def test_rerunning_the_pass_replaces_stale_cluster_marks() -> None:
    g = host_in_middle()
    run(g, mixed=True)
    assert g["a"].meta[CLUSTER] == "GeOp1_0"
    run(g)
    assert CLUSTER not in g["a"].meta


# -- mixed-compute constraints -------------------------------------------------------------
def test_fused_batch_norm_v3_on_the_device_in_mixed_mode_warns_with_the_workaround() -> None:
    g = Graph()
    add(g, "x", "Placeholder", device=False)
    add(g, "bn", "FusedBatchNormV3", "x")
    add(g, "bn_grad", "FusedBatchNormGradV3", "bn")
    _, diags = run(g, mixed=True)
    assert codes(diags) == [("warning", "fused_batch_norm_v3_mixed", "bn")]
    item = diags.items[0]
    assert "2 FusedBatchNormV3/FusedBatchNormGradV3 node(s) ('bn', 'bn_grad')" in item.message
    assert "fifth output" in item.message
    assert "forward_compatibility_horizon(2019, 5, 1)" in item.fix
    _, full = run(g)
    assert "fused_batch_norm_v3_mixed" not in [d.code for d in full.items]


def test_one_node_fed_by_10k_host_placeholders_is_one_geop_with_every_edge_and_note() -> None:
    """Issue 9: correctness at a fan-in that was quadratic (one diagnostic per feed was checked
    against all earlier ones); the speed is measured by benchmarks/partition_scaling.py."""
    n = 10_000
    g = Graph()
    feeds = [add(g, f"p{i}", "Placeholder", device=False).name for i in range(n)]
    add(g, "sum", "AddN", *feeds)
    result, diags = run(g)
    (geop,) = clusters(g)
    assert geop.nodes == ("sum",) and len(geop.inputs) == n
    assert result.stats["memcpy_edges"] == n and result.stats["host_nodes"] == n
    (note,) = diags.items
    assert note.code == "host_feeds" and note.message.startswith(f"{n} Placeholder(s) ('p0', ")


def test_iterations_per_loop_above_one_in_mixed_mode_is_a_config_error() -> None:
    g = host_in_middle()
    with pytest.raises(
        ConfigError, match=r"'iterations_per_loop' = 10 .* set iterations_per_loop=1"
    ):
        run(g, mixed=True, iterations_per_loop=10)
    assert CLUSTERS not in g.meta
    run(g, iterations_per_loop=10)  # full offload may loop on the device
    assert len(clusters(g)) == 1


def test_an_empty_or_all_host_graph_has_no_geop() -> None:
    g = Graph()
    add(g, "py", "PyFunc")
    result, _ = run(g, mixed=True)
    assert clusters(g) == [] and result.stats["geops"] == 0 and result.stats["host_nodes"] == 1


# -- a TF-built graph -----------------------------------------------------------------------
def dense(x: object, units: int, name: str) -> object:
    import tensorflow as tf

    w = tf.compat.v1.get_variable(f"{name}/kernel", [x.shape[-1], units])  # type: ignore[attr-defined]
    b = tf.compat.v1.get_variable(f"{name}/bias", [units], initializer=tf.zeros_initializer())
    return tf.nn.bias_add(tf.matmul(x, w), b, name=f"{name}/BiasAdd")


def mlp_with_py_func() -> Graph:
    """A tf.compat.v1 MLP whose input goes through tf.py_func, with its training step."""
    import numpy as np
    import tensorflow as tf

    with tf.Graph().as_default() as tfg:
        x = tf.compat.v1.placeholder(tf.float32, [8, 4], name="x")
        y = tf.compat.v1.placeholder(tf.float32, [8, 2], name="y")
        scaled = tf.compat.v1.py_func(lambda a: a * np.float32(2), [x], tf.float32)
        scaled.set_shape([8, 4])
        hidden = tf.nn.relu(dense(scaled, 16, "dense"))
        logits = dense(hidden, 2, "dense_1")
        loss = tf.reduce_mean(tf.square(logits - y))
        tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
    g = Graph.from_graph_def(tfg.as_graph_def(add_shapes=True))
    host = {"Placeholder", "PyFunc"}
    for node in g:
        on_device = node.op not in host
        node.meta[PLACEMENT] = Placement(on_device, 0 if on_device else 1)
    return g


@pytest.mark.tf
@pytest.mark.parametrize("mixed", [False, True])
def test_a_tf_mlp_with_a_py_func_input_partitions_without_cycles(mixed: bool) -> None:
    g = mlp_with_py_func()
    result, diags = run(g, mixed=mixed)  # run() asserts the contracted graph is acyclic
    geop = clusters(g)[0]
    assert result.stats["geops"] == 1  # the py_func only feeds the model: nothing comes back
    assert {"MatMul", "MatMul_1", "GradientDescent"} <= set(geop.nodes)
    assert "PyFunc" not in geop.nodes
    assert set(geop.inputs) == {"PyFunc", "y"}
    assert result.stats["memcpy_edges"] == 3  # PyFunc is read by MatMul and its gradient
    assert result.stats["memcpy_bytes"] == 8 * 4 * 4 + 8 * 2 * 4
    assert result.stats["memcpy_edges_unknown_size"] == 0
    assert not [d for d in diags.items if d.severity != "info"]


@pytest.mark.tf
def test_a_py_func_between_two_layers_splits_a_tf_graph_in_mixed_mode() -> None:
    import tensorflow as tf

    with tf.Graph().as_default() as tfg:
        x = tf.compat.v1.placeholder(tf.float32, [8, 4], name="x")
        h = dense(x, 16, "dense")
        mid = tf.compat.v1.py_func(lambda a: a, [h], tf.float32, name="mid")
        mid.set_shape([8, 16])
        out = dense(mid, 2, "dense_1")
        tf.identity(tf.reduce_sum(out) + tf.reduce_sum(h), name="total")
    g = Graph.from_graph_def(tfg.as_graph_def(add_shapes=True))
    for node in g:
        node.meta[PLACEMENT] = Placement(node.op not in {"Placeholder", "PyFunc"}, 1)
    result, _ = run(g, mixed=True)
    assert result.stats["geops"] == 2
    # x in, dense/BiasAdd out to mid and on to GeOp1_1 (h is read again there), mid back in
    assert result.stats["memcpy_bytes"] == 8 * 4 * 4 + 2 * 8 * 16 * 4 + 8 * 16 * 4

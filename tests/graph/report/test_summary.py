"""The JSON summary: keys and values of a hand-set run, and the placement fallbacks."""

from __future__ import annotations

import json
from collections.abc import Callable

from tf2npu.graph.decisions import CLUSTER, PLACEMENT, Placement, supersede
from tf2npu.graph.engine import EngineRun
from tf2npu.graph.report import to_json_text
from tf2npu.graph.report.summary import OUTSIDE_GEOP, UNDECIDED, GraphSummary, summarize

MakeRun = Callable[..., EngineRun]

EXPECTED = {
    "schema_version": 2,
    "graph": "model.pbtxt",
    "mode": {"mix_compile_mode": True, "precision_mode": "allow_mix_precision"},
    "nodes": 6,
    "device_nodes": 2,
    "host_nodes": 4,
    "lowering_nodes": 0,
    "geops": [
        {"name": "GeOp1_0", "nodes": 2, "inputs": ["py", "x"], "outputs": ["relu"],
         "sources": {"not_in_library": 1, "outside_geop": 1}, "sinks": {"gray_op": 1}},
    ],
    "host_ops": [
        {"name": "x", "type": "Placeholder", "reason": "outside_geop", "code": 0,
         "message": "Placeholder: the device can run it, but no GeOp holds it"},
        {"name": "py", "type": "PyFunc", "reason": "not_in_library", "code": 1,
         "message": "PyFunc: not in the device op library"},
        {"name": "s", "type": "AsString", "reason": "gray_op", "code": 2,
         "message": "AsString: gray op, host in mixed compute"},
        {"name": "c", "type": "Const", "reason": "undecided", "code": 0,
         "message": "Const: no placement decision (the placement pass did not run)"},
    ],
    "memcpy_edges": 3,
    "memcpy_bytes": 4096,
    "casts_inserted": 2,
    "precision": {"mm_orig": {"before": "float32", "after": "float16", "reason": "allow_list"}},
    "crossings": [
        {"tensor": "py", "from": "not_in_library", "to": "GeOp1_0", "dtype": "", "shape": ""},
        {"tensor": "x", "from": "outside_geop", "to": "GeOp1_0", "dtype": "", "shape": ""},
        {"tensor": "relu", "from": "GeOp1_0", "to": "gray_op", "dtype": "", "shape": ""},
    ],
    "fusions": {"matmul_biasadd": 1, "gelu": 0},
    "fusion_instances": [
        {"rule": "matmul_biasadd", "root": "relu", "nodes": ["relu", "mm_orig"]},
    ],
    "errors": [
        {"code": "table_split", "message": "the lookup table is split between host and device",
         "node": "s", "fix": "keep the table ops together (mix_compile_mode)"},
    ],
    "warnings": [
        {"code": "cast_heavy", "message": "many casts on the loss path", "node": "", "fix": ""},
    ],
    "infos": [],
    "options_without_effect": [
        {"name": "lower_functional_ops", "reason": "function bodies are first-class in our IR"},
    ],
    "pass_seconds": {"placement": 0.25, "precision": 0.125, "partition": 0.5},
    "skipped_passes": [{"name": "lowering", "reason": "disabled by the pass context"}],
}  # fmt: skip


def test_summary_json_of_a_hand_set_run(summary: GraphSummary) -> None:
    assert summary.to_json() == EXPECTED


def test_json_text_is_one_parseable_object(summary: GraphSummary) -> None:
    text = to_json_text(summary)
    assert text.endswith("}\n")
    assert json.loads(text) == EXPECTED


def test_full_offload_explains_the_fallback_of_device_nodes_outside_the_geop(
    make_run: MakeRun,
) -> None:
    run = make_run()
    run.config.options = type(run.config.options).from_values({"lower_functional_ops": True})
    x = summarize(run).host_ops[0]
    assert (x.name, x.reason) == ("x", OUTSIDE_GEOP)
    assert x.message == (
        "Placeholder: the device can run it, but full-offload mode keeps only the largest GeOp "
        "and runs the rest on the host"
    )


def test_before_partitioning_the_placement_decides(make_run: MakeRun) -> None:
    summary = summarize(make_run(partitioned=False))
    assert summary.partitioned is False
    assert summary.geops == ()
    assert (summary.nodes, summary.device_nodes, summary.host_nodes) == (6, 3, 3)
    assert [(h.name, h.reason) for h in summary.host_ops] == [
        ("py", "not_in_library"), ("s", "gray_op"), ("c", UNDECIDED),
    ]  # fmt: skip


def test_a_host_placement_without_message_gets_one_from_op_and_reason(make_run: MakeRun) -> None:
    run = make_run()
    run.graph["c"].meta[PLACEMENT] = Placement(False, 3, "string_edge")
    c = summarize(run).host_ops[-1]
    assert (c.reason, c.code, c.message) == ("string_edge", 3, "Const: string_edge")


def test_missing_pass_stats_count_as_zero(make_run: MakeRun) -> None:
    run = make_run()
    run.pipeline.results.clear()
    summary = summarize(run)
    assert (summary.memcpy_edges, summary.memcpy_bytes, summary.casts_inserted) == (0, 0, 0)
    assert summary.fusions == {"matmul_biasadd": 0, "gelu": 0}


def test_host_ops_group_by_reason_largest_first(make_run: MakeRun) -> None:
    run = make_run()
    run.graph["c"].meta[PLACEMENT] = Placement(False, 2, "gray_op", "Const: gray")
    groups = summarize(run).host_ops_by_reason()
    assert [(reason, [op.name for op in ops]) for reason, ops in groups] == [
        ("gray_op", ["s", "c"]), ("not_in_library", ["py"]), ("outside_geop", ["x"]),
    ]  # fmt: skip


def test_geop_members_are_counted_and_lowering_nodes_apart(make_run: MakeRun) -> None:
    """Lowering gives relu a CPU form (a float32 Relu between two casts) inside GeOp1_0: the
    GeOp still has its two members, as its GE graph does, and the three new nodes are apart."""
    run = make_run()
    graph = run.graph
    relu = graph["relu"]
    up = graph.add_node("relu/_tf2npu_f32", "Cast", [graph["mm_orig/_tf2npu_fp16"].output()])
    cpu = graph.add_node("relu/_tf2npu_cpu", "Relu", [up.output()])
    down = graph.add_node("relu/_tf2npu_to_f16", "Cast", [cpu.output()])
    for node in (up, cpu, down):
        node.meta[CLUSTER] = "GeOp1_0"
    graph.add_node("s2", "AsString", [relu.output()])
    supersede(graph, relu, {0: down.output()}, by="lowering", rule="cpu_form")
    summary = summarize(run)
    assert (summary.nodes, summary.device_nodes, summary.host_nodes) == (7, 2, 5)
    assert summary.lowering_nodes == 3
    assert [g.nodes for g in summary.geops] == [2]
    assert summary.nodes == summary.device_nodes + summary.host_nodes

"""The whole pipeline on a BERT-style training graph: placement, precision, fusion, partition.

The graph (``tf2npu.testing.bert_graph``) has a lookup table and a py_func in its input path,
as real BERT pre-processing often has; the engine must keep them on the host with reasons,
partition without cycles, and in ``allow_mix_precision`` run MatMuls in float16 while softmax,
reductions and the loss stay in float32.
"""

from __future__ import annotations

import pytest

from tf2npu.config.options import NpuOptions
from tf2npu.graph.decisions import (
    CLUSTER,
    CLUSTERS,
    PLACEMENT,
    PRECISION,
    SUPERSEDED,
    live_nodes,
)
from tf2npu.graph.engine import EngineRun, run_engine
from tf2npu.graph.ir import Graph

pytestmark = pytest.mark.tf


@pytest.fixture(scope="module")
def bert_def() -> object:
    from tf2npu.testing.bert_graph import build_bert_graph

    return build_bert_graph(layers=2, hidden=64, seq=32).graph_def


def run(graph_def: object, *, lower: bool = True, **values: object) -> EngineRun:
    """The engine over ``graph_def``; ``lower=False`` stops at the decisions (no CPU forms)."""
    graph = Graph.from_graph_def(graph_def)
    disabled = frozenset() if lower else frozenset({"lowering"})
    options = NpuOptions.from_values(values)  # type: ignore[arg-type]
    return run_engine(graph, options, disabled=disabled, verify=True)


def cluster_graph_is_acyclic(graph: Graph) -> bool:
    """Contract every GeOp to one vertex; the result must have no cycle."""

    def vertex(name: str) -> str:
        node = graph[name]
        return str(node.meta.get(CLUSTER, name))

    edges: dict[str, set[str]] = {}
    for node in live_nodes(graph):
        dst = vertex(node.name)
        sources = [ref.node for ref in node.inputs] + list(node.control_inputs)
        for src_name in sources:
            if graph[src_name].op in ("NextIteration", "RefNextIteration"):
                continue
            src = vertex(src_name)
            if src != dst:
                edges.setdefault(src, set()).add(dst)
    state: dict[str, int] = {}

    def visit(v: str) -> bool:
        stack = [(v, iter(sorted(edges.get(v, ()))))]
        state[v] = 1
        while stack:
            top, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[top] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return False
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(edges.get(nxt, ())))))
        return True

    return all(visit(v) for v in list(edges) if v not in state)


@pytest.mark.slow
def test_mixed_compute_keeps_the_input_path_on_the_host_with_reasons(bert_def: object) -> None:
    # The decisions, before lowering gives the float16 _FusedMatMul its CPU form.
    result = run(bert_def, lower=False, mix_compile_mode=True, precision_mode="allow_mix_precision")
    graph = result.graph
    by_op = {
        n.op: n.meta[PLACEMENT]
        for n in graph
        if n.op in ("PyFuncStateless", "HashTableV2", "LookupTableFindV2", "LookupTableImportV2")
    }
    assert set(by_op) == {
        "PyFuncStateless",
        "HashTableV2",
        "LookupTableFindV2",
        "LookupTableImportV2",
    }
    assert not any(p.device for p in by_op.values())
    assert "not in the device op library" in by_op["PyFuncStateless"].message
    assert by_op["LookupTableFindV2"].code == 2
    assert not result.config.diagnostics.of("error")
    clusters = graph.meta[CLUSTERS]
    assert len(clusters) >= 1
    assert cluster_graph_is_acyclic(graph)
    live = {n.name for n in live_nodes(graph)}
    members = [name for c in clusters for name in c.nodes]
    assert len(members) == len(set(members)) and set(members) <= live  # no fetch-only casts
    matmul = graph["bert/layer_0/attention/query/MatMul"]
    assert matmul.meta[PLACEMENT].device
    # The original is superseded by its float16 clone, itself fused with the BiasAdd: the
    # GeOp holds the fused node.
    assert SUPERSEDED in matmul.meta and CLUSTER not in matmul.meta
    fused = [
        n
        for n in live_nodes(graph)
        if n.op == "_FusedMatMul" and any(o.startswith(matmul.name) for o in n.origin)
    ]
    assert [n.op for n in fused] == ["_FusedMatMul"]
    assert CLUSTER in fused[0].meta


@pytest.mark.slow
def test_mix_precision_puts_matmuls_in_fp16_and_the_gray_softmax_follows(bert_def: object) -> None:
    graph = run(bert_def, mix_compile_mode=True, precision_mode="allow_mix_precision").graph
    decided = {n.name: n.meta[PRECISION] for n in graph if PRECISION in n.meta}
    matmuls = [n.name for n in graph if n.op in ("MatMul", "BatchMatMulV2")]
    assert matmuls and all(decided[name].after == "float16" for name in matmuls)
    # Softmax (GE SoftmaxV2) has no precision_reduce flag: gray, it follows the float16 scores.
    softmax = [n.name for n in graph if n.op == "Softmax"]
    assert softmax and all(decided[name].reason.startswith("follows_lowered") for name in softmax)


def test_full_offload_keeps_exactly_one_geop(bert_def: object) -> None:
    result = run(bert_def)
    assert len(result.graph.meta[CLUSTERS]) == 1
    assert cluster_graph_is_acyclic(result.graph)
    host = [n for n in live_nodes(result.graph) if not n.meta[PLACEMENT].device]
    assert {n.op for n in host} >= {"PyFuncStateless"}
    assert set(result.pass_seconds) == {
        "device_strings",
        "placement",
        "precision",
        "fusion",
        "inject_faults",
        "partition",
        "lowering",
    }


@pytest.mark.slow
def test_fusion_still_applies_after_precision_lowered_the_matmuls(bert_def: object) -> None:
    """The cast back that keeps ``MatMul``'s float32 name fetchable must not block fusion."""
    for mode in ("must_keep_origin_dtype", "allow_mix_precision"):
        result = run(bert_def, precision_mode=mode)
        assert result.pipeline.stats["fusion"]["matmul_biasadd"] > 0, mode

"""The literal engine run every report test renders, its decisions set by hand.

x (Placeholder) -> py (PyFunc) -> mm (MatMul) -> relu (Relu) -> s (AsString)
                                 x ----^
mm and relu form GeOp1_0; py is not in the library, s is a gray op in mixed mode; x could run on
the device but no GeOp holds it; mm_orig was superseded by mm (not counted) and carries the
precision decision; c (Const) has no placement at all.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

import pytest

from tf2npu.config.fusion_switch import FusionSwitch
from tf2npu.config.options import NpuOptions
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import (
    CLUSTER,
    CLUSTERS,
    FUSION_INSTANCES,
    PLACEMENT,
    PRECISION,
    Cluster,
    FusionInstance,
    Placement,
    PrecisionDecision,
    supersede,
)
from tf2npu.graph.engine import EngineRun
from tf2npu.graph.ir import Graph
from tf2npu.graph.opinfo import OpLibrary
from tf2npu.graph.passes.infra import PassResult, PipelineResult
from tf2npu.graph.report.summary import GraphSummary, summarize

DEVICE = Placement(True)


def sample_graph(partitioned: bool = True) -> Graph:
    g = Graph()
    x = g.add_node("x", "Placeholder")
    py = g.add_node("py", "PyFunc", [x.output()])
    orig = g.add_node("mm_orig", "MatMul", [py.output(), x.output()])
    mm = g.add_node(g.new_name("mm_orig", "fp16"), "MatMul", [py.output(), x.output()],
                    origin=["mm_orig"])  # fmt: skip
    relu = g.add_node("relu", "Relu", [orig.output()])
    g.add_node("s", "AsString", [relu.output()])
    g.add_node("c", "Const")
    supersede(g, orig, {0: mm.output()}, by="precision", rule="allow_list")
    x.meta[PLACEMENT] = DEVICE
    py.meta[PLACEMENT] = Placement(
        False, 1, "not_in_library", "PyFunc: not in the device op library"
    )
    orig.meta[PLACEMENT] = DEVICE
    orig.meta[PRECISION] = PrecisionDecision("float32", "float16", "allow_list")
    mm.meta[PLACEMENT] = DEVICE
    relu.meta[PLACEMENT] = DEVICE
    relu.meta[PRECISION] = PrecisionDecision("float32", "float32", "deny_list")
    g["s"].meta[PLACEMENT] = Placement(
        False, 2, "gray_op", "AsString: gray op, host in mixed compute"
    )
    g.meta[FUSION_INSTANCES] = [
        FusionInstance("matmul_biasadd", "relu", ("relu", "mm_orig"), "relu/_tf2npu_fused")
    ]
    if partitioned:
        mm.meta[CLUSTER] = relu.meta[CLUSTER] = "GeOp1_0"
        g.meta[CLUSTERS] = [
            Cluster("GeOp1_0", (mm.name, "relu"), ("py", "x"), ("relu",)),
        ]
    return g


def sample_run(partitioned: bool = True) -> EngineRun:
    graph = sample_graph(partitioned)
    options = NpuOptions.from_values(
        {"mix_compile_mode": True, "precision_mode": "allow_mix_precision",
         "lower_functional_ops": True}
    )  # fmt: skip
    switch = FusionSwitch(
        MappingProxyType({"matmul_biasadd": True, "conv_bn": False, "gelu": True}),
        frozenset({"conv_bn"}),
    )
    cfg = EngineConfig(options, OpLibrary({}), {}, switch)
    cfg.diagnostics.error(
        "table_split", "the lookup table is split between host and device", node="s",
        fix="keep the table ops together (mix_compile_mode)",
    )  # fmt: skip
    cfg.diagnostics.warning("cast_heavy", "many casts on the loss path")
    pipeline = PipelineResult(
        graph,
        results=[
            ("precision", PassResult(graph, True, {"casts_inserted": 2})),
            ("fusion", PassResult(graph, True, {"matmul_biasadd": 1})),
            ("partition", PassResult(graph, True, {"memcpy_edges": 3, "memcpy_bytes": 4096})),
        ],
        skipped=[("lowering", "disabled by the pass context")],
    )
    seconds = {"placement": 0.25, "precision": 0.125, "partition": 0.5}
    return EngineRun(graph, cfg, pipeline, seconds)


@pytest.fixture
def make_run() -> Callable[..., EngineRun]:
    """``make_run(partitioned=True)``: a fresh copy of the sample run."""
    return sample_run


@pytest.fixture
def run() -> EngineRun:
    return sample_run()


@pytest.fixture
def summary(run: EngineRun) -> GraphSummary:
    return summarize(run, "model.pbtxt")

"""The fusion pass: registration, stats, function bodies, fixpoint order, linear time."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tf2npu.config.fusion_switch import FusionSwitch
from tf2npu.config.options import NpuOptions
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import (
    FUSED_BY,
    FUSION_INSTANCES,
    FUSIONS_OFF,
    PLACEMENT,
    SUPERSEDED,
    Placement,
    replacement_of,
)
from tf2npu.graph.engine import PASS_MODULES
from tf2npu.graph.fusion import RULES, known_rules
from tf2npu.graph.ir import Graph, TensorRef
from tf2npu.graph.lint import Signature
from tf2npu.graph.passes import PASSES, PassContext
from tf2npu.graph.passes.fusion import FusionPass


def config(switch: str | None = None) -> EngineConfig:
    cfg = EngineConfig.build(NpuOptions.from_values({}))
    if switch is not None:
        cfg.fusion = FusionSwitch.parse(switch, known_rules())
    return cfg


def on_device(graph: Graph) -> Graph:
    for g in graph.walk():
        for node in g:
            node.meta[PLACEMENT] = Placement(device=True)
    return graph


def test_registered_after_placement_and_in_the_engine_modules() -> None:
    assert "tf2npu.graph.passes.fusion" in PASS_MODULES
    assert PASSES["fusion"] is FusionPass
    assert FusionPass.info.requires == ("placement",)


def test_every_rule_has_a_snake_case_name_an_alias_a_docstring_and_a_test_file() -> None:
    from pathlib import Path

    tests = Path(__file__).parents[1] / "fusion" / "rules"
    known_rules()
    assert len(RULES) >= 9
    for name, rule in RULES.items():
        assert name == rule.name and name.islower()
        assert rule.aliases and rule.description and rule.__doc__
        module = rule.__module__.rsplit(".", 1)[-1]
        assert (tests / f"test_{module}.py").exists(), f"no test file for {name}"


def test_a_graph_without_patterns_is_unchanged_and_counts_zero() -> None:
    g = on_device(Graph())
    g.add_node("x", "Placeholder")
    g.add_node("y", "Relu", [TensorRef("x")])
    result = FusionPass().run(g, PassContext(config=config()))
    assert not result.changed
    assert result.stats == dict.fromkeys(RULES, 0)


@pytest.mark.tf
def test_function_bodies_are_fused_too() -> None:
    import tensorflow as tf

    tf_graph = tf.Graph()
    with tf_graph.as_default():
        w = tf.constant(np.eye(3, dtype=np.float32))

        @tf.function
        def dense(x: tf.Tensor) -> tf.Tensor:
            return tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), tf.constant([1.0, -1.0, 0.5])))

        x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        tf.identity(dense(x), name="out")
    gd = tf_graph.as_graph_def()
    graph = on_device(Graph.from_graph_def(gd))
    baseline = Signature.of(graph)
    result = FusionPass().run(graph, PassContext(config=config()))
    graph.lint(baseline)
    assert result.stats["matmul_biasadd"] == 2
    [body] = [f for f in graph.functions.values() if any(n.op == "MatMul" for n in f)]
    [fused] = [n for n in body if n.op == "_FusedMatMul" and SUPERSEDED not in n.meta]
    assert [s.decode() for s in fused.attrs["fused_ops"].list.s] == ["BiasAdd", "Relu"]
    assert fused.meta[FUSED_BY] == "matmul_biasadd"  # the graph JSON names its pass
    assert [r.output_arg for n in body.consumers(fused) for r in n.inputs] == ["product"]

    feed = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    outputs = []
    for graph_def in (gd, graph.to_graph_def()):
        run_graph = tf.Graph()
        with run_graph.as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=run_graph) as session:
            outputs.append(session.run("out:0", {"x:0": feed}))
    np.testing.assert_array_equal(outputs[1], outputs[0])


@pytest.mark.tf
def test_switched_off_rule_reports_how_often_it_would_have_fused() -> None:
    import tensorflow as tf

    tf_graph = tf.Graph()
    with tf_graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        for i in range(3):
            tf.nn.bias_add(tf.matmul(x, tf.eye(3)), tf.zeros([3]), name=f"bias{i}")
    graph = on_device(Graph.from_graph_def(tf_graph.as_graph_def()))
    cfg = config('{"Switch": {"GraphFusion": {"ALL": "off"}}}')
    result = FusionPass().run(graph, PassContext(config=cfg))
    assert result.stats["matmul_biasadd"] == 0
    [info] = cfg.diagnostics.items
    assert (info.severity, info.code, info.node) == ("info", "fusion_rule_switched_off", "bias0")
    assert "3 times" in info.message and "MatMulBiasAddFusionPass" in info.message


@pytest.mark.tf
@pytest.mark.slow
def test_every_pattern_fuses_on_a_ten_thousand_node_graph() -> None:
    """~10k nodes of dense layers, gelu and layer norms: each of the 990 patterns fuses.

    Speed is measured by benchmarks/graph_passes.py (docs/benchmarks.md), not here."""
    import tensorflow as tf

    tf_graph = tf.Graph()
    with tf_graph.as_default():
        h = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
        for _ in range(330):
            h = tf.nn.bias_add(tf.matmul(h, tf.eye(8)), tf.zeros([8]))
            h = h * 0.5 * (1.0 + tf.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * tf.pow(h, 3))))
            mean, var = tf.compat.v1.nn.moments(h, [-1], keep_dims=True)
            h = tf.nn.batch_normalization(h, mean, var, tf.zeros([8]), tf.ones([8]), 1e-12)
    graph = on_device(Graph.from_graph_def(tf_graph.as_graph_def()))
    assert len(graph) >= 10_000
    result = FusionPass().run(graph, PassContext(config=config()))
    assert result.stats["matmul_biasadd"] == 330
    assert result.stats["gelu_tanh"] == 330
    assert result.stats["layer_norm"] == 330
    last = replacement_of(graph, TensorRef(graph.nodes[-1].name))
    assert graph[last.node].op in {"LayerNorm", "AddV2"}


@pytest.mark.tf
@pytest.mark.slow
def test_in_the_default_pipeline_on_a_bert_training_graph() -> None:
    """Placement and precision run first; lint after every pass; dense layers fuse."""
    from tf2npu.graph.engine import run_engine
    from tf2npu.testing.bert_graph import build_bert_graph

    built = build_bert_graph(layers=1, hidden=32, heads=2, seq=8)
    run = run_engine(Graph.from_graph_def(built.graph_def), NpuOptions.from_values({}), verify=True)
    stats = run.pipeline.stats["fusion"]
    assert stats["matmul_biasadd"] > 0
    # a training graph: gelu and layer norm fuse with their gradients (GeluGrad, LayerNormGrad:
    # the embeddings' layer norm and the layer's two); softmax_cross_entropy has no device
    # backward rule, and its gradient reads its interior
    assert (stats["gelu_tanh"], stats["layer_norm"]) == (1, 3)
    assert stats["softmax_cross_entropy"] == 0
    # lowering made each NPU op a call of its CPU function, <Op>_<DT>_<digest>__tf2npu
    ops = Counter(n.op.split("_DT_")[0] for g in run.graph.walk() for n in g)
    assert ops["GeluGrad"] == 1 and ops["LayerNormGrad"] == 3


def _three_dense_layers() -> Graph:
    """x -> dense_0 -> dense_1 -> dense_2: three MatMul + BiasAdd, no activation."""
    import tensorflow as tf

    tf_graph = tf.Graph()
    with tf_graph.as_default():
        y = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        for i in range(3):
            w = tf.constant(np.eye(3, dtype=np.float32) * (i + 1), name=f"dense_{i}/w")
            b = tf.constant([1.0, -1.0, 0.5], name=f"dense_{i}/b")
            y = tf.nn.bias_add(tf.matmul(y, w, name=f"dense_{i}/MatMul"), b, name=f"dense_{i}/add")
        tf.identity(y, name="out")
    return on_device(Graph.from_graph_def(tf_graph.as_graph_def()))


def _override(text: str) -> EngineConfig:
    from tf2npu.config.jsonfile import parse_json
    from tf2npu.config.overrides import FusionOverride

    cfg = config()
    override = FusionOverride.from_json(parse_json(text, "test"), known_rules(), "off.json")
    cfg.fusion = cfg.fusion.with_override(override)
    return cfg


@pytest.mark.tf
def test_every_instance_is_recorded_with_its_root_and_member_nodes() -> None:
    graph = _three_dense_layers()
    FusionPass().run(graph, PassContext(config=config()))
    instances = graph.meta[FUSION_INSTANCES]
    assert [(i.rule, i.root, i.nodes) for i in instances] == [
        ("matmul_biasadd", f"dense_{n}/add", (f"dense_{n}/add", f"dense_{n}/MatMul"))
        for n in range(3)
    ]
    for instance in instances:
        assert graph[instance.fused].meta[FUSED_BY] == "matmul_biasadd"
        assert replacement_of(graph, TensorRef(instance.root)).node == instance.fused
    assert graph.meta[FUSIONS_OFF] == []


@pytest.mark.tf
def test_the_instance_switch_turns_off_exactly_one_instance() -> None:
    graph = _three_dense_layers()
    cfg = _override('{"off": [{"rule": "matmul_biasadd", "root": "dense_1/add"}]}')
    result = FusionPass().run(graph, PassContext(config=cfg))
    assert result.stats["matmul_biasadd"] == 2
    assert [i.root for i in graph.meta[FUSION_INSTANCES]] == ["dense_0/add", "dense_2/add"]
    assert [i.root for i in graph.meta[FUSIONS_OFF]] == ["dense_1/add"]
    assert SUPERSEDED not in graph["dense_1/add"].meta
    assert SUPERSEDED in graph["dense_0/add"].meta and SUPERSEDED in graph["dense_2/add"].meta
    (note,) = [d for d in cfg.diagnostics.items if d.code == "fusion_instance_switched_off"]
    assert note.node == "dense_1/add" and "off.json" in note.message


@pytest.mark.tf
def test_an_entry_without_root_turns_the_whole_rule_off() -> None:
    graph = _three_dense_layers()
    cfg = _override('{"off": [{"rule": "MatMulBiasAddFusionPass"}]}')
    result = FusionPass().run(graph, PassContext(config=cfg))
    assert result.stats["matmul_biasadd"] == 0 and not result.changed
    assert len(graph.meta[FUSIONS_OFF]) == 3


@pytest.mark.tf
def test_a_root_that_is_a_float16_clone_is_named_by_its_client_node() -> None:
    from tf2npu.graph.engine import run_engine

    graph = _three_dense_layers()
    options = NpuOptions.from_values({"precision_mode": "allow_mix_precision"})
    run = run_engine(graph, options)
    roots = [i.root for i in run.graph.meta[FUSION_INSTANCES]]
    assert roots == ["dense_0/add", "dense_1/add", "dense_2/add"]

"""Execution equivalence: a TF1 MLP training step before and after the precision pass.

The graph is built with ``tf.compat.v1`` in graph mode, run through ``device_strings``,
``placement`` and ``precision``, exported with ``to_graph_def`` and imported into a fresh
``tf.Graph``. Both graphs run one training step on the same feed; originals are fetched through
:func:`~tf2npu.graph.decisions.replacement_of`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tf2npu.config.options import NpuOptions
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import PRECISION, SUPERSEDED, replacement_of
from tf2npu.graph.engine import load_passes
from tf2npu.graph.ir import Graph, TensorRef
from tf2npu.graph.passes.infra import PassContext, PassManager

pytestmark = [pytest.mark.tf, pytest.mark.slow]
tf = pytest.importorskip("tensorflow")

FETCHES = ("loss", "w1", "w2")


def mlp() -> tuple[Any, dict[str, np.ndarray]]:
    """x[8,4] -> dense(16) relu -> dense(3) -> softmax cross entropy -> mean; SGD step."""
    rng = np.random.default_rng(0)
    graph = tf.Graph()
    with graph.as_default():
        v1 = tf.compat.v1
        x = v1.placeholder(tf.float32, [8, 4], name="x")
        y = v1.placeholder(tf.float32, [8, 3], name="y")
        w1 = v1.Variable(rng.normal(size=(4, 16)).astype(np.float32), name="w1", use_resource=False)
        b1 = v1.Variable(np.zeros(16, np.float32), name="b1", use_resource=False)
        w2 = v1.Variable(rng.normal(size=(16, 3)).astype(np.float32), name="w2", use_resource=False)
        b2 = v1.Variable(np.zeros(3, np.float32), name="b2", use_resource=False)
        hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1))
        logits = tf.nn.bias_add(tf.matmul(hidden, w2), b2)
        xent = tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits)
        tf.reduce_mean(xent, name="loss")
        loss = graph.get_tensor_by_name("loss:0")
        v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        v1.global_variables_initializer()
    feed = {
        "x": rng.normal(size=(8, 4)).astype(np.float32),
        "y": np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)],
    }
    return graph.as_graph_def(), feed


def step(graph_def: Any, feed: dict[str, np.ndarray], fetch: dict[str, str]) -> dict[str, Any]:
    """Initialise, read ``fetch`` (loss before the update), train once, read it again."""
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=graph) as sess:
        sess.run("init")
        feeds = {f"{k}:0": v for k, v in feed.items()}
        before = sess.run({k: v for k, v in fetch.items()}, feeds)
        sess.run("train", feeds)
        after = sess.run({k: v for k, v in fetch.items()}, feeds)
    return {"before": before, "after": after}


def engine(graph_def: Any, mode: str) -> tuple[Graph, dict[str, str]]:
    load_passes()
    graph = Graph.from_graph_def(graph_def)
    cfg = EngineConfig.build(NpuOptions.from_values({"precision_mode": mode}))
    manager = PassManager.from_names(("device_strings", "placement", "precision"))
    manager.run(graph, PassContext(config=cfg, verify=True))
    fetch = {name: f"{replacement_of(graph, TensorRef(name))}:0" for name in FETCHES}
    return graph, fetch


def original(graph_def: Any, feed: dict[str, np.ndarray]) -> dict[str, Any]:
    return step(graph_def, feed, {name: f"{name}:0" for name in FETCHES})


def test_must_keep_origin_dtype_runs_bit_identically() -> None:
    graph_def, feed = mlp()
    graph, fetch = engine(graph_def, "must_keep_origin_dtype")
    assert not any(SUPERSEDED in n.meta for n in graph)
    want, got = original(graph_def, feed), step(graph.to_graph_def(), feed, fetch)
    for when in ("before", "after"):
        for name in FETCHES:
            np.testing.assert_array_equal(got[when][name], want[when][name])


def test_allow_mix_precision_lowers_matmuls_and_keeps_the_loss_close() -> None:
    graph_def, feed = mlp()
    graph, fetch = engine(graph_def, "allow_mix_precision")
    after = {n.name: n.meta[PRECISION].after for n in graph if PRECISION in n.meta}
    by_op: dict[str, set[str]] = {}
    for node in graph:
        if node.name in after:
            by_op.setdefault(node.op, set()).add(after[node.name])
    assert by_op["MatMul"] == {"float16"}
    # Gray on Ascend (no precision_reduce flag): they follow the float16 logits.
    for op in ("BiasAdd", "SoftmaxCrossEntropyWithLogits", "Mean"):
        assert by_op[op] == {"float16"}, op
    assert by_op["BiasAddGrad"] == {"float32"}  # precision_reduce false: black
    want, got = original(graph_def, feed), step(graph.to_graph_def(), feed, fetch)
    for when in ("before", "after"):
        np.testing.assert_allclose(got[when]["loss"], want[when]["loss"], rtol=1e-2)
        for name in ("w1", "w2"):
            np.testing.assert_allclose(got[when][name], want[when][name], rtol=1e-2, atol=1e-2)

"""extract_subgraph: a GeOp's nodes as a standalone graph, boundary inputs as placeholders."""

from __future__ import annotations

import pytest

from tf2npu.errors import InternalError
from tf2npu.graph.decisions import CLUSTERS, PLACEMENT, Cluster, Placement
from tf2npu.graph.ir import Graph, TensorRef
from tf2npu.graph.partition import extract_subgraph, partition_graph


def build(
    spec: list[tuple[str, str, list[str], bool]], control: dict[str, str] | None = None
) -> Graph:
    g = Graph()
    for name, op, inputs, device in spec:
        node = g.add_node(name, op, [TensorRef.parse(i) for i in inputs])
        node.meta[PLACEMENT] = Placement(device)
    for node, producer in (control or {}).items():
        g.add_control_input(g[node], producer)
    return g


def test_boundary_inputs_become_placeholders_and_copied_consts_come_along() -> None:
    g = build(
        [
            ("k", "Const", [], True),
            ("a", "Split", ["k"], True),
            ("h", "PyFunc", ["a:1"], False),
            ("b", "AddV2", ["h", "k", "a:1"], True),
            ("c", "Relu", ["b"], True),
        ],
        control={"c": "h"},
    )
    partition_graph(g, mixed=True)
    second: Cluster = g.meta[CLUSTERS][1]
    assert second == Cluster("GeOp1_1", ("b", "c"), ("a:1", "h"), ())
    sub = extract_subgraph(g, second)
    assert [(n.name, n.op, [str(r) for r in n.inputs], list(n.control_inputs)) for n in sub] == [
        ("h_0_arg", "Placeholder", [], []),
        ("k", "Const", [], []),
        ("a_1_arg", "Placeholder", [], []),
        ("b", "AddV2", ["h_0_arg", "k", "a_1_arg"], []),
        ("c", "Relu", ["b"], []),  # the control edge from the host is the GeOp node's
    ]
    assert sub.functions == g.functions


def test_a_placeholder_name_never_takes_a_name_of_the_graph() -> None:
    g = build([("h", "PyFunc", [], False), ("h_0_arg", "Relu", ["h"], True)])
    partition_graph(g, mixed=True)
    sub = extract_subgraph(g, g.meta[CLUSTERS][0])
    assert [n.name for n in sub] == ["h_0_arg_1", "h_0_arg"]


def test_a_cluster_naming_a_missing_node_is_an_internal_error() -> None:
    with pytest.raises(InternalError, match="names node 'ghost'"):
        extract_subgraph(Graph(), Cluster("GeOp1_0", ("ghost",), (), ()))


@pytest.mark.tf
def test_a_tf_subgraph_gets_typed_placeholders_and_imports_into_tensorflow() -> None:
    import numpy as np
    import tensorflow as tf

    with tf.Graph().as_default() as tfg:
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        a = tf.nn.relu(x, name="a")
        h = tf.compat.v1.py_func(lambda v: v, [a], tf.float32, name="h")
        tf.multiply(h, a, name="out")
    g = Graph.from_graph_def(tfg.as_graph_def(add_shapes=True))
    for node in g:
        node.meta[PLACEMENT] = Placement(node.op not in {"Placeholder", "PyFunc"})
    plan = partition_graph(g, mixed=True)
    sub = extract_subgraph(g, plan.clusters[1])
    assert [n.op for n in sub] == ["Placeholder", "Placeholder", "Mul"]
    arg = sub["a_0_arg"]
    assert arg.attrs["dtype"].type == 1
    assert [d.size for d in arg.attrs["shape"].shape.dim] == [-1, 3]
    with tf.Graph().as_default():
        tf.import_graph_def(sub.to_graph_def(), name="")
        with tf.compat.v1.Session() as sess:
            ones = np.ones((2, 3), np.float32)
            out = sess.run("out:0", {"h_0_arg:0": ones, "a_0_arg:0": 2 * ones})
    assert out.tolist() == [[2.0] * 3] * 2

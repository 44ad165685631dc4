"""The tensors crossing GeOp boundaries, and the user's ops behind pass-made names."""

from __future__ import annotations

import pytest
from tests.graph.literal import add

from tf2npu.graph.decisions import CLUSTER, Cluster
from tf2npu.graph.ir import Graph
from tf2npu.graph.report.crossings import Crossing, crossings, sides, user_names, user_ops

pytestmark = pytest.mark.tf


def _chain() -> Graph:
    g = Graph()
    g.add_node("dense/MatMul", "MatMul")
    g.add_node("dense/Relu", "Relu")
    clone = g.add_node("dense/Relu/_tf2npu_fp16", "Relu", origin=["dense/Relu"])
    g.add_node("dense/Relu/_tf2npu_fp16/_tf2npu_fused_matmul", "_FusedMatMul",
               origin=[clone.name, "dense/MatMul", clone.name])  # fmt: skip
    return g


def test_a_chain_of_passes_resolves_to_the_users_ops() -> None:
    g = _chain()
    assert user_ops(g, "dense/Relu/_tf2npu_fp16/_tf2npu_fused_matmul") == (
        "dense/Relu",
        "dense/MatMul",
    )
    assert user_ops(g, "dense/MatMul") == ("dense/MatMul",)


def test_a_pass_made_name_without_a_node_stands_for_its_stem() -> None:
    assert user_ops(Graph(), "loss/_tf2npu_cast/_tf2npu_f32") == ("loss",)


def test_origins_that_loop_end() -> None:
    g = Graph()
    g.add_node("a/_tf2npu_x", "Identity", origin=["a/_tf2npu_y"])
    g.add_node("a/_tf2npu_y", "Identity", origin=["a/_tf2npu_x", "a"])
    assert user_ops(g, "a/_tf2npu_x") == ("a",)


def test_user_names_maps_internal_nodes_and_tensors_only() -> None:
    g = _chain()
    found = user_names(g, ["dense/MatMul", "dense/Relu/_tf2npu_fp16:0", "dense/Relu/_tf2npu_fp16"])
    assert found == {"dense/Relu/_tf2npu_fp16": ("dense/Relu",)}


def test_each_crossing_names_its_ends_dtype_and_shape() -> None:
    import tensorflow as tf
    from tensorflow.core.framework import attr_value_pb2

    g = Graph()
    x = add(g, "x", "Placeholder", dtype=tf.float32)
    x.attrs["shape"] = attr_value_pb2.AttrValue(shape=tf.TensorShape([64, 128]).as_proto())
    add(g, "mm", "MatMul", "x", "x", T=tf.float32)
    add(g, "s", "AsString", "mm", T=tf.float32)
    add(g, "p", "Identity", "mm", T=tf.float32)
    g["mm"].meta[CLUSTER] = "GeOp1_0"
    cluster = Cluster("GeOp1_0", ("mm",), ("x",), ("mm",))
    add(g, "gone", "Identity", "mm", T=tf.float32)  # superseded, say: no side, no crossing
    side = sides(g, {"x": "feed", "s": "gray_op", "p": "outside_geop"})
    assert crossings(g, [cluster], side) == [
        Crossing("x", "feed", "GeOp1_0", "DT_FLOAT", "64,128"),
        Crossing("mm", "GeOp1_0", "gray_op, outside_geop", "DT_FLOAT", ""),
    ]

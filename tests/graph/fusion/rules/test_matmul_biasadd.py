"""matmul_biasadd: MatMul + BiasAdd [+ Relu] → _FusedMatMul, and the cases it must refuse."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.decisions import SUPERSEDED, replacement_of
from tf2npu.graph.ir import TensorRef

pytestmark = pytest.mark.tf

RULE = "matmul_biasadd"


def dense(*, relu: bool = True, extra: str = "", cast: bool = False) -> None:
    import tensorflow as tf

    x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
    w = tf.constant(np.random.default_rng(1).standard_normal((8, 5)).astype(np.float32), name="w")
    b = tf.constant(np.arange(5, dtype=np.float32) - 2.0, name="b")
    y = tf.matmul(x, w, name="matmul")
    if cast:
        y = tf.cast(tf.cast(y, tf.float16), tf.float32, name="back")
    if extra == "matmul":
        tf.identity(y, name="side")
    y = tf.nn.bias_add(y, b, name="bias")
    if extra == "bias":
        tf.identity(y, name="side")
    if relu:
        tf.nn.relu(y, name="out")


def test_matmul_bias_relu_becomes_one_fused_matmul(fx, rand) -> None:
    gd = fx.graph_def(dense)
    out = fx.fuse(gd)
    assert out.stats[RULE] == 2  # BiasAdd into the MatMul, then Relu into that node
    fused = out.graph[replacement_of(out.graph, TensorRef("out")).node]
    assert fused.op == "_FusedMatMul"
    assert [s.decode() for s in fused.attrs["fused_ops"].list.s] == ["BiasAdd", "Relu"]
    assert fused.attrs["num_args"].i == 1
    assert set(fused.origin) == {"matmul", "bias", "out"}
    assert all(SUPERSEDED in out.graph[n].meta for n in ("matmul", "bias", "out"))
    before, after = fx.compare(gd, out, "out", {"x": rand(4, 8)})
    np.testing.assert_array_equal(after, before)


def test_without_relu_fuses_the_bias_only(fx, rand) -> None:
    gd = fx.graph_def(lambda: dense(relu=False))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    fused = out.graph[replacement_of(out.graph, TensorRef("bias")).node]
    assert [s.decode() for s in fused.attrs["fused_ops"].list.s] == ["BiasAdd"]
    before, after = fx.compare(gd, out, "bias", {"x": rand(4, 8)})
    np.testing.assert_array_equal(after, before)


def test_a_second_reader_of_the_matmul_blocks_it(fx) -> None:
    out = fx.fuse(fx.graph_def(lambda: dense(extra="matmul")))
    assert out.stats[RULE] == 0
    assert SUPERSEDED not in out.graph["matmul"].meta


def test_a_second_reader_of_the_bias_add_stops_before_the_relu(fx) -> None:
    out = fx.fuse(fx.graph_def(lambda: dense(extra="bias")))
    assert out.stats[RULE] == 1
    assert SUPERSEDED not in out.graph["out"].meta


def test_a_cast_between_matmul_and_bias_breaks_the_pattern(fx) -> None:
    assert fx.fuse(fx.graph_def(lambda: dense(cast=True))).stats[RULE] == 0


def test_a_host_node_in_the_pattern_blocks_it(fx) -> None:
    out = fx.fuse(fx.graph_def(dense), host={"matmul"})
    assert out.stats[RULE] == 0


@pytest.mark.parametrize("key", [RULE, "MatMulBiasAddFusionPass"])
def test_switch_file_turns_it_off_by_name_or_alias(fx, key: str) -> None:
    out = fx.fuse(fx.graph_def(dense), switch=fx.switch_off(key))
    assert out.stats[RULE] == 0
    [info] = [d for d in out.diagnostics.items if d.code == "fusion_rule_switched_off"]
    assert info.severity == "info" and info.node == "bias" and "once" in info.message

"""conv2d_biasadd: Conv2D + BiasAdd [+ Relu|Relu6] → _FusedConv2D, and what it refuses."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.decisions import SUPERSEDED, replacement_of
from tf2npu.graph.ir import TensorRef

pytestmark = pytest.mark.tf

RULE = "conv2d_biasadd"


def conv(*, act: str = "relu6", extra: bool = False, cast: bool = False) -> None:
    import tensorflow as tf

    x = tf.compat.v1.placeholder(tf.float32, [2, 6, 6, 3], name="x")
    f = tf.constant(np.random.default_rng(2).standard_normal((3, 3, 3, 4)).astype(np.float32))
    b = tf.constant(np.linspace(-1, 1, 4, dtype=np.float32), name="b")
    y = tf.nn.conv2d(x, f, strides=[1, 1, 1, 1], padding="SAME", name="conv")
    if extra:
        tf.identity(y, name="side")
    if cast:
        y = tf.cast(tf.cast(y, tf.float16), tf.float32, name="back")
    y = tf.nn.bias_add(y, b, name="bias")
    if act == "relu6":
        tf.nn.relu6(y, name="out")
    elif act == "relu":
        tf.nn.relu(y, name="out")


@pytest.mark.parametrize(
    ("act", "root", "ops", "count"),
    [
        ("relu6", "out", ["BiasAdd", "Relu6"], 2),
        ("relu", "out", ["BiasAdd", "Relu"], 2),
        ("", "bias", ["BiasAdd"], 1),
    ],
)
def test_conv_bias_activation_becomes_one_fused_conv(fx, rand, act, root, ops, count) -> None:
    gd = fx.graph_def(lambda: conv(act=act))
    out = fx.fuse(gd)
    assert out.stats[RULE] == count
    fused = out.graph[replacement_of(out.graph, TensorRef(root)).node]
    assert fused.op == "_FusedConv2D"
    assert [s.decode() for s in fused.attrs["fused_ops"].list.s] == ops
    assert fused.attrs["padding"].s == b"SAME"
    assert all(SUPERSEDED in out.graph[n].meta for n in ("conv", "bias"))
    before, after = fx.compare(gd, out, root, {"x": rand(2, 6, 6, 3)})
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def test_a_second_reader_of_the_conv_blocks_it(fx) -> None:
    out = fx.fuse(fx.graph_def(lambda: conv(extra=True)))
    assert out.stats[RULE] == 0


def test_a_cast_between_breaks_the_pattern(fx) -> None:
    assert fx.fuse(fx.graph_def(lambda: conv(cast=True))).stats[RULE] == 0


def test_a_host_node_blocks_it(fx) -> None:
    assert fx.fuse(fx.graph_def(conv), host={"bias"}).stats[RULE] == 0


def test_a_host_activation_keeps_the_bias_fusion_only(fx) -> None:
    out = fx.fuse(fx.graph_def(conv), host={"out"})
    assert out.stats[RULE] == 1
    assert SUPERSEDED not in out.graph["out"].meta


@pytest.mark.parametrize("key", [RULE, "AABiasaddConvFusion"])
def test_switch_file_turns_it_off_by_name_or_alias(fx, key: str) -> None:
    out = fx.fuse(fx.graph_def(conv), switch=fx.switch_off(key))
    assert out.stats[RULE] == 0
    assert [d.node for d in out.diagnostics.items] == ["bias"]

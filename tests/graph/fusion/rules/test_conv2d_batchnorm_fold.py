"""conv2d_batchnorm_fold: Conv2D + inference FusedBatchNorm [+ Relu] → _FusedConv2D."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.decisions import SUPERSEDED, replacement_of
from tf2npu.graph.ir import TensorRef

pytestmark = pytest.mark.tf

RULE = "conv2d_batchnorm_fold"


def conv_bn(*, training: bool = False, relu: bool = True, stats_read: bool = False) -> None:
    import tensorflow as tf

    rng = np.random.default_rng(3)
    x = tf.compat.v1.placeholder(tf.float32, [2, 5, 5, 3], name="x")
    f = tf.constant(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))
    scale, offset = (tf.constant(rng.standard_normal(4).astype(np.float32)) for _ in range(2))
    mean = tf.constant(rng.standard_normal(4).astype(np.float32))
    var = tf.constant(rng.uniform(0.5, 2.0, 4).astype(np.float32))
    y = tf.nn.conv2d(x, f, strides=[1, 1, 1, 1], padding="VALID", name="conv")
    if training:
        bn = tf.compat.v1.nn.fused_batch_norm(
            y, scale, offset, epsilon=1e-3, is_training=True, name="bn"
        )
    else:
        bn = tf.compat.v1.nn.fused_batch_norm(
            y, scale, offset, mean, var, epsilon=1e-3, is_training=False, name="bn"
        )
    if stats_read:
        tf.identity(bn[1], name="side")
    if relu:
        tf.nn.relu(bn[0], name="out")


def test_inference_batch_norm_and_relu_fold_into_the_conv(fx, rand) -> None:
    gd = fx.graph_def(conv_bn)
    out = fx.fuse(gd)
    assert out.stats[RULE] == 2
    fused = out.graph[replacement_of(out.graph, TensorRef("out")).node]
    assert fused.op == "_FusedConv2D"
    assert [s.decode() for s in fused.attrs["fused_ops"].list.s] == ["FusedBatchNorm", "Relu"]
    assert fused.attrs["num_args"].i == 4
    assert fused.attrs["epsilon"].f == pytest.approx(1e-3)
    assert all(SUPERSEDED in out.graph[n].meta for n in ("conv", "bn", "out"))
    before, after = fx.compare(gd, out, "out", {"x": rand(2, 5, 5, 3)})
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def test_without_relu(fx, rand) -> None:
    gd = fx.graph_def(lambda: conv_bn(relu=False))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    before, after = fx.compare(gd, out, "bn", {"x": rand(2, 5, 5, 3)})
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def test_a_training_batch_norm_is_never_folded(fx) -> None:
    assert fx.fuse(fx.graph_def(lambda: conv_bn(training=True))).stats[RULE] == 0


def test_a_reader_of_the_batch_statistics_blocks_it(fx) -> None:
    out = fx.fuse(fx.graph_def(lambda: conv_bn(stats_read=True)))
    assert out.stats[RULE] == 0
    assert SUPERSEDED not in out.graph["bn"].meta


def test_a_host_node_blocks_it(fx) -> None:
    assert fx.fuse(fx.graph_def(conv_bn), host={"conv"}).stats[RULE] == 0


@pytest.mark.parametrize("key", [RULE, "ConvBatchnormFusionPass"])
def test_switch_file_turns_it_off_by_name_or_alias(fx, key: str) -> None:
    out = fx.fuse(fx.graph_def(conv_bn), switch=fx.switch_off(key))
    assert out.stats[RULE] == 0
    assert [d.node for d in out.diagnostics.items] == ["bn"]

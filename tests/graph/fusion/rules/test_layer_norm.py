"""layer_norm: the moments + batch_normalization subgraph → the LayerNorm NPU op."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.decisions import SUPERSEDED, replacement_of
from tf2npu.graph.ir import TensorRef

pytestmark = pytest.mark.tf

RULE = "layer_norm"


def layer_norm(*, axes: tuple[int, ...] = (-1,), extra: bool = False, keep: bool = True,
               cast: bool = False) -> None:
    """What tf.contrib.layers.layer_norm (BERT's layer_norm) builds, begin_norm_axis=-1."""
    import tensorflow as tf

    rng = np.random.default_rng(6)
    x = tf.compat.v1.placeholder(tf.float32, [2, 3, 8], name="x")
    params = [8] if axes == (-1,) else [3, 8]
    gamma = tf.constant(rng.standard_normal(params).astype(np.float32), name="gamma")
    beta = tf.constant(rng.standard_normal(params).astype(np.float32), name="beta")
    mean, variance = tf.compat.v1.nn.moments(x, list(axes), keep_dims=keep, name="moments")
    if cast:
        variance = tf.cast(tf.cast(variance, tf.float16), tf.float32)
    y = tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-12, name="ln")
    tf.identity(y, name="out")
    if extra:
        tf.identity(tf.compat.v1.get_default_graph().get_tensor_by_name("ln/Rsqrt:0"),
                    name="side")


def test_layer_norm_subgraph_becomes_one_layer_norm(fx, rand) -> None:
    gd = fx.graph_def(layer_norm)
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    ref = replacement_of(out.graph, TensorRef("ln/add_1"))
    node = out.graph[ref.node]
    assert node.op == "LayerNorm"
    assert [str(r) for r in node.inputs] == ["x", "gamma", "beta"]
    assert node.attrs["begin_norm_axis"].i == -1
    assert node.attrs["epsilon"].f == pytest.approx(1e-12)
    # the fused op returns the statistics too: the Means are superseded by outputs 1 and 2
    assert replacement_of(out.graph, TensorRef("moments/mean")) == TensorRef(node.name, 1)
    assert replacement_of(out.graph, TensorRef("moments/variance")) == TensorRef(node.name, 2)
    before, after = fx.compare(gd, out, "ln/add_1", {"x": rand(2, 3, 8)})
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def test_readers_of_the_statistics_move_to_the_fused_outputs(fx) -> None:
    import tensorflow as tf

    def build() -> None:
        layer_norm()
        g = tf.compat.v1.get_default_graph()
        tf.identity(g.get_tensor_by_name("moments/variance:0"), name="side")

    out = fx.fuse(fx.graph_def(build))
    assert out.stats[RULE] == 1
    [read] = out.graph["side"].inputs
    assert out.graph[read.node].op == "LayerNorm" and read.index == 2


def test_two_trailing_axes_with_a_known_rank(fx, rand) -> None:
    gd = fx.graph_def(lambda: layer_norm(axes=(1, 2)))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    node = out.graph[replacement_of(out.graph, TensorRef("ln/add_1")).node]
    assert node.attrs["begin_norm_axis"].i == 1
    before, after = fx.compare(gd, out, "ln/add_1", {"x": rand(2, 3, 8)})
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kwargs", [{"extra": True}, {"axes": (0, 1)}, {"cast": True}],
                         ids=["rsqrt_read_elsewhere", "leading_axes", "cast_inside"])
def test_near_misses_do_not_fire(fx, kwargs) -> None:
    out = fx.fuse(fx.graph_def(lambda: layer_norm(**kwargs)))
    assert out.stats[RULE] == 0
    assert SUPERSEDED not in out.graph["ln/add_1"].meta


def test_a_host_node_blocks_it(fx) -> None:
    assert fx.fuse(fx.graph_def(layer_norm), host={"moments/variance"}).stats[RULE] == 0


@pytest.mark.parametrize("key", [RULE, "LayerNormFusionPass"])
def test_switch_file_turns_it_off_by_name_or_alias(fx, key: str) -> None:
    out = fx.fuse(fx.graph_def(layer_norm), switch=fx.switch_off(key))
    assert out.stats[RULE] == 0
    assert [d.node for d in out.diagnostics.items] == ["ln/add_1"]

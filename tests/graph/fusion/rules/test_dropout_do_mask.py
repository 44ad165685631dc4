"""dropout_do_mask: TF's dropout subgraph → DropOutGenMask + DropOutDoMask."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.decisions import SUPERSEDED, replacement_of
from tf2npu.graph.ir import TensorRef

pytestmark = pytest.mark.tf

RULE = "dropout_do_mask"


def dropout(
    *,
    rate: float = 0.5,
    form: str = "tf2",
    dynamic: bool = False,
    noise_shape: bool = False,
    extra: bool = False,
) -> None:
    import tensorflow as tf

    x = tf.compat.v1.placeholder(tf.float32, [None, 50] if dynamic else [80, 50], name="x")
    if form == "tf2":  # what tf.compat.v1.nn.dropout builds in TF 2.x (SelectV2)
        shape = [80, 1] if noise_shape else None
        tf.identity(tf.compat.v1.nn.dropout(x, rate=rate, noise_shape=shape, seed=5), name="out")
        if extra:
            g = tf.compat.v1.get_default_graph()
            tf.identity(g.get_tensor_by_name("dropout/GreaterEqual:0"), name="side")
        return
    # TF 1.15 nn_ops.dropout_v2: x * scale * cast(random_uniform(shape) >= rate)
    with tf.name_scope("dropout"):
        uniform = tf.random.uniform(tf.shape(x), seed=5)
        keep = tf.cast(uniform >= rate, tf.float32, name="cast")
        y = tf.multiply(x * (1.0 / (1.0 - rate)), keep, name="result")
    tf.identity(y, name="out")


def root(form: str) -> str:
    return "dropout/SelectV2" if form == "tf2" else "dropout/result"


@pytest.mark.parametrize("form", ["tf2", "tf1"])
def test_dropout_becomes_gen_mask_and_do_mask(fx, rand, form) -> None:
    gd = fx.graph_def(lambda: dropout(form=form))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    fused = out.graph[replacement_of(out.graph, TensorRef(root(form))).node]
    assert fused.op == "DropOutDoMask"
    x, mask, keep_prob = (out.graph[r.node] for r in fused.inputs)
    assert (x.name, mask.op, keep_prob.op) == ("x", "DropOutGenMask", "Const")
    assert mask.attrs["seed2"].i == 5
    assert SUPERSEDED in out.graph["dropout/GreaterEqual"].meta
    feed = np.abs(rand(80, 50)) + 0.5
    before, after = fx.compare(gd, out, root(form), {"x": feed})
    # random masks differ between the two generators: compare what a dropout guarantees
    for result in (before, after):
        kept = result != 0
        assert 0.4 < kept.mean() < 0.6
        np.testing.assert_allclose(result[kept], 2 * feed[kept], rtol=1e-6)


def test_rate_zero_keeps_everything_bit_for_bit(fx, rand) -> None:
    gd = fx.graph_def(lambda: dropout(rate=0.0, form="tf1"))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    before, after = fx.compare(gd, out, root("tf1"), {"x": rand(80, 50)})
    np.testing.assert_array_equal(after, before)


def test_a_dynamic_shape_matches_through_the_shape_op(fx) -> None:
    assert fx.fuse(fx.graph_def(lambda: dropout(dynamic=True))).stats[RULE] == 1


@pytest.mark.parametrize(
    "kwargs", [{"noise_shape": True}, {"extra": True}], ids=["noise_shape", "mask_read_elsewhere"]
)
def test_near_misses_do_not_fire(fx, kwargs) -> None:
    assert fx.fuse(fx.graph_def(lambda: dropout(**kwargs))).stats[RULE] == 0


def test_a_host_node_blocks_it(fx) -> None:
    out = fx.fuse(fx.graph_def(dropout), host={"dropout/random_uniform/RandomUniform"})
    assert out.stats[RULE] == 0


@pytest.mark.parametrize("key", [RULE, "DropOutDoMaskFusionPass"])
def test_switch_file_turns_it_off_by_name_or_alias(fx, key: str) -> None:
    out = fx.fuse(fx.graph_def(dropout), switch=fx.switch_off(key))
    assert out.stats[RULE] == 0
    assert [d.node for d in out.diagnostics.items] == [root("tf2")]

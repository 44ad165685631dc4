"""softmax_cross_entropy: -reduce_sum(labels * log(softmax(logits)), -1) → the fused kernel."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.decisions import SUPERSEDED, replacement_of
from tf2npu.graph.ir import TensorRef

pytestmark = pytest.mark.tf

RULE = "softmax_cross_entropy"


def xent(
    *,
    log_softmax: bool = False,
    axis: int = -1,
    extra: bool = False,
    rank3: bool = False,
    keepdims: bool = False,
) -> None:
    import tensorflow as tf

    shape = [2, 4, 6] if rank3 else [4, 6]
    if rank3:
        logits = tf.compat.v1.placeholder(tf.float32, shape, name="logits")
    else:
        x = tf.compat.v1.placeholder(tf.float32, [4, 3], name="x")
        w = tf.constant(np.random.default_rng(4).standard_normal((3, 6)).astype(np.float32))
        logits = tf.matmul(x, w, name="logits")
    labels = tf.compat.v1.placeholder(tf.float32, shape, name="labels")
    if log_softmax:
        log_probs = tf.nn.log_softmax(logits)
    else:
        probs = tf.nn.softmax(logits, name="probs")
        log_probs = tf.math.log(probs)
        if extra:
            tf.identity(probs, name="side")
    total = tf.reduce_sum(labels * log_probs, axis=axis, keepdims=keepdims)
    tf.negative(total, name="loss")


def feeds(rand) -> dict[str, np.ndarray]:
    labels = np.abs(rand(4, 6, seed=5))
    return {"x": rand(4, 3), "labels": labels / labels.sum(-1, keepdims=True)}


@pytest.mark.parametrize("log_softmax", [False, True])
def test_hand_written_cross_entropy_becomes_the_kernel(fx, rand, log_softmax) -> None:
    gd = fx.graph_def(lambda: xent(log_softmax=log_softmax))
    out = fx.fuse(gd)
    assert out.stats[RULE] == 1
    ref = replacement_of(out.graph, TensorRef("loss"))
    assert out.graph[ref.node].op == "SoftmaxCrossEntropyWithLogits"
    assert ref.index == 0
    assert [str(r) for r in out.graph[ref.node].inputs] == ["logits", "labels"]
    before, after = fx.compare(gd, out, "loss", feeds(rand))
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)


def test_axis_one_of_a_matrix_is_the_last_axis(fx) -> None:
    assert fx.fuse(fx.graph_def(lambda: xent(axis=1))).stats[RULE] == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"axis": 0},
        {"extra": True},
        {"rank3": True},
        {"keepdims": True},
    ],
    ids=["axis0", "softmax_read_elsewhere", "rank3_logits", "keepdims"],
)
def test_near_misses_do_not_fire(fx, kwargs) -> None:
    out = fx.fuse(fx.graph_def(lambda: xent(**kwargs)))
    assert out.stats[RULE] == 0
    assert SUPERSEDED not in out.graph["loss"].meta


def test_a_host_node_blocks_it(fx) -> None:
    assert fx.fuse(fx.graph_def(xent), host={"loss"}).stats[RULE] == 0


def test_in_a_training_graph_the_gradients_block_it(fx) -> None:
    import tensorflow as tf

    def train() -> None:
        xent()
        tf.gradients(
            tf.compat.v1.get_default_graph().get_tensor_by_name("loss:0"),
            [tf.compat.v1.get_default_graph().get_tensor_by_name("logits:0")],
        )

    assert fx.fuse(fx.graph_def(train)).stats[RULE] == 0


@pytest.mark.parametrize("key", [RULE, "SoftmaxCrossEntropyWithLogitsPass"])
def test_switch_file_turns_it_off_by_name_or_alias(fx, key: str) -> None:
    out = fx.fuse(fx.graph_def(xent), switch=fx.switch_off(key))
    assert out.stats[RULE] == 0
    assert [d.node for d in out.diagnostics.items] == ["loss"]

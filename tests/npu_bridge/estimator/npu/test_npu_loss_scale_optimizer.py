"""NPULossScaleOptimizer: unscaled grads, skipped overflow steps, scale updates (graph mode)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu.npu_loss_scale_manager import (  # noqa: E402
    ExponentialUpdateLossScaleManager,
    FixedLossScaleManager,
)
from npu_bridge.estimator.npu.npu_loss_scale_optimizer import NPULossScaleOptimizer  # noqa: E402

pytestmark = pytest.mark.tf

W0 = np.array([0.3, -1.7, 2.9], dtype=np.float32)
X = np.array([1.1, 0.7, -0.45], dtype=np.float32)


def _model():
    w = tf.compat.v1.Variable(W0, name="w")
    x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
    loss = tf.reduce_sum(tf.square(w * x - 0.5))
    return w, x, loss


def _grads(scale: float | None) -> np.ndarray:
    with tf.Graph().as_default():
        w, x, loss = _model()
        opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        if scale is not None:
            opt = NPULossScaleOptimizer(opt, FixedLossScaleManager(scale))
        ((grad, var),) = opt.compute_gradients(loss)
        assert var is w
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return sess.run(grad, {x: X})


@pytest.mark.parametrize("scale", [1.0, 8.0, 1024.0, 65536.0])
def test_gradients_are_bit_identical_for_power_of_two_scales(scale: float) -> None:
    assert _grads(scale).tobytes() == _grads(None).tobytes()


def _train(make_opt, feeds, make_manager=lambda: FixedLossScaleManager(1024)):
    """(w, global_step, loss_scale) after each step."""
    with tf.Graph().as_default():
        w, x, loss = _model()
        step = tf.compat.v1.train.get_or_create_global_step()
        manager = make_manager()
        opt = NPULossScaleOptimizer(make_opt(), manager)
        train = opt.minimize(loss, global_step=step)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            out = []
            for feed in feeds:
                sess.run(train, {x: feed})
                out.append(sess.run([w, step, manager.get_loss_scale()]))
            return out


def _plain(make_opt, feeds):
    with tf.Graph().as_default():
        w, x, loss = _model()
        step = tf.compat.v1.train.get_or_create_global_step()
        train = make_opt().minimize(loss, global_step=step)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            out = []
            for feed in feeds:
                sess.run(train, {x: feed})
                out.append(sess.run(w))
            return out


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda: tf.compat.v1.train.GradientDescentOptimizer(0.1),
        lambda: tf.compat.v1.train.MomentumOptimizer(0.1, 0.9),
        lambda: tf.compat.v1.train.AdamOptimizer(0.01),
    ],
    ids=["sgd", "momentum", "adam"],
)
def test_finite_steps_match_the_plain_optimizer(make_opt) -> None:
    feeds = [X, X * 2, X * 0.5]
    scaled = _train(make_opt, feeds)
    plain = _plain(make_opt, feeds)
    for (w, step, _), expected, n in zip(scaled, plain, [1, 2, 3], strict=True):
        assert w.tobytes() == expected.tobytes()
        assert step == n


def test_inf_gradient_skips_the_update_and_the_global_step() -> None:
    inf = np.array([np.inf, 0.7, -0.45], dtype=np.float32)
    nan = np.array([np.nan, 0.7, -0.45], dtype=np.float32)
    got = _train(lambda: tf.compat.v1.train.MomentumOptimizer(0.1, 0.9), [inf, nan, X])
    (w1, s1, _), (w2, s2, _), (w3, s3, _) = got
    assert w1.tobytes() == W0.tobytes() and s1 == 0
    assert w2.tobytes() == W0.tobytes() and s2 == 0
    assert s3 == 1
    assert (
        w3.tobytes()
        == _plain(lambda: tf.compat.v1.train.MomentumOptimizer(0.1, 0.9), [X])[0].tobytes()
    )


def test_loss_scale_follows_the_manager() -> None:
    big = np.array([3e36, 0.7, -0.45], dtype=np.float32)  # loss * scale overflows float32
    got = _train(
        lambda: tf.compat.v1.train.GradientDescentOptimizer(0.1),
        [X, X, big, big, X],
        lambda: ExponentialUpdateLossScaleManager(2.0**10, 2),
    )
    assert [(int(step), float(scale)) for _, step, scale in got] == [
        (1, 1024.0),
        (2, 2048.0),
        (2, 2048.0),
        (2, 1638.4000244140625),
        (3, 1638.4000244140625),
    ]


def test_disabled_overflow_check_applies_inf_steps() -> None:
    inf = np.array([np.inf, 0.7, -0.45], dtype=np.float32)
    got = _train(
        lambda: tf.compat.v1.train.GradientDescentOptimizer(0.1),
        [inf],
        lambda: FixedLossScaleManager(4, enable_overflow_check=False),
    )
    ((w, step, _),) = got
    assert step == 1
    assert not np.isfinite(w[0])


def test_delegates_and_checks_arguments() -> None:
    with tf.Graph().as_default():
        w, _, loss = _model()
        inner = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)
        opt = NPULossScaleOptimizer(inner, FixedLossScaleManager(2))
        opt.minimize(loss)
        assert opt.get_slot_names() == ["momentum"]
        assert opt.get_slot(w, "momentum") is inner.get_slot(w, "momentum")
        assert opt._momentum == 0.9  # looked up on the wrapped optimizer
        with pytest.raises(ValueError, match=r"opt must be a tf.compat.v1.train.Optimizer"):
            NPULossScaleOptimizer("sgd", FixedLossScaleManager(2))
        with pytest.raises(
            ValueError, match=r"loss_scale_manager=1024\): give a FixedLossScaleManager"
        ):
            NPULossScaleOptimizer(inner, 1024)


V1_SCRIPT = """
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
from npu_bridge.estimator.npu.npu_loss_scale_manager import ExponentialUpdateLossScaleManager
from npu_bridge.estimator.npu.npu_loss_scale_optimizer import NPULossScaleOptimizer
w = tf.Variable([1.0, 2.0])
x = tf.placeholder(tf.float32, [])
step = tf.train.get_or_create_global_step()
manager = ExponentialUpdateLossScaleManager(8.0, 1)
train = NPULossScaleOptimizer(tf.train.GradientDescentOptimizer(0.5), manager).minimize(
    tf.reduce_sum(w * w) * x, global_step=step)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for feed in (1.0, np.inf, 1.0):
        sess.run(train, {x: feed})
        w_, s_, l_ = sess.run([w, step, manager.get_loss_scale()])
        print(w_.tolist(), int(s_), float(l_))
"""


@pytest.mark.slow
def test_tf1_behaviour_with_ref_variables_and_v1_cond() -> None:
    done = subprocess.run(
        [sys.executable, "-c", V1_SCRIPT], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines() == [
        "[0.0, 0.0] 1 16.0",
        "[0.0, 0.0] 1 16.0",  # first inf: bad_steps = 1 < 2, scale kept, step skipped
        "[0.0, 0.0] 2 32.0",
    ]


def test_distributed_overflow_status_is_all_reduced(monkeypatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "2")
    monkeypatch.setenv("RANK_ID", "0")
    monkeypatch.setenv("TF2NPU_CLUSTER", "127.0.0.1:1,127.0.0.1:2")
    for distributed, expected in ((True, [b"HcomAllReduce"]), (False, [])):
        with tf.Graph().as_default() as graph:
            w = tf.compat.v1.Variable(1.0)
            opt = NPULossScaleOptimizer(
                tf.compat.v1.train.GradientDescentOptimizer(0.1),
                FixedLossScaleManager(8),
                distributed,
            )
            opt.apply_gradients(opt.compute_gradients(w * 3.0))
            found = [op.get_attr("_npu_op") for op in graph.get_operations()
                     if op.node_def.attr["_npu_op"].s.startswith(b"Hcom")]  # fmt: skip
            assert found == expected, distributed
            # Every rank skips a step that overflowed on any: the all-reduced count must be 0.
            (status,) = [op for op in graph.get_operations()
                          if op.name.endswith("overflow_status_reduce_all")]  # fmt: skip
            assert status.type == ("Equal" if distributed else "All")

"""Steps, non-finite fetches and loss scaling, seen in NPU sessions and stock sessions alike."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest
from tests.runtime.conftest import npu_config, tf

pytestmark = pytest.mark.tf

X = np.array([1.1, 0.7, -0.45], dtype=np.float32)
OVERFLOW = np.array([np.inf, 0.7, -0.45], dtype=np.float32)


def _session(kind: str, graph: Any) -> Any:
    """``npu``: an NPU session; ``stock``: no NpuOptimizer; ``no_npu``: NpuOptimizer, --no-npu."""
    from tf2npu.runtime import configure

    if kind == "no_npu":
        configure(npu=False)
    config = None if kind == "stock" else npu_config(precision_mode="must_keep_origin_dtype")
    return tf.compat.v1.Session(graph=graph, config=config)


def _loss_scaled_model() -> dict[str, Any]:
    from npu_bridge.estimator.npu.npu_loss_scale_manager import ExponentialUpdateLossScaleManager
    from npu_bridge.estimator.npu.npu_loss_scale_optimizer import NPULossScaleOptimizer

    graph = tf.Graph()
    with graph.as_default():
        w = tf.compat.v1.Variable([0.3, -1.7, 2.9], name="w")
        x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
        loss = tf.reduce_sum(tf.square(w * x - 0.5), name="loss")
        step = tf.compat.v1.train.get_or_create_global_step()
        manager = ExponentialUpdateLossScaleManager(
            1024, incr_every_n_steps=1000, decr_every_n_nan_or_inf=1, decr_ratio=0.5
        )
        opt = NPULossScaleOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1), manager)
        train = opt.minimize(loss, global_step=step)
        init = tf.compat.v1.global_variables_initializer()
    return {"graph": graph, "x": x, "loss": loss, "train": train, "init": init, "w": w}


@pytest.mark.parametrize("kind", ["npu", "stock", "no_npu"])
def test_a_loss_that_turns_nan_is_reported_with_its_step_and_the_loss_scale(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    from tf2npu.runtime import run_stats

    model = _loss_scaled_model()
    losses = []
    with _session(kind, model["graph"]) as sess, caplog.at_level(logging.WARNING):
        sess.run(model["init"])
        for feed in (X, X, OVERFLOW, X, OVERFLOW):
            loss, _ = sess.run([model["loss"], model["train"]], {model["x"]: feed})
            losses.append(float(loss))
        w = sess.run(model["w"])
    assert np.isinf(losses[2]) and np.isfinite(losses[3])
    assert np.all(np.isfinite(w))  # the overflowing steps were skipped, as they must be
    summary = run_stats().summary(wall_seconds=1.0, exit_status=0)
    assert summary["steps"] == 5
    assert summary["nonfinite"] == {"first_step": 3, "fetches": ["loss:0"]}
    # 1024 halves on each overflow (decr_every_n_nan_or_inf=1): 512 after step 3, 256 after 5.
    # Step 1 was applied: the later skips are no warm-up.
    assert summary["loss_scale"] == {"scale": 256.0, "skipped_steps": 2, "warmup": None}
    assert summary["exit_status"] == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # once per fetch, not once per bad step
    assert "'loss:0' is +Inf in training step 3" in warnings[0]


def test_leading_skipped_steps_while_the_scale_comes_down_are_the_warm_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from tf2npu.runtime import run_stats

    model = _loss_scaled_model()
    with _session("npu", model["graph"]) as sess, caplog.at_level(logging.ERROR):
        sess.run(model["init"])
        for feed in (OVERFLOW, OVERFLOW, OVERFLOW, X, X, OVERFLOW):
            sess.run([model["loss"], model["train"]], {model["x"]: feed})
    summary = run_stats().summary(wall_seconds=1.0, exit_status=0)
    # 1024 -> 512 -> 256 -> 128 over the first three (skipped) steps; the skip at step 6
    # comes after an applied step, so it is no part of the warm-up.
    assert summary["loss_scale"] == {
        "scale": 64.0,
        "skipped_steps": 4,
        "warmup": {"skipped_steps": 3, "first_scale": 512.0, "last_scale": 128.0},
    }


@pytest.mark.parametrize("kind", ["npu", "stock"])
def test_only_scalar_floats_are_checked_and_a_run_without_training_says_after(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    from tf2npu.runtime import run_stats

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
        vector = tf.math.log(x, name="vector")
        count = tf.size(x, name="count")
        mean = tf.reduce_mean(tf.math.log(x), name="mean")
    with _session(kind, graph) as sess, caplog.at_level(logging.WARNING):
        sess.run([vector, count], {x: [-1.0, 1.0]})  # a NaN in a vector: not looked at
        assert run_stats().nonfinite_step is None
        sess.run([vector, mean], {x: [-1.0, 1.0]})
    assert run_stats().summary(wall_seconds=0, exit_status=0)["nonfinite"] == {
        "first_step": 0,
        "fetches": ["mean:0"],
    }
    assert "'mean:0' is NaN after 0 training steps" in caplog.text
    assert (
        run_stats().steps == 0
        and run_stats().summary(wall_seconds=0, exit_status=0)["loss_scale"] is None
    )


def test_stock_sessions_count_steps_of_every_entry_point() -> None:
    """sess.run, make_callable (with and without a feed list) and Keras' callables."""
    from tf2npu.runtime import run_stats

    model = _loss_scaled_model()
    with tf.compat.v1.Session(graph=model["graph"]) as sess:
        assert type(sess) is tf.compat.v1.Session
        sess.run(model["init"])
        sess.run(model["train"], {model["x"]: X})
        fed = sess.make_callable(model["train"], feed_list=[model["x"]])
        fed(X)
        with model["graph"].as_default():
            constant_x = tf.compat.v1.assign(model["w"], model["w"])  # not a step
        sess.make_callable(constant_x)()
    assert run_stats().steps == 2
    assert run_stats().stock_sessions == 1


def test_keras_fit_in_a_stock_session_counts_its_steps() -> None:
    from tf2npu.runtime import run_stats

    graph = tf.Graph()
    with graph.as_default():
        sess = tf.compat.v1.Session()
        tf.compat.v1.keras.backend.set_session(sess)
        model = tf.compat.v1.keras.Sequential(
            [tf.compat.v1.keras.layers.Dense(2, input_shape=(4,))]
        )
        model.compile("sgd", tf.compat.v1.keras.losses.SparseCategoricalCrossentropy(True))
        x = np.random.RandomState(0).randn(64, 4).astype(np.float32)
        y = (x[:, 0] > 0).astype(np.int32)
        model.fit(x, y, epochs=2, batch_size=16, verbose=0)
        sess.close()
    assert run_stats().steps == 8


def test_unmarked_sessions_pass_straight_through() -> None:
    """An NPU session's inner session is stock but made by the runtime: nothing is counted
    twice."""
    from tf2npu.runtime import run_stats

    model = _loss_scaled_model()
    with _session("npu", model["graph"]) as sess:
        sess.run(model["init"])
        sess.run(model["train"], {model["x"]: X})
    assert run_stats().steps == 1 and run_stats().skipped_steps == 0
    assert run_stats().loss_scale == 1024.0


def test_a_partial_run_of_a_loss_scaled_step_fetches_only_what_it_set_up() -> None:
    from tf2npu.runtime import run_stats

    model = _loss_scaled_model()
    with model["graph"].as_default(), tf.control_dependencies([model["train"]]):
        trained = tf.identity(model["loss"], name="trained")  # a tensor that runs the step
    with _session("npu", model["graph"]) as sess:
        sess.run(model["init"])
        handle = sess.partial_run_setup([trained], [model["x"]])
        loss = sess.partial_run(handle, trained, {model["x"]: X})
    assert np.isfinite(loss)
    assert run_stats().steps == 1 and run_stats().loss_scale is None

"""npu_hook / npu_callbacks: hooks in MonitoredSession runs, one-rank broadcast, errors."""

from __future__ import annotations

import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu import npu_callbacks, npu_hook  # noqa: E402
from tf2npu.errors import Tf2NpuError  # noqa: E402

pytestmark = pytest.mark.tf


@pytest.fixture(autouse=True)
def _one_rank(monkeypatch):
    for name in (
        "RANK_SIZE",
        "CM_WORKER_SIZE",
        "STEP_NOW",
        "TOTAL_STEP",
        "LOSS_NOW",
        "TARGET_LOSS",
    ):
        monkeypatch.delenv(name, raising=False)


def _run_steps(hooks, fetch_builder, steps):
    """Build the graph with ``fetch_builder()``, run ``steps`` times in a MonitoredSession."""
    with tf.Graph().as_default():
        fetch, extra = fetch_builder()
        built = hooks(extra) if callable(hooks) else hooks
        with tf.compat.v1.train.MonitoredSession(hooks=built) as sess:
            for _ in range(steps):
                sess.run(fetch)
        return built


def _counter():
    step = tf.compat.v1.train.get_or_create_global_step()
    x = tf.compat.v1.Variable(1.0, name="x")
    return tf.compat.v1.assign_add(step, 1), {"step": step, "x": x}


def test_output_tensor_hook_calls_output_fn_every_n_steps_and_at_end() -> None:
    calls = []

    def hooks(extra):
        return [
            npu_hook.NPUOutputTensorHook(
                {"x": extra["x"]}, output_fn=calls.append, output_every_n_steps=2
            )
        ]

    _run_steps(hooks, _counter, 5)
    assert calls == [[{"x": 1.0}, {"x": 1.0}], [{"x": 1.0}, {"x": 1.0}], [{"x": 1.0}]]


def test_output_tensor_hook_with_a_list_and_only_at_end() -> None:
    calls = []

    def hooks(extra):
        return [npu_hook.NPUOutputTensorHook([extra["x"]], output_fn=calls.append)]

    _run_steps(hooks, _counter, 3)
    assert calls == [[{"x:0": 1.0}] * 3]


def test_output_tensor_hook_argument_checks() -> None:
    with pytest.raises(ValueError, match="output_every_n_steps=-1 must be non-negative"):
        npu_hook.NPUOutputTensorHook({}, output_every_n_steps=-1)
    with pytest.raises(TypeError, match="must be callable"):
        npu_hook.NPUOutputTensorHook({}, output_fn=3)


def test_set_iterations_var_hook_loads_the_loop_variables() -> None:
    seen = {}

    class Probe(tf.compat.v1.train.SessionRunHook):
        def after_create_session(self, session, coord):
            names = ["iterations_per_loop", "loop_cond", "zero", "one"]
            graph = session.graph
            seen["values"] = [
                session.run(graph.get_collection(f"npu_runconfig_{n}")[0]) for n in names
            ]

    _run_steps([npu_hook.SetIterationsVarHook(7), Probe()], _counter, 1)
    assert seen["values"] == [6, 0, 0, 1]
    with pytest.raises(TypeError, match="iterations_per_loop=None"):
        npu_hook.SetIterationsVarHook()


def test_broadcast_hook_does_nothing_with_one_rank() -> None:
    hook = npu_hook.NPUBroadcastGlobalVariablesHook(0, 0)
    with tf.Graph().as_default():
        fetch, _ = _counter()
        with tf.compat.v1.train.MonitoredSession(hooks=[hook]) as sess:
            sess.run(fetch)
            assert sess.run(fetch) == 2
        assert not [
            op
            for op in tf.compat.v1.get_default_graph().get_operations()
            if op.name.startswith("HcomBroadcast")
        ]


def test_broadcast_hook_needs_the_launcher_with_more_ranks(monkeypatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "2")
    hook = npu_hook.NPUBroadcastGlobalVariablesHook(0, 0)
    with pytest.raises(
        Tf2NpuError,
        match="NPUBroadcastGlobalVariablesHook: RANK_SIZE=2 asks "
        "for 2 ranks, but this process was not started by the launcher",
    ):
        hook.begin()


def test_broadcast_global_variables_keeps_values() -> None:
    with tf.Graph().as_default():
        w = tf.compat.v1.Variable([1.5, -2.0])
        n = tf.compat.v1.Variable(3)  # not floating: left alone
        op = npu_hook.broadcast_global_variables(0, 0)
        assert op.type == "NoOp"
        with tf.compat.v1.Session() as sess:
            sess.run([w.initializer, n.initializer])
            sess.run(op)
            assert sess.run(w).tolist() == [1.5, -2.0]


def test_checkpoint_saver_hook_saves(tmp_path) -> None:
    def hooks(_extra):
        return [npu_hook.NPUCheckpointSaverHook(str(tmp_path), save_steps=2)]

    _run_steps(hooks, _counter, 3)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-3")


def test_tell_me_step_or_loss_hook_sets_the_environment() -> None:
    def build():
        inc, extra = _counter()
        extra["loss"] = tf.constant(0.25)
        extra["now"] = tf.constant(41, tf.int64)  # read-only: no race with the increment
        return inc, extra

    def hooks(extra):
        return [npu_hook.TellMeStepOrLossHook(extra["now"], 100, extra["loss"], 0.1)]

    _run_steps(hooks, build, 2)
    assert os.environ["TOTAL_STEP"] == "100"
    assert os.environ["TARGET_LOSS"] == "0.1"
    assert os.environ["STEP_NOW"] == "41"
    assert os.environ["LOSS_NOW"] == "0.25"


def test_shutdown_hook_runs_the_shutdown_op() -> None:
    hook = npu_hook.NPUShutDownHook()
    _run_steps([hook], _counter, 1)
    assert hook._shutdown_op.get_attr("_npu_op") == b"NPUShutdown"


def test_keras_callback_with_one_and_more_ranks(monkeypatch) -> None:
    callback = npu_callbacks.NPUBroadcastGlobalVariablesCallback(0)
    callback.on_batch_begin(0)
    assert callback.broadcast_done
    monkeypatch.setenv("RANK_SIZE", "3")
    again = npu_callbacks.NPUBroadcastGlobalVariablesCallback(0)
    with pytest.raises(
        Tf2NpuError,
        match="NPUBroadcastGlobalVariablesCallback: RANK_SIZE=3 "
        "asks for 3 ranks, but this process was not started by the launcher",
    ):
        again.on_batch_begin(0)


def test_keras_broadcast_global_variables() -> None:
    with tf.Graph().as_default():
        w = tf.compat.v1.Variable(np.float32(4.0))
        op = npu_callbacks.broadcast_global_variables(0)
        with tf.compat.v1.Session() as sess:
            sess.run(w.initializer)
            sess.run(op)
            assert sess.run(w) == 4.0

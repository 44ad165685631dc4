"""Run records through the instrument seam: steps.jsonl, variables.npz, record.json, the step
limit, dropout switched off and the deterministic option."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.runtime.conftest import npu_config, tf

from tf2npu.debug.records import loss_series, read_steps, read_variables
from tf2npu.errors import UsageError
from tf2npu.runtime import record
from tf2npu.runtime.context import context

pytestmark = pytest.mark.tf

X = np.array([1.0, 2.0, -1.0], dtype=np.float32)


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[record.RunRecorder]:
    ctx = context()
    rec = record.RunRecorder(tmp_path, ctx)
    ctx.extra_instruments.append(rec)
    yield rec


def _model(seed: int | None = 0) -> dict[str, Any]:
    graph = tf.Graph()
    with graph.as_default():
        if seed is not None:
            tf.compat.v1.set_random_seed(seed)
        w = tf.compat.v1.Variable([0.5, -1.0, 2.0], name="w")
        x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
        loss = tf.reduce_sum(tf.square(w * x - 1.0), name="loss")
        lr = tf.constant(0.05, name="lr")
        train = tf.compat.v1.train.GradientDescentOptimizer(lr).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    return {"graph": graph, "w": w, "x": x, "loss": loss, "lr": lr, "train": train, "init": init}


def _session(npu: bool, graph: Any) -> Any:
    config = npu_config(precision_mode="must_keep_origin_dtype") if npu else None
    return tf.compat.v1.Session(graph=graph, config=config)


@pytest.mark.parametrize("npu", [True, False])
def test_sess_run_records_every_float_scalar_and_the_variables_at_close(
    recorder: record.RunRecorder, tmp_path: Path, npu: bool
) -> None:
    m = _model()
    with _session(npu, m["graph"]) as sess:
        sess.run(m["init"])
        losses = [sess.run([m["loss"], m["lr"], m["train"]], {m["x"]: X})[0] for _ in range(3)]
        sess.run(m["loss"], {m["x"]: X})  # an evaluation: not a step
        w = sess.run(m["w"])
    recorder.close()
    steps = read_steps(tmp_path)
    assert [(s.run, s.train, s.step, s.npu) for s in steps] == [
        (1, True, 1, npu), (2, True, 2, npu), (3, True, 3, npu), (4, False, 3, npu)
    ]  # fmt: skip
    assert list(steps[0].scalars) == ["loss:0", "lr:0"]
    assert loss_series(steps) == pytest.approx([float(v) for v in losses])
    assert steps[0].signature == steps[1].signature != steps[3].signature
    variables = read_variables(tmp_path)
    assert list(variables) == ["w"]
    np.testing.assert_array_equal(variables["w"], w)
    info = json.loads((tmp_path / "record.json").read_text())
    assert info["variables_session"] is not None and info["dropout_ops"] == 0
    page = (tmp_path / "steps.html").read_text(encoding="utf-8")
    assert 'aria-label="loss:0 per training step"' in page and "3 training steps" in page


def test_non_finite_scalars_are_null_and_named(
    recorder: record.RunRecorder, tmp_path: Path
) -> None:
    m = _model()
    with _session(False, m["graph"]) as sess:
        sess.run(m["init"])
        sess.run([m["loss"], m["train"]], {m["x"]: np.array([np.inf, 1, 1], np.float32)})
    recorder.close()
    (step,) = read_steps(tmp_path)
    assert step.scalars == {"loss:0": None}
    assert step.nonfinite == ("loss:0",)
    assert math.isnan(loss_series([step])[0])


@pytest.mark.parametrize("npu", [True, False])
def test_callables_from_options_are_recorded_and_open_sessions_flushed(
    recorder: record.RunRecorder, tmp_path: Path, npu: bool
) -> None:
    """Keras in graph mode runs through _make_callable_from_options; its session stays open."""
    m = _model()
    sess = _session(npu, m["graph"])
    sess.run(m["init"])
    from tensorflow.core.protobuf.config_pb2 import CallableOptions

    options = CallableOptions(feed=["x:0"], fetch=["loss:0"], target=[m["train"].name])
    step = sess._make_callable_from_options(options)
    first = step(X)[0]
    step(X)
    recorder.close()  # the session is still open: its variables are read now
    steps = read_steps(tmp_path)
    assert [(s.train, s.step) for s in steps] == [(True, 1), (True, 2)]
    assert steps[0].scalars["loss:0"] == pytest.approx(float(first))
    np.testing.assert_allclose(read_variables(tmp_path)["w"], sess.run(m["w"]))
    sess.close()


@pytest.mark.parametrize("npu", [True, False])
def test_make_callable_without_a_feed_list_is_recorded(
    recorder: record.RunRecorder, tmp_path: Path, npu: bool
) -> None:
    m = _model()
    with m["graph"].as_default():
        x = tf.constant([1.0, 2.0, -1.0])
        loss = tf.reduce_sum(tf.square(m["w"] * x - 1.0), name="const_loss")
    with _session(npu, m["graph"]) as sess:
        sess.run(m["init"])
        call = sess.make_callable({"loss": loss, "w": m["w"]})
        first = call()
        assert sorted(first) == ["loss", "w"]  # the caller's structure is kept
    recorder.close()
    (step,) = read_steps(tmp_path)
    assert step.scalars == {"const_loss:0": pytest.approx(float(first["loss"]))}


def test_uninitialised_variables_are_not_recorded(
    recorder: record.RunRecorder, tmp_path: Path
) -> None:
    m = _model()
    with _session(False, m["graph"]):
        pass
    recorder.close()
    assert not (tmp_path / "variables.npz").exists()
    assert read_steps(tmp_path) == []


def test_step_limit_stops_after_n_steps(recorder: record.RunRecorder, tmp_path: Path) -> None:
    ctx = context()
    ctx.extra_instruments.append(record.StepLimit(2, ctx, recorder))
    m = _model()
    done = 0
    with pytest.raises(SystemExit) as stopped, _session(True, m["graph"]) as sess:
        sess.run(m["init"])
        for _ in range(5):
            sess.run([m["loss"], m["train"]], {m["x"]: X})
            done += 1
    assert stopped.value.code == 0
    assert done == 1  # the second step's run raised
    recorder.close()
    assert [s.step for s in read_steps(tmp_path)] == [1, 2]
    assert json.loads((tmp_path / "record.json").read_text())["stopped_at_step"] == 2
    assert "w" in read_variables(tmp_path)  # the `with` closed the session on the way out


def test_dropout_ops_are_found() -> None:
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(1)
        x = tf.ones([2, 3])
        tf.compat.v1.nn.dropout(x, rate=0.5)
        tf.random.uniform([2], name="noise")  # random, but no dropout
    assert record.dropout_ops(graph) == ["dropout/random_uniform/RandomUniform"]


def test_npu_dropout_ops_are_found() -> None:
    from npu_bridge.estimator import npu_ops

    graph = tf.Graph()
    with graph.as_default():
        npu_ops.dropout(tf.ones([2, 3]), keep_prob=0.5, seed=1)
    found = record.dropout_ops(graph)
    assert [name.rpartition("/")[2] for name in found] == ["DropOutGenMask", "DropOutDoMask"]


def test_dropout_off_makes_every_dropout_the_identity() -> None:
    from npu_bridge.estimator import npu_ops
    from tf2npu.runtime import dropout

    replaced = dropout.install()
    try:
        assert "tensorflow.compat.v1.nn.dropout" in replaced
        graph = tf.Graph()
        with graph.as_default():
            x = tf.ones([2, 3])
            assert tf.compat.v1.nn.dropout(x, keep_prob=0.5) is x
            assert npu_ops.dropout(x, keep_prob=0.5) is x
            layer = tf.keras.layers.Dropout(0.4)
            assert layer.rate == 0.0
            assert record.dropout_ops(graph) == []
    finally:
        dropout.uninstall()
    assert tf.keras.layers.Dropout(0.4).rate == 0.4


@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, False), ({"TF2NPU_RECORD": "0"}, False), ({"TF2NPU_RECORD": "1"}, True)],
)
def test_record_from_env(env: dict[str, str], expected: bool) -> None:
    assert record.record_from_env(env) is expected


def test_bad_environment_values_name_the_variable_and_the_fix() -> None:
    from tf2npu.runtime.dropout import dropout_off_from_env

    with pytest.raises(UsageError, match=r"TF2NPU_RECORD='yes': use 1 to record"):
        record.record_from_env({"TF2NPU_RECORD": "yes"})
    with pytest.raises(UsageError, match=r"TF2NPU_MAX_STEPS='0': give the number"):
        record.max_steps_from_env({"TF2NPU_MAX_STEPS": "0"})
    with pytest.raises(UsageError, match=r"TF2NPU_DROPOUT_OFF='on'"):
        dropout_off_from_env({"TF2NPU_DROPOUT_OFF": "on"})
    assert record.max_steps_from_env({"TF2NPU_MAX_STEPS": " 20 "}) == 20
    assert record.max_steps_from_env({}) is None

"""The deterministic option: TF's op determinism for seeded graphs, and an honest "no"."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.runtime.conftest import npu_config, tf

from tf2npu.runtime import determinism
from tf2npu.runtime.context import context

pytestmark = pytest.mark.tf


@pytest.fixture
def enabled(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Op determinism is process-wide and makes unseeded random ops errors: record the call."""
    from tensorflow.python.framework import config

    calls: list[bool] = []
    monkeypatch.setattr(config, "enable_op_determinism", lambda: calls.append(True))
    monkeypatch.setattr(determinism, "onednn_enabled", lambda: False)
    return calls


def _graph(seed: int | None) -> Any:
    graph = tf.Graph()
    with graph.as_default():
        if seed is not None:
            tf.compat.v1.set_random_seed(seed)
        tf.constant(1.0, name="c")
    return graph


def test_option_in_a_seeded_npu_session_turns_op_determinism_on(enabled: list[bool]) -> None:
    with tf.compat.v1.Session(graph=_graph(0), config=npu_config(deterministic=1)):
        pass
    assert enabled == [True]
    assert context().determinism.summary() == {
        "requested_by": "deterministic=1",
        "reproducible": True,
        "op_determinism": True,
        "schedule": "the caller's thread",  # the NPU session's inner session
        "problems": [],
    }


def test_without_the_option_nothing_happens(enabled: list[bool]) -> None:
    with tf.compat.v1.Session(graph=_graph(0), config=npu_config()):
        pass
    with tf.compat.v1.Session(graph=_graph(0)):
        pass
    assert enabled == []
    assert context().determinism.summary() is None


def test_cli_request_covers_stock_sessions_and_says_no_without_a_seed(
    enabled: list[bool], caplog: pytest.LogCaptureFixture
) -> None:
    context().determinism.requested_by = determinism.CLI_FLAG
    with caplog.at_level(logging.WARNING), tf.compat.v1.Session(graph=_graph(None)):
        pass
    with tf.compat.v1.Session(graph=_graph(None)):
        pass
    assert enabled == []
    summary = context().determinism.summary()
    assert summary is not None and summary["reproducible"] is False
    assert summary["problems"] == [
        "the graph has no random seed, so op determinism stays off; " + determinism.SEED_FIX
    ]
    assert caplog.text.count("--deterministic asked for reproducible runs, but the graph") == 1


def test_onednn_on_at_import_is_said_once(
    enabled: list[bool], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(determinism, "onednn_enabled", lambda: True)
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            with tf.compat.v1.Session(graph=_graph(3), config=npu_config(deterministic=1)):
                pass
    summary = context().determinism.summary()
    assert summary is not None
    assert summary["op_determinism"] is True and summary["reproducible"] is False
    assert caplog.text.count("oneDNN kernels were on") == 1


def _late_seed_graph() -> Any:
    """TF 1.x allows the seed after the model: ops made before it keep seed 0 and seed2 0."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.random_uniform([2], name="early")
        tf.compat.v1.random_normal([2], seed=7, name="op_seeded")
        tf.compat.v1.set_random_seed(0)
        tf.compat.v1.random_uniform([2], name="late")
    return graph


def test_random_ops_made_before_the_seed_are_found_by_name() -> None:
    assert determinism.unseeded_random_ops(_late_seed_graph()) == [
        ("early/RandomUniform", "RandomUniform")
    ]


def test_a_fully_seeded_graph_has_no_unseeded_random_op() -> None:
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        tf.compat.v1.random_uniform([2], name="r")
        tf.compat.v1.truncated_normal([2], name="t")
    assert determinism.unseeded_random_ops(graph) == []


def test_a_random_op_made_before_the_seed_keeps_op_determinism_off(
    enabled: list[bool], caplog: pytest.LogCaptureFixture
) -> None:
    """Else TF stops the run at that op: 'random ops must have a seed specified'."""
    context().determinism.requested_by = determinism.CLI_FLAG
    with caplog.at_level(logging.WARNING), tf.compat.v1.Session(graph=_late_seed_graph()):
        pass
    assert enabled == []
    summary = context().determinism.summary()
    assert summary is not None and summary["reproducible"] is False
    assert summary["problems"] == [
        "the random op 'early/RandomUniform' (RandomUniform) has no seed although the graph has "
        "one (made before tf.set_random_seed): their draws differ from run to run, and op "
        "determinism, which would stop the run at them, stays off; set the graph-level seed "
        "before the model is built, e.g. at the top of the function that builds it"
    ]
    assert caplog.text.count("but the random op 'early/RandomUniform'") == 1


def test_several_unseeded_random_ops_are_counted(enabled: list[bool]) -> None:
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.random_uniform([2], name="a")
        tf.compat.v1.random_uniform([2], name="b")
        tf.compat.v1.set_random_seed(0)
    state = determinism.Determinism(requested_by=determinism.CLI_FLAG)
    state._apply(graph)
    assert state.problems == [
        "the random op 'a/RandomUniform' (RandomUniform) and 1 more have no seed although the "
        "graph has one (made before tf.set_random_seed): their draws differ from run to run, and "
        "op determinism, which would stop the run at them, stays off; set the graph-level seed "
        "before the model is built, e.g. at the top of the function that builds it"
    ]
    assert state.op_determinism is False and enabled == []


# -- the schedule: every op in the caller's thread while determinism is asked -----------------


def test_nothing_asked_keeps_the_sessions_config() -> None:
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=4)
    state = determinism.Determinism()
    assert state.session_config(config) is config
    assert state.session_config(None) is None
    assert state.summary() is None


def test_asked_runs_every_sessions_ops_in_the_callers_thread() -> None:
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=4, use_per_session_threads=True)
    config.session_inter_op_thread_pool.add().num_threads = 8
    state = determinism.Determinism(requested_by="--deterministic")
    fixed = state.session_config(config)
    assert (fixed.inter_op_parallelism_threads, fixed.use_per_session_threads) == (-1, False)
    assert len(fixed.session_inter_op_thread_pool) == 0
    assert config.inter_op_parallelism_threads == 4  # the script's own config is not changed
    assert state.session_config(None).inter_op_parallelism_threads == -1
    assert state.summary()["schedule"] == "the caller's thread"  # type: ignore[index]


def test_a_server_session_keeps_no_pool_of_its_own() -> None:
    """A multi-rank job's sessions run on their server: TF refuses per-session pools there
    ("Distributed session does not support session thread pool options")."""
    config = tf.compat.v1.ConfigProto()
    state = determinism.Determinism(requested_by="--deterministic")
    fixed = state.session_config(config, "grpc://127.0.0.1:2222")
    assert (fixed.inter_op_parallelism_threads, fixed.use_per_session_threads) == (1, False)


def test_a_stock_session_runs_with_the_fixed_schedule(enabled: list[bool]) -> None:
    context().determinism.requested_by = determinism.CLI_FLAG
    with tf.compat.v1.Session(graph=_graph(0)) as sess:
        sess.run("c:0")
    assert context().determinism.sessions_scheduled == 1
    assert context().determinism.summary()["schedule"] == "the caller's thread"  # type: ignore[index]


def _op_threads(config: Any) -> tuple[int, set[int]]:
    """The thread that called run, and the threads that ran three unordered ops in it."""
    import threading

    seen: set[int] = set()

    def record(x: Any) -> Any:
        seen.add(threading.get_ident())
        return x

    graph = tf.Graph()
    with graph.as_default():
        ops = [tf.compat.v1.py_func(record, [tf.constant(float(i))], tf.float32) for i in range(3)]
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        sess.run(ops)
    return threading.get_ident(), seen


def test_the_fixed_schedule_runs_unordered_ops_in_the_callers_thread() -> None:
    """With one inter-op thread the pool thread runs ops beside the caller's: a race still
    went either way from run to run (a seeded WGAN_GP's originals differed by 3.9e-4)."""
    state = determinism.Determinism(requested_by="--deterministic")
    caller, seen = _op_threads(state.session_config(None))
    assert seen == {caller}
    one_thread = tf.compat.v1.ConfigProto(
        inter_op_parallelism_threads=1, use_per_session_threads=True
    )
    caller, seen = _op_threads(one_thread)
    assert caller not in seen  # the old schedule: the session's own pool thread ran them


# -- end to end: tf2npu run --deterministic repeats bit for bit, racing graphs included ---------

EXE = Path(sys.executable).parent / "tf2npu"

#: The global_step race of BERT's optimization.py in 20 lines: the learning rate reads
#: global_step in the run that assigns global_step + 1 (under --no-npu its loss varies).
RACING = """\
import numpy as np
import tensorflow as tf

tf.set_random_seed(0)
x = tf.constant(np.linspace(-1, 1, 512).reshape(256, 2), tf.float32)
y = tf.reduce_sum(x, axis=1, keepdims=True) * 3.0
w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
gs = tf.train.get_or_create_global_step()
lr = tf.train.polynomial_decay(0.5, gs, 20, 0.0)
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
train = tf.train.GradientDescentOptimizer(lr).minimize(loss)
train = tf.group(train, gs.assign(gs + 1))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [sess.run([train, loss])[1] for _ in range(20)]
print("losses", " ".join(float(v).hex() for v in losses))
"""

#: An Estimator (the same race in its model_fn, dropout with a seed from RunConfig).
ESTIMATOR = """\
import numpy as np
import tensorflow as tf

def model_fn(features, labels, mode):
    h = tf.layers.dense(features["x"], 8, activation=tf.nn.relu)
    h = tf.nn.dropout(h, keep_prob=0.8)
    loss = tf.losses.mean_squared_error(labels, tf.layers.dense(h, 1))
    gs = tf.train.get_or_create_global_step()
    lr = tf.train.polynomial_decay(0.1, gs, 10, 0.0)
    train = tf.train.AdamOptimizer(lr).minimize(loss)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=tf.group(train, gs.assign(gs + 1)))

def input_fn():
    x = np.linspace(-1, 1, 128, dtype=np.float32).reshape(32, 4)
    data = tf.data.Dataset.from_tensor_slices(({"x": x}, x.sum(axis=1, keepdims=True)))
    return data.repeat().batch(8)

config = tf.estimator.RunConfig(tf_random_seed=0, save_checkpoints_steps=100)
estimator = tf.estimator.Estimator(model_fn, model_dir=MODEL_DIR, config=config)
estimator.train(input_fn, max_steps=6)
print("kernel", estimator.get_variable_value("dense_1/kernel").tobytes().hex())
"""


def _runs(tmp_path: Path, script: str, count: int, *flags: str) -> list[str]:
    """The last stdout line of ``count`` ``tf2npu run --deterministic`` runs, started together."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    for name in ("TF_ENABLE_ONEDNN_OPTS", "TF_NUM_INTEROP_THREADS"):
        env.pop(name, None)  # --deterministic sets them
    procs = []
    for i in range(count):
        path = tmp_path / f"s{i}.py"
        path.write_text(script.replace("MODEL_DIR", repr(str(tmp_path / f"model{i}"))))
        argv = [str(EXE), "run", "--quiet", "--deterministic", "--report-dir",
                str(tmp_path / f"r{i}"), *flags, str(path)]  # fmt: skip
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, env=env))  # fmt: skip
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        outs.append(out.strip().splitlines()[-1])
    return outs


@pytest.mark.slow
def test_a_racing_script_repeats_bit_for_bit_and_the_race_is_named(tmp_path: Path) -> None:
    outs = _runs(tmp_path, RACING, 3)
    assert outs[0].startswith("losses 0x") and len(outs[0].split()) == 21
    assert outs[1] == outs[0] and outs[2] == outs[0]
    summary = json.loads((tmp_path / "r0" / "run_summary.json").read_text())
    assert summary["deterministic"]["schedule"] == "the caller's thread"
    assert [r["variable"] for r in summary["races"]] == ["global_step"]


#: transformer-xl's train_gpu.py with tf.set_random_seed(0) put just before its tf.Session:
#: the initialisers were made before the seed.
LATE_SEED = """\
import tensorflow as tf

w = tf.get_variable("w", [2], initializer=tf.random_uniform_initializer())
tf.set_random_seed(0)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("w", sess.run(w).shape)
"""


@pytest.mark.slow
def test_a_seed_set_after_the_model_runs_and_says_why_it_does_not_repeat(tmp_path: Path) -> None:
    """Before, op determinism stopped this run: 'random ops must have a seed specified'."""
    (out,) = _runs(tmp_path, LATE_SEED, 1, "--no-npu")
    assert out == "w (2,)"
    summary = json.loads((tmp_path / "r0" / "run_summary.json").read_text())
    assert summary["deterministic"]["op_determinism"] is False
    assert summary["deterministic"]["problems"][0].startswith("the random op 'w/Initializer/")


@pytest.mark.slow
def test_an_estimator_script_repeats_bit_for_bit(tmp_path: Path) -> None:
    first, second = _runs(tmp_path, ESTIMATOR, 2)
    assert first.startswith("kernel ") and len(first) > len("kernel ") + 8
    assert first == second
    summary = json.loads((tmp_path / "r0" / "run_summary.json").read_text())
    assert summary["deterministic"]["reproducible"] is True, summary["deterministic"]


@pytest.mark.slow
def test_a_two_rank_job_runs_deterministic(tmp_path: Path) -> None:
    """Each rank's sessions run on its server, which refuses a per-session thread pool."""
    script = Path(__file__).resolve().parents[2] / "examples" / "tf1" / "horovod_style.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK_", "TF2NPU_CLUSTER"))}
    argv = [str(EXE), "run", "--quiet", "--ranks", "2", "--deterministic", "--report-dir",
            str(tmp_path / "r"), str(script)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    finals = [
        line.split("final_loss=")[1] for line in done.stdout.splitlines() if "final_loss=" in line
    ]
    assert len(finals) == 2 and finals[0] == finals[1]

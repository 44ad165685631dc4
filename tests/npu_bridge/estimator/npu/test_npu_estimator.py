"""NPUEstimator / NPUEstimatorSpec: config checks, session options, job info, hooks, host_call."""

from __future__ import annotations

import glob
import json
import logging
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu import npu_estimator  # noqa: E402
from npu_bridge.estimator.npu.npu_config import DumpConfig, NPURunConfig  # noqa: E402
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator, NPUEstimatorSpec  # noqa: E402
from tf2npu.config.sources import from_config_proto  # noqa: E402

pytestmark = pytest.mark.tf

_ENV = (
    "TF_CONFIG",
    "JOB_ID",
    "RANK_SIZE",
    "RANK_ID",
    "POD_NAME",
    "RESTORE_FROM",
    "LOCAL_CHECKPOINT_DIR",
    "RANK_TABLE_FILE",
    "HEARTBEAT",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JOB_ID", "1")
    monkeypatch.setattr(npu_estimator, "_warned_job_id", False)


def _hooks_module():
    """The hooks another module provides; training needs them."""
    from npu_bridge.estimator.npu import npu_hook

    return npu_hook


def input_fn():
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    return (
        tf.data.Dataset.from_tensor_slices((x, x.sum(1, keepdims=True)))
        .repeat()
        .batch(4, drop_remainder=True)
    )


def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
    pred = tf.matmul(features, w)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": pred})
    loss = tf.reduce_mean(tf.square(labels - pred))
    step = tf.compat.v1.train.get_or_create_global_step()
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss, step)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def estimator(tmp_path, fn=model_fn, **kwargs):
    kwargs.setdefault("model_dir", str(tmp_path / "model"))
    return NPUEstimator(fn, config=NPURunConfig(**kwargs))


def npu_entries(config):
    rewrite = config.graph_options.rewrite_options
    return [opt for opt in rewrite.custom_optimizers if opt.name == "NpuOptimizer"]


# -- construction ------------------------------------------------------------------------------


def test_plain_run_config_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"must be an NPURunConfig.*npu_run_config_init"):
        NPUEstimator(model_fn, config=tf.compat.v1.estimator.RunConfig())
    with pytest.raises(ValueError, match="must be an NPURunConfig"):
        NPUEstimator(model_fn)


def test_model_fn_is_required_and_checked(tmp_path) -> None:
    with pytest.raises(ValueError, match="model_fn=None"):
        NPUEstimator(None, config=NPURunConfig(model_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="features"):
        NPUEstimator(lambda x: x, config=NPURunConfig(model_dir=str(tmp_path)))


def test_session_config_gets_one_npu_optimizer_with_the_run_config_values(tmp_path) -> None:
    est = estimator(tmp_path, precision_mode="allow_mix_precision", iterations_per_loop=1)
    config = est.config.session_config
    assert len(npu_entries(config)) == 1
    assert list(config.graph_options.rewrite_options.optimizers) == [
        "pruning",
        "function",
        "constfold",
        "shape",
        "arithmetic",
        "loop",
        "dependency",
        "layout",
        "GradFusionOptimizer",
    ]
    values = from_config_proto(config)
    assert {
        k: values[k]
        for k in (
            "precision_mode",
            "iterations_per_loop",
            "use_off_line",
            "min_group_size",
            "job",
            "task_index",
            "enable_data_pre_proc",
            "hcom_parallel",
            "enable_exception_dump",
            "enable_dump",
            "enable_dump_debug",
        )
    } == {
        "precision_mode": "allow_mix_precision",
        "iterations_per_loop": 1,
        "use_off_line": True,
        "min_group_size": True,
        "job": "localhost",
        "task_index": 0,
        "enable_data_pre_proc": True,
        "hcom_parallel": True,
        "enable_exception_dump": 2,
        "enable_dump": False,
        "enable_dump_debug": False,
    }
    assert "dump_path" not in values and "op_debug_level" not in values
    entry = npu_entries(config)[0]
    assert entry.parameter_map["min_group_size"].WhichOneof("value") == "b"


def test_dump_config_and_tf_config_task_are_written(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TF_CONFIG", json.dumps({"task": {"type": "worker", "index": 0}}))
    dump = DumpConfig(True, str(tmp_path), "0|5", dump_data="stats", dump_layer="dense/MatMul")
    values = from_config_proto(estimator(tmp_path, dump_config=dump).config.session_config)
    assert (values["enable_dump"], values["dump_path"], values["dump_step"]) == (
        True,
        str(tmp_path),
        "0|5",
    )
    assert (values["dump_data"], values["dump_layer"]) == ("stats", "dense/MatMul")
    assert (values["job"], values["task_index"]) == ("worker", 0)


def test_existing_session_config_is_changed_in_place(tmp_path) -> None:
    session_config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    config = NPURunConfig(model_dir=str(tmp_path), session_config=session_config)
    NPUEstimator(model_fn, config=config)
    NPUEstimator(model_fn, config=config)
    assert len(npu_entries(session_config)) == 2  # as in the adapter: one entry per estimator


def test_session_config_runs_on_stock_tensorflow(tmp_path) -> None:
    config = estimator(tmp_path).config.session_config
    with tf.Graph().as_default():
        total = tf.constant(2.0) * 3.0 + 1.0
        with tf.compat.v1.Session(config=config) as sess:
            assert sess.run(total) == 7.0


# -- job info, model_dir, warm start -----------------------------------------------------------


def test_missing_job_id_warns_once_and_defaults(tmp_path, monkeypatch, caplog) -> None:
    monkeypatch.delenv("JOB_ID")
    monkeypatch.setenv("RANK_SIZE", "1")
    monkeypatch.setenv("RANK_ID", "0")
    with caplog.at_level(logging.WARNING, logger=npu_estimator.__name__):
        first = estimator(tmp_path)
        estimator(tmp_path)
    warnings = [r.getMessage() for r in caplog.records if "JOB_ID is not set" in r.getMessage()]
    assert len(warnings) == 1
    assert "Load job info failed" in warnings[0] and "10087" in warnings[0]
    info = first.job_info
    assert (info.job_id, info.job_id_defaulted, info.index, info.rank_size) == (
        "10087",
        True,
        "0",
        1,
    )


def test_job_id_and_rank_from_env(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("JOB_ID", "42")
    monkeypatch.setenv("RANK_SIZE", "8")
    monkeypatch.setenv("POD_NAME", "3")
    monkeypatch.setenv("RANK_ID", "5")
    info = estimator(tmp_path).job_info
    assert (info.job_id, info.job_id_defaulted, info.index, info.rank_size) == ("42", False, "3", 8)


def test_job_start_file(tmp_path) -> None:
    path = tmp_path / "job.json"
    path.write_text(
        json.dumps(
            {
                "device_info": {"Index": 1},
                "rank_table_file": "/r.json",
                "rank_size": 2,
                "local_checkpoint_dir": str(tmp_path / "ckpt"),
            }
        )
    )
    est = NPUEstimator(
        model_fn, config=NPURunConfig(model_dir=str(tmp_path / "m")), job_start_file=str(path)
    )
    assert (est.job_info.index, est.job_info.rank_size, est.job_info.rank_table_file) == (
        "1",
        2,
        "/r.json",
    )
    assert est._warm_start_settings.ckpt_to_initialize_from == str(tmp_path / "ckpt")


def test_bad_job_start_file(tmp_path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"device_info": {"Index": -1}, "rank_table_file": "r"}))
    with pytest.raises(ValueError, match=r"device_info.Index = -1; give an integer >= 0"):
        NPUEstimator(
            model_fn, config=NPURunConfig(model_dir=str(tmp_path)), job_start_file=str(path)
        )


def test_model_dirs_must_agree(tmp_path) -> None:
    config = NPURunConfig(model_dir=str(tmp_path / "a"))
    with pytest.raises(ValueError, match="differs from NPURunConfig"):
        NPUEstimator(model_fn, model_dir=str(tmp_path / "b"), config=config)
    est = NPUEstimator(model_fn, model_dir=str(tmp_path / "a"), config=config)
    assert est.model_dir == str(tmp_path / "a")


def test_no_model_dir_creates_one_in_the_cwd(tmp_path, monkeypatch, caplog) -> None:
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING, logger=npu_estimator.__name__):
        est = NPUEstimator(model_fn, config=NPURunConfig())
    name = os.path.basename(est.model_dir)
    assert os.path.dirname(est.model_dir) == str(tmp_path)
    assert name.startswith("model_dir_") and len(name) == len("model_dir_") + 10
    assert os.path.isdir(est.model_dir)
    assert est.model_dir in caplog.text


def test_warm_start_defaults_to_restore_from(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RESTORE_FROM", str(tmp_path / "old"))
    settings = estimator(tmp_path)._warm_start_settings
    assert settings.ckpt_to_initialize_from == str(tmp_path / "old")
    assert estimator(tmp_path, model_dir=str(tmp_path / "x"))._warm_start_settings is not None
    monkeypatch.delenv("RESTORE_FROM")
    assert estimator(tmp_path)._warm_start_settings is None


# -- wrapped model_fn --------------------------------------------------------------------------


def train_spec(est, fn_features=None):
    with tf.Graph().as_default():
        features = tf.constant(np.ones((4, 2), np.float32))
        labels = tf.constant(np.ones((4, 1), np.float32))
        return est.model_fn(features, labels, tf.estimator.ModeKeys.TRAIN, est.config)


def test_train_hooks_in_the_adapter_order(tmp_path, monkeypatch) -> None:
    hooks = _hooks_module()
    monkeypatch.setenv("RANK_SIZE", "2")
    monkeypatch.setenv("RANK_ID", "1")
    spec = train_spec(estimator(tmp_path, iterations_per_loop=3, save_checkpoints_steps=7))
    kinds = [type(h) for h in spec.training_hooks]
    assert kinds == [
        hooks.NPUBroadcastGlobalVariablesHook,
        hooks.NPUCheckpointSaverHook,
        hooks.SetIterationsVarHook,
    ]
    assert spec.training_hooks[0].index == 1
    assert spec.train_op.name == "IterationOp"


def test_horovod_mode_and_one_iteration_add_fewer_hooks(tmp_path, monkeypatch) -> None:
    hooks = _hooks_module()
    monkeypatch.setenv("RANK_SIZE", "2")
    spec = train_spec(estimator(tmp_path, horovod_mode=True))
    assert [type(h) for h in spec.training_hooks] == [hooks.NPUCheckpointSaverHook]
    assert spec.train_op.name != "IterationOp"


def test_model_fn_must_return_a_spec(tmp_path) -> None:
    est = estimator(tmp_path, fn=lambda features, labels, mode: {"loss": 1})
    with pytest.raises(RuntimeError, match="returned a dict; return an NPUEstimatorSpec"):
        train_spec(est)


@pytest.mark.parametrize(
    ("arguments", "listed"),
    [
        ({}, {}),
        ({"precision_mode": "allow_mix_precision"}, {"precision_mode": "allow_mix_precision"}),
    ],
    ids=["defaults", "precision_mode"],
)
def test_the_run_summary_lists_the_options_the_user_set(tmp_path, arguments, listed) -> None:
    from tf2npu.runtime import run_stats

    _hooks_module()
    # NPURunConfig writes enable_data_pre_proc=True, enable_reduce_precision=False,
    # min_group_size=True ... into the map; only what the call gave is the user's.
    estimator(tmp_path, **arguments).train(input_fn, steps=1)
    assert run_stats().options == listed


def test_train_evaluate_predict(tmp_path) -> None:
    _hooks_module()
    est = estimator(tmp_path, save_checkpoints_steps=2)
    est.train(input_fn, steps=5)
    assert est.get_variable_value("global_step") == 5
    steps = sorted(
        int(p.split("-")[-1].split(".")[0])
        for p in glob.glob(str(tmp_path / "model" / "model.ckpt-*.index"))
    )
    assert steps == [0, 2, 4, 5]  # one saver: TF adds none next to NPUCheckpointSaverHook
    metrics = est.evaluate(input_fn, steps=2)
    assert metrics["global_step"] == 5 and np.isfinite(metrics["loss"])
    prediction = next(iter(est.predict(input_fn)))
    assert prediction["y"].shape == (1,)


def test_iterations_per_loop_puts_iteration_op_in_the_train_graph(tmp_path) -> None:
    _hooks_module()
    seen: list[str] = []

    class Record(tf.compat.v1.train.SessionRunHook):
        def begin(self):
            seen.extend(op.name for op in tf.compat.v1.get_default_graph().get_operations())

    def fn(features, labels, mode):
        spec = model_fn(features, labels, mode)
        return spec._replace(training_hooks=[Record()])

    est = estimator(tmp_path, fn=fn, iterations_per_loop=2)
    est.train(input_fn, steps=2)
    assert est.get_variable_value("global_step") == 2
    assert "IterationOp" in seen
    assert "npu_runconfig/iterations_per_loop" in seen


# -- NPUEstimatorSpec and host_call ------------------------------------------------------------


@pytest.fixture
def loss():
    with tf.Graph().as_default():
        yield tf.constant(1.0)


def test_spec_validates_host_call(loss) -> None:
    make = lambda host_call: NPUEstimatorSpec("eval", loss=loss, host_call=host_call)  # noqa: E731
    with pytest.raises(ValueError, match="got function; give a tuple"):
        make(lambda x: x)
    with pytest.raises(ValueError, match="has 3 elements; give exactly two"):
        make((print, [loss], 1))
    with pytest.raises(TypeError, match="host_call\\[0\\] = 1 is not callable"):
        make((1, [loss]))
    with pytest.raises(ValueError, match=r"host_call\[1\] is a \w*Tensor"):
        make((print, loss))
    with pytest.raises(RuntimeError, match="2 tensors were given but 'f' takes 1 arguments"):

        def f(a):
            return a

        make((f, [loss, loss]))
    with pytest.raises(TypeError, match=r"unexpected \['b'\], missing \['a'\]"):
        make((f, {"b": loss}))


def test_spec_accepts_good_host_calls(loss) -> None:

    def f(a, b=None):
        return a

    for host_call in (
        (f, [loss]),
        [f, [loss, loss]],
        (f, {"a": loss}),
        (lambda *xs: xs, [loss] * 3),
        (lambda **kw: kw, {"z": loss}),
    ):
        spec = NPUEstimatorSpec("eval", loss=loss, host_call=host_call)
        assert spec._host_call is host_call
    plain = spec.to_estimator_spec()
    assert type(plain) is tf.estimator.EstimatorSpec and plain.loss is loss


def test_host_call_summary_reaches_event_files(tmp_path) -> None:
    _hooks_module()
    log_dir = str(tmp_path / "host")

    def host_fn(step, loss):
        writer = tf.compat.v2.summary.create_file_writer(log_dir)
        with writer.as_default(), tf.compat.v2.summary.record_if(True):
            tf.compat.v2.summary.scalar("host_loss", loss, step=step)
            return tf.compat.v1.summary.all_v2_summary_ops()

    def fn(features, labels, mode):
        spec = model_fn(features, labels, mode)
        step = tf.compat.v1.train.get_global_step()
        return NPUEstimatorSpec(
            mode, loss=spec.loss, train_op=spec.train_op, host_call=(host_fn, [step, spec.loss])
        )

    estimator(tmp_path, fn=fn).train(input_fn, steps=3)
    steps = []
    for path in glob.glob(os.path.join(log_dir, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            steps += [event.step for value in event.summary.value if value.tag == "host_loss"]
    assert sorted(steps) == [1, 2, 3]  # host ops run after train_op, as the outfeed enqueue


def test_eval_host_call_becomes_an_evaluation_hook(tmp_path) -> None:
    calls = []

    def host_fn(loss):
        calls.append(loss)
        return tf.identity(loss, name="host_loss")

    def fn(features, labels, mode):
        spec = model_fn(features, labels, mode)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return NPUEstimatorSpec(mode, predictions=spec.predictions)
        return NPUEstimatorSpec(mode, loss=spec.loss, host_call=(host_fn, [spec.loss]))

    est = estimator(tmp_path, fn=fn)
    with tf.Graph().as_default():
        features = tf.constant(np.ones((4, 2), np.float32))
        labels = tf.constant(np.ones((4, 1), np.float32))
        spec = est.model_fn(features, labels, tf.estimator.ModeKeys.EVAL, est.config)
        assert type(spec) is tf.estimator.EstimatorSpec
        assert [type(h).__name__ for h in spec.evaluation_hooks] == ["_HostCallHook"]
        assert calls == [spec.loss]
    with tf.Graph().as_default():
        features = tf.constant(np.ones((4, 2), np.float32))
        predict = est.model_fn(features, None, tf.estimator.ModeKeys.PREDICT, est.config)
        assert predict.prediction_hooks == ()


def test_trains_with_npu_strategy_as_train_distribute(tmp_path) -> None:
    _hooks_module()
    from npu_bridge.estimator.npu.npu_strategy import NPUStrategy

    est = estimator(tmp_path, train_distribute=NPUStrategy(), save_checkpoints_steps=2)
    est.train(input_fn, steps=3)
    assert est.get_variable_value("global_step") == 3
    assert tf.train.latest_checkpoint(est.model_dir).endswith("model.ckpt-3")

"""precision_tool.tf_config: what each entry point sets, prints and creates."""

import contextlib
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig  # noqa: E402

from tf2npu.compat.shims.precision_tool import _config  # noqa: E402
from tf2npu.errors import UsageError  # noqa: E402

SHIMS = _config.PACKAGE_DIR
FUSION_OFF = str(SHIMS / "fusion_off.cfg")
FUSION_SWITCH = str(SHIMS / "fusion_switch.cfg")
EXE = Path(sys.executable).parent / "tf2npu"

DEBUG_DIR = {"debug_dir": "precision_data/npu/debug_0"}
DUMP = {
    "debug_dir": "precision_data/npu/debug_0",
    "enable_dump": True,
    "dump_mode": "all",
    "dump_path": "precision_data/npu/debug_0/dump",
    "op_debug_level": 4,
    "dump_step": "0",
}
OVERFLOW = {
    "debug_dir": "precision_data/npu/debug_0",
    "enable_dump_debug": True,
    "dump_debug_mode": "all",
    "dump_path": "precision_data/overflow/dump",
    "op_debug_level": 4,
}
PROF = {
    "debug_dir": "precision_data/npu/debug_0",
    "profiling_mode": True,
    "profiling_options": {
        "output": "precision_data/npu/debug_0/prof",
        "storage_limit": "1000MB",
        "training_trace": "on",
        "l2": "on",
        "hccl": "on",
        "task_trace": "on",
        "aicpu": "on",
        "fp_point": "",
        "bp_point": "",
        "aic_metrics": "PipeUtilization",
        "msproftx": "on",
    },
}
GRAPH_ENV = {
    "DUMP_GE_GRAPH": "2",
    "DUMP_GRAPH_LEVEL": "3",
    "DUMP_GRAPH_PATH": "precision_data/npu/debug_0/graph",
    "NPU_DUMP_GRAPH": "true",
}


@contextlib.contextmanager
def _seeds_restored():
    """seed_everything seeds the whole process; other tests get their generators back."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONHASHSEED", "0")
        yield
    random.setstate(python_state)
    np.random.set_state(numpy_state)
    tf.random.set_seed(None)


@pytest.fixture(scope="module")
def tf_config():
    """The module, imported without its import-time seeding leaking into other tests."""
    with _seeds_restored():
        from tf2npu.compat.shims.precision_tool import tf_config
    return tf_config


@pytest.fixture(autouse=True)
def _random_states_restored():
    with _seeds_restored():
        yield


@pytest.fixture(autouse=True)
def _in_a_temporary_directory(tmp_path, monkeypatch):
    """precision_data/ goes to the working directory and the env vars to the process."""
    monkeypatch.chdir(tmp_path)
    for name in [*GRAPH_ENV, "PRECISION_TOOL_DUMP", "PRECISION_TOOL_OVERFLOW"]:
        monkeypatch.setenv(name, "before")  # recorded, so whatever the test sets is undone
        monkeypatch.delenv(name)


def parameters(custom_op) -> dict:
    """``parameter_map`` as plain values; ``profiling_options`` decoded from its JSON."""
    values = {}
    for key, attr in custom_op.parameter_map.items():
        field = attr.WhichOneof("value")
        value = getattr(attr, field)
        values[key] = value.decode() if field == "s" else value
    if "profiling_options" in values:
        values["profiling_options"] = json.loads(values["profiling_options"])
    return values


def npu_entries(config) -> list:
    return [c for c in config.graph_options.rewrite_options.custom_optimizers
            if c.name == "NpuOptimizer"]  # fmt: skip


# -- session_dump_config / update_custom_op -------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (None, DEBUG_DIR),
        ("", DEBUG_DIR),
        ("dump", DUMP),
        ("overflow", OVERFLOW),
        ("overflow|dump", OVERFLOW),
        ("fusion_off", {**DEBUG_DIR, "fusion_switch_file": FUSION_OFF}),
        ("fusion_switch", {**DEBUG_DIR, "fusion_switch_file": FUSION_SWITCH}),
        ("fusion_off|fusion_switch", {**DEBUG_DIR, "fusion_switch_file": FUSION_OFF}),
        ("fusion_off|dump", {**DUMP, "fusion_switch_file": FUSION_OFF}),
        ("overflow|fusion_off", {**OVERFLOW, "fusion_switch_file": FUSION_OFF}),
        ("prof", PROF),
    ],
)
def test_session_dump_config_per_action(tf_config, action, expected):
    config = tf_config.session_dump_config(None, action=action)
    (entry,) = npu_entries(config)
    assert parameters(entry) == {"use_off_line": True, **expected}
    rewrite = config.graph_options.rewrite_options
    assert rewrite.remapping == RewriterConfig.OFF
    assert len(rewrite.custom_optimizers) == 1


def test_an_existing_npu_optimizer_entry_is_reused_and_keeps_its_settings(tf_config):
    config = tf.compat.v1.ConfigProto()
    rewrite = config.graph_options.rewrite_options
    rewrite.custom_optimizers.add().name = "pruning"
    entry = rewrite.custom_optimizers.add()
    entry.name = "NpuOptimizer"
    entry.parameter_map["precision_mode"].s = b"allow_mix_precision"
    entry.parameter_map["dump_path"].s = b"/elsewhere"
    returned = tf_config.session_dump_config(config, action="dump")
    assert returned is config
    assert [c.name for c in rewrite.custom_optimizers] == ["pruning", "NpuOptimizer"]
    assert parameters(rewrite.custom_optimizers[1]) == {
        "precision_mode": "allow_mix_precision", "use_off_line": True, **DUMP}  # fmt: skip


def test_a_config_that_is_not_a_config_proto_is_a_usage_error(tf_config):
    with pytest.raises(UsageError, match=r"^session_dump_config\(session_config=...\): expected "
                                         r"a tf.ConfigProto or None, got dict \{'a': 1\}; "):  # fmt: skip
        tf_config.session_dump_config({"a": 1}, action="dump")


def test_update_custom_op_sets_the_entry_in_place_and_prints_the_switch_file(tf_config, capsys):
    config = tf.compat.v1.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["precision_mode"].s = b"allow_mix_precision"
    assert tf_config.update_custom_op(custom_op, action="fusion_off") is custom_op
    assert parameters(custom_op) == {"precision_mode": "allow_mix_precision", **DEBUG_DIR,
                                     "fusion_switch_file": FUSION_OFF}  # fmt: skip
    captured = capsys.readouterr()
    assert captured.out == f"[PrecisionTool] Set fusion switch file: {FUSION_OFF}\n"
    assert captured.err == ""
    assert config.graph_options.rewrite_options.remapping == 0  # only session_dump_config sets it


def test_fusion_switch_notes_that_the_shipped_template_switches_nothing(tf_config, capsys):
    tf_config.session_dump_config(None, action="fusion_switch")
    captured = capsys.readouterr()
    assert captured.out == f"[PrecisionTool] Set fusion switch file: {FUSION_SWITCH}\n"
    assert captured.err.startswith(
        f"tf2npu: precision_tool: {FUSION_SWITCH} switches no fusion pass; it is part of the "
        "tf2npu install, so do not edit it: write your own switch file"
    )


def test_update_custom_op_of_something_else_is_a_usage_error(tf_config):
    with pytest.raises(UsageError, match=r"^update_custom_op\(custom_op, ...\): expected the "
                                         r"NpuOptimizer entry of config.graph_options.rewrite_options"
                                         r".custom_optimizers, got a ConfigProto; for a whole "
                                         r"ConfigProto use session_dump_config"):  # fmt: skip
        tf_config.update_custom_op(tf.compat.v1.ConfigProto(), action="dump")


@pytest.mark.parametrize(
    ("env", "expected", "message"),
    [
        ({"PRECISION_TOOL_DUMP": "True"}, DUMP, "[PrecisionTool] enable npu dump >======\n"),
        ({"PRECISION_TOOL_OVERFLOW": "True"}, OVERFLOW,
         "[PrecisionTool] enable npu overflow >======\n"),
        ({"PRECISION_TOOL_DUMP": "False"}, DEBUG_DIR, ""),
    ],
)  # fmt: skip
def test_no_action_falls_back_to_the_environment(tf_config, monkeypatch, capsys, env, expected,
                                                 message):  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    (entry,) = npu_entries(tf_config.session_dump_config())
    assert parameters(entry) == {"use_off_line": True, **expected}
    assert capsys.readouterr().out == message


def test_every_entry_point_creates_precision_data_and_sets_the_graph_env(tf_config, tmp_path):
    tf_config.session_dump_config(None, action="")
    assert {name: os.environ[name] for name in GRAPH_ENV} == GRAPH_ENV
    for path in _config.CREATED_DIRS:
        assert (tmp_path / path).is_dir(), path


def test_a_misspelt_action_is_noted_on_stderr(tf_config, capsys):
    (entry,) = npu_entries(tf_config.session_dump_config(None, action="fusionoff"))
    assert parameters(entry) == {"use_off_line": True, **DEBUG_DIR}
    assert "'fusionoff' is no action and is ignored" in capsys.readouterr().err


# -- estimator_dump_config ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (None, dict(enable_dump=False, dump_path=None, dump_step=None, dump_mode="output",
                    enable_dump_debug=False, dump_debug_mode="all")),
        ("overflow", dict(enable_dump=False, dump_path="precision_data/overflow/dump",
                          dump_step=None, dump_mode="all", enable_dump_debug=True,
                          dump_debug_mode="all")),
        ("dump", dict(enable_dump=True, dump_path="precision_data/npu/debug_0/dump",
                      dump_step="0", dump_mode="all", enable_dump_debug=False,
                      dump_debug_mode="all")),
    ],
)  # fmt: skip
def test_estimator_dump_config(tf_config, tmp_path, action, expected):
    from npu_bridge.estimator.npu.npu_config import DumpConfig

    config = tf_config.estimator_dump_config(action)
    assert isinstance(config, DumpConfig)
    assert {name: getattr(config, name) for name in expected} == expected
    assert (tmp_path / "precision_data/overflow/dump").is_dir()


def test_estimator_dump_config_notes_the_fusion_switch_it_ignores(tf_config, capsys):
    config = tf_config.estimator_dump_config("dump|fusion_off")
    assert config.enable_dump is True
    assert "estimator_dump_config ignores 'fusion_off'" in capsys.readouterr().err


# -- tfdbg wrappers, seeds, TF 2.x names ----------------------------------------------------------


def test_sess_dump_wraps_the_session_in_tfdbg_writing_to_tf_debug(tf_config, tmp_path):
    from tensorflow.python.debug.lib import debug_data

    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        y = tf.identity(x * 2.0, name="y")
        with tf.compat.v1.Session() as sess:
            wrapped = tf_config.sess_dump(sess)
            assert type(wrapped).__name__ == "DumpingDebugWrapperSession"
            assert list(wrapped.run(y, feed_dict={x: [1.0, 2.5]})) == [2.0, 5.0]
    (run_dir,) = (tmp_path / "precision_data/tf/tf_debug").iterdir()
    dump = debug_data.DebugDumpDir(str(run_dir))
    assert list(dump.get_tensors("y", 0, "DebugIdentity")[0]) == [2.0, 5.0]
    assert (tmp_path / "precision_data/npu/debug_0/graph").is_dir()


def test_estimator_dump_is_a_tfdbg_hook_writing_to_tf_debug(tf_config, tmp_path):
    hook = tf_config.estimator_dump()
    assert type(hook).__name__ == "DumpingDebugHook"
    assert isinstance(hook, tf.compat.v1.train.SessionRunHook)
    assert (tmp_path / "precision_data/npu/debug_0").is_dir()


def test_seed_everything_seeds_and_prints(tf_config, capsys):
    tf_config.seed_everything(7)
    assert os.environ["PYTHONHASHSEED"] == "7"
    assert random.random() == pytest.approx(random.Random(7).random())
    assert np.random.rand() == np.random.RandomState(7).rand()
    assert capsys.readouterr().out == (
        "[PrecisionTool] Set Tensorflow random seed to 7 success.\n"
        "[PrecisionTool] Set numpy random seed to 7 success.\n"
    )


@pytest.mark.slow
def test_importing_seeds_with_2022_as_the_real_module_does():
    code = textwrap.dedent("""
        import os, random
        import numpy as np
        from tf2npu.compat.shims.precision_tool import tf_config
        print(os.environ["PYTHONHASHSEED"], np.random.rand() == np.random.RandomState(2022).rand(),
              random.random() == random.Random(2022).random())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[PrecisionTool] Set Tensorflow random seed to 2022 success.",
        "[PrecisionTool] Set numpy random seed to 2022 success.",
        "2022 True True",
    ]


def test_module_names_and_constants(tf_config):
    assert tf_config.FUSION_OFF_FILE == FUSION_OFF and Path(FUSION_OFF).is_file()
    assert tf_config.FUSION_SWITCH_FILE == FUSION_SWITCH and Path(FUSION_SWITCH).is_file()
    assert tf_config.DEFAULT_OP_DEBUG_DIR == "precision_data/npu/debug_0"
    assert set(tf_config.__all__) <= set(dir(tf_config))


def test_npu_device_dump_config_says_what_to_use_instead(tf_config):
    with pytest.raises(UsageError, match=r"npu_device_dump_config is for TF 2.x scripts on the "
                                         r"npu_device package, which tf2npu run does not provide"):  # fmt: skip
        tf_config.npu_device_dump_config(object(), "dump")


class _Optimizer:
    def __init__(self, finite: bool) -> None:
        self.loss_scale = tf.Variable(1024.0)
        self.last_step_finite = tf.Variable(finite)


@pytest.mark.parametrize("finite", [True, False])
def test_loss_scale_callback_prints_scale_and_status(tf_config, capsys, finite):
    callback = tf_config.NpuPrintLossScaleCallBack(_Optimizer(finite))
    assert isinstance(callback, tf.keras.callbacks.Callback)
    callback.on_train_batch_begin(3)
    assert capsys.readouterr().out == (
        f"PrecisionTool: Train steps 3, loss_scale=1024.000 / not_overflow_status={finite}\n"
    )


def test_loss_scale_callback_needs_a_loss_scale_optimizer(tf_config):
    with pytest.raises(UsageError, match=r"^NpuPrintLossScaleCallBack\(SGD\): the optimizer has "
                                         r"no loss_scale and no last_step_finite; "):  # fmt: skip
        tf_config.NpuPrintLossScaleCallBack(type("SGD", (), {})())


# -- end to end under tf2npu run ------------------------------------------------------------------

FUSION_SCRIPT = """\
import sys

import numpy as np
import tensorflow as tf
import precision_tool.tf_config as npu_tf_config

action = sys.argv[1] if len(sys.argv) > 1 else None
x = tf.placeholder(tf.float32, [8, 4])
y = tf.placeholder(tf.float32, [8, 1])
pred = tf.layers.dense(x, 1)
loss = tf.reduce_mean(tf.square(pred - y))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
config = tf.ConfigProto()
config = npu_tf_config.session_dump_config(config, action=action)
xs = np.random.RandomState(0).rand(8, 4).astype(np.float32)
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(2):
        print("loss", sess.run([loss, train], feed_dict={x: xs, y: xs.sum(1, keepdims=True)})[0])
"""


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "fusions", "switch_file"),
    [(["fusion_off"], {}, FUSION_OFF), ([], {"matmul_biasadd": 1}, None)],
)
def test_fusion_off_under_tf2npu_run(tmp_path, args, fusions, switch_file):
    (tmp_path / "train.py").write_text(FUSION_SCRIPT)
    done = subprocess.run(
        [str(EXE), "run", "--quiet", "--report-dir", "report", "train.py", *args],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "report/run_summary.json").read_text())
    assert (summary["sessions"], summary["stock_sessions"]) == (1, 0)
    assert summary["fusions"] == fusions
    assert summary["options"].get("fusion_switch_file") == switch_file
    assert summary["options"]["debug_dir"] == "precision_data/npu/debug_0"
    assert (f"[PrecisionTool] Set fusion switch file: {FUSION_OFF}" in done.stdout) == bool(args)
    assert len([line for line in done.stdout.splitlines() if line.startswith("loss ")]) == 2
    for path in _config.CREATED_DIRS:
        assert (tmp_path / path).is_dir(), path

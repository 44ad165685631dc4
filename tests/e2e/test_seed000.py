"""Seed 000's three error cases, run with ``tf2npu run`` and diagnosed with ``tf2npu doctor``.

Each script reproduces one case in a few lines (``seed000/``), and each fails here as on the
device: the graph engine reports a lookup table initialised on the device but looked up in the
input pipeline (01, ``table_split``), a variable the pipeline reads on the host but the device
initialises (02, ``variable_in_preprocessing``) and a v1 while loop whose variable grows every
iteration (03, ``v1_control_dynamic_shape``), so ``tf2npu run`` stops with exit status 2. The
test checks that and that doctor gives the seed's fix for all three from the log.
``tests/debug/doctor/test_seed000.py`` checks the same on logs recorded from these runs,
without TensorFlow.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.tf,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs TensorFlow"),
]

SCRIPTS = Path(__file__).parent / "seed000"
CASES = {
    # case: (exit status of tf2npu run, doctor's symptom, severity, a piece of the seed's fix)
    "case01_table": (2, "table_split", "error", '["mix_compile_mode"].b = True'),
    "case02_variable": (2, "variable_in_preprocessing", "error", "`batch_size = 64`"),
    "case03_v1cond": (2, "v1_control_dynamic_shape", "error", "tf.enable_control_flow_v2()"),
}


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tf2npu", *args]


def env() -> dict[str, str]:
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0"}


def run_case(case: str, out: Path) -> tuple[int, Path]:
    report = out / case
    done = subprocess.run(
        command("run", "--report-dir", str(report), str(SCRIPTS / f"{case}.py")),
        capture_output=True, text=True, timeout=600, env=env(),
    )  # fmt: skip
    log = out / f"{case}.log"
    log.write_text(done.stdout + done.stderr)
    return done.returncode, log


def test_seed_000_error_cases_are_diagnosed_with_the_seeds_fix(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(CASES, pool.map(lambda c: run_case(c, tmp_path), CASES), strict=True))
    for case, (status, symptom, severity, fix) in CASES.items():
        code, log = runs[case]
        assert code == status, log.read_text()
        done = subprocess.run(
            command("doctor", str(log), "--run-dir", str(tmp_path / case),
                    "--script", str(SCRIPTS / f"{case}.py"), "--json"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == (1 if severity == "error" else 0), done.stderr
        found = {s["id"]: s for s in json.loads(done.stdout)["symptoms"]}
        assert symptom in found, sorted(found)
        assert found[symptom]["severity"] == severity
        assert fix in found[symptom]["fix"]


CASE01_ORIGINAL = """\
import tensorflow as tf
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

keys = tf.constant(["cat", "dog", "bird"])
values = tf.constant([0, 1, 2], dtype=tf.int64)
table = tf.contrib.lookup.HashTable(tf.contrib.lookup.KeyValueTensorInitializer(keys, values), -1)
words = tf.data.Dataset.from_tensor_slices(["dog", "cat", "bird", "dog"])
ids = words.map(lambda w: table.lookup(w)).batch(2, drop_remainder=True)
iterator = ids.make_initializable_iterator()
total = tf.reduce_sum(tf.cast(iterator.get_next(), tf.float32))

config = tf.ConfigProto()
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
config.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF
with tf.Session(config=config) as sess:
    sess.run(tf.tables_initializer())
    sess.run(iterator.initializer)
    for _ in range(2):
        print("sum", sess.run(total))
"""
"""Case 01's script before migration, configured as the seed's scripts are (RewriterConfig)."""

SEED_FIX_SCRIPT = """\
import tensorflow as tf
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

from npu_bridge.npu_init import *

keys = tf.constant(["cat", "dog", "bird"])
values = tf.constant([0, 1, 2], dtype=tf.int64)
table = tf.contrib.lookup.HashTable(tf.contrib.lookup.KeyValueTensorInitializer(keys, values), -1)
words = tf.data.Dataset.from_tensor_slices(["dog", "cat", "bird", "dog"])
ids = words.map(lambda w: table.lookup(w)).batch(2, drop_remainder=True)
iterator = ids.make_initializable_iterator()
total = tf.reduce_sum(tf.cast(iterator.get_next(), tf.float32))

config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["mix_compile_mode"].b = True
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
config.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF
with tf.Session(config=config) as sess:
    sess.run(tf.tables_initializer())
    sess.run(iterator.initializer)
    for _ in range(2):
        print("sum", sess.run(total))
"""
"""The seed's own solution script for case 01, word for word in its configuration lines."""


def _run_script(script: Path, report: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command("run", "--report-dir", str(report), str(script)),
        capture_output=True, text=True, timeout=600, env=env(),
    )  # fmt: skip


def test_the_seeds_own_fix_with_rewriter_config_off_runs(tmp_path: Path) -> None:
    script = tmp_path / "case01_seed_fix.py"
    script.write_text(SEED_FIX_SCRIPT)
    done = _run_script(script, tmp_path / "report")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["sum 1.0", "sum 3.0"]
    summary = json.loads((tmp_path / "report" / "run_summary.json").read_text())
    assert summary["options"]["mix_compile_mode"] is True


def test_the_migrated_case01_script_gets_mixed_compute_and_runs(tmp_path: Path) -> None:
    source = tmp_path / "orig"
    source.mkdir()
    (source / "train.py").write_text(CASE01_ORIGINAL)
    out = tmp_path / "out"
    migrated = subprocess.run(
        command("migrate", str(source), "-o", str(out)),
        capture_output=True, text=True, timeout=120, env=env(),
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    text = (out / "train.py").read_text()
    assert 'custom_op.parameter_map["mix_compile_mode"].b = True' in text
    assert "with tf.Session(config=npu_session_config(config_proto=config)) as sess:" in text
    assert "config.graph_options.rewrite_options.remapping = RewriterConfig.OFF" in text
    done = _run_script(out / "train.py", tmp_path / "report")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["sum 1.0", "sum 3.0"]

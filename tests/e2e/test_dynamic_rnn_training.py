"""A small CNN-CTC-style script trains with ``npu_dynamic_rnn.DynamicRNN`` under ``tf2npu run``.

The script (written here, tf2npu's own) follows the ModelZoo pattern: transpose batch-major
features to time-major, ``DynamicRNN(hidden, dtypes.float32, time_major=True,
forget_bias=1.0)``, unpack its eight outputs, a dense head on the last step, Adam, an NPU
session (``NpuOptimizer``). It runs twice at once: through the graph engine, and with
``--no-npu`` (stock sessions); the same seeds must give the same losses, and the loss must fall.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.tf,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs TensorFlow"),
]

STEPS = 6
SCRIPT = f"""
import numpy as np
import tensorflow as tf
from tensorflow.python.framework import dtypes
from npu_bridge.npu_init import *
from npu_bridge.estimator.npu.npu_dynamic_rnn import DynamicRNN

tf.set_random_seed(1)
rng = np.random.RandomState(0)
features = rng.randn(8, 6, 4).astype(np.float32)  # [batch, time, input]
targets = features.sum(axis=(1, 2)).reshape(8, 1) * 0.1

x = tf.placeholder(tf.float32, [8, 6, 4])
y_true = tf.placeholder(tf.float32, [8, 1])
cell = DynamicRNN(16, dtypes.float32, time_major=True, forget_bias=1.0)
y, output_h, output_c, i, j, f, o, tanhc = cell(tf.transpose(x, [1, 0, 2]))
pred = tf.layers.dense(y[-1], 1)
loss = tf.reduce_mean(tf.square(pred - y_true))
train = tf.train.AdamOptimizer(0.05).minimize(loss)

config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    for step in range({STEPS}):
        print("loss=%.7f" % sess.run([loss, train], {{x: features, y_true: targets}})[0])
"""


def _launch(work: Path, name: str, *flags: str) -> subprocess.Popen[str]:
    args = [
        sys.executable,
        "-m",
        "tf2npu.cli.main",
        "run",
        "--quiet",
        "--report-dir",
        str(work / name),
        *flags,
        str(work / "train_lstm.py"),
    ]
    return subprocess.Popen(
        args, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_dynamic_rnn_script_trains_and_matches_stock_sessions(tmp_path: Path) -> None:
    (tmp_path / "train_lstm.py").write_text(SCRIPT)
    procs = {
        name: _launch(tmp_path, name, *flags)
        for name, flags in (("npu", ()), ("stock", ("--no-npu",)))
    }
    losses = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        losses[name] = [float(v) for v in re.findall(r"^loss=(\S+)$", out, re.M)]
        assert len(losses[name]) == STEPS, out
    summary = json.loads((tmp_path / "npu" / "run_summary.json").read_text())
    assert summary["sessions"] == 1 and summary["steps"] == STEPS
    assert losses["npu"][-1] < 0.75 * losses["npu"][0]
    assert losses["npu"] == pytest.approx(losses["stock"], rel=1e-4, abs=1e-6)

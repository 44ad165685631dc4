"""``tf2npu profile`` and ``tf2npu run --profile``: run and analyse, analyse again, usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tf2npu.cli.main import main

SCRIPT = """\
import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

x = tf.placeholder(tf.float32, [64, 128], name="x")
w = tf.Variable(np.ones([128, 128], np.float32) / 128, name="w")
s = tf.reduce_sum(tf.square(tf.matmul(x, w)), axis=0, name="colsum")
loss = tf.reduce_mean(s, name="loss")
train = tf.train.GradientDescentOptimizer(1e-6).minimize(loss)
with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(5):
        sess.run([train, loss], {x: np.ones([64, 128], np.float32)})
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run(
        [sys.executable, "-m", "tf2npu", *args], capture_output=True, text=True, cwd=cwd,
        timeout=600, env=env,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.tf
def test_profile_runs_analyses_and_finds_the_float16_reduce_sum(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT, encoding="utf-8")
    done = cli(
        "profile", "--steps", "3", "--out", "prof",
        "--option", "precision_mode=allow_mix_precision", "--", "train.py", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "warning: reduce_sum_fp16: colsum" in done.stderr and "train.py:7" in done.stderr
    (folder,) = (tmp_path / "prof").glob("PROF_*")
    summary = json.loads((tmp_path / "prof" / "run_summary.json").read_text())
    assert summary["profiles"][0]["path"] == str(folder)
    assert summary["profiles"][0]["traced_runs"] == 4  # the initializer's run + 3 steps
    advice = json.loads((folder / "advice.json").read_text())
    assert advice["findings"][0]["id"] == "reduce_sum_fp16"
    again = cli("profile", "--from", "prof", cwd=tmp_path)
    assert again.returncode == 0 and "reduce_sum_fp16" in again.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["profile"], "no SCRIPT given"),
        (["profile", "--steps", "0", "--", "x.py"], "--steps 0: give at least 1"),
        (["profile", "--from", "nowhere"], "holds no profile"),
        (["profile", "--from", "nowhere", "--", "x.py"], "give no SCRIPT with it"),
        (["run", "--profile-steps", "1", "x.py"], "--profile-steps needs --profile DIR"),
        (["run", "--profile", "p", "--profile-steps", "5-1", "x.py"], "--profile-steps '5-1'"),
        (["run", "--no-npu", "--profile", "p", "x.py"], "drop --no-npu"),
    ],
)
def test_usage_errors(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").write_text("print(1)\n", encoding="utf-8")
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_help_teaches_with_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["profile", "--help"])
    text = capsys.readouterr().out
    assert "tf2npu profile -- train.py" in text and '"ReduceSumD"' in text

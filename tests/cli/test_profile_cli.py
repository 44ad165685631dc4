"""``tf2npu profile`` and ``tf2npu run --profile``: run and analyse, analyse again, usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.debug.profile_sample import write_sample

from tf2npu.cli.main import main
from tf2npu.testing.hostile import run_tf2npu

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


# -- profile --from on hostile folders: no hang, no traceback, the file named ------------------

DATA = Path("PROF_20240101120000", "device_0", "data")


def _swap(path: Path, make: Any) -> None:
    path.unlink()
    make(path)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: _swap(d / "meta.json", os.mkfifo), "meta.json: cannot read it as JSON (a FIFO, not a regular file)"),
        (lambda d: _swap(d / "ops.jsonl", lambda p: p.symlink_to("/dev/zero")), "ops.jsonl: cannot read it (a character device, not a regular file)"),
        (lambda d: (d / "meta.json").write_text("[" * 100_000), "meta.json: cannot read it as JSON ({data}/meta.json: the JSON nests too deep"),
        (lambda d: (d / "meta.json").write_text('{"models": 5}'), "{data}: a file holds JSON of another shape than the profiler writes (AttributeError: 'int' object has no attribute 'items'); profile the run again"),
        (lambda d: (d / "ops.jsonl").write_text("[1, 2, 3]\n{}\n"), "ops.jsonl:1: not a JSON object ([1, 2, 3])"),
    ],
    ids=["fifo-meta", "dev-zero-ops", "deep-meta", "models-5", "list-line"],
)  # fmt: skip
def test_from_a_damaged_profile(tmp_path: Path, damage: Any, message: str) -> None:
    write_sample(tmp_path / "prof")
    damage(tmp_path / "prof" / DATA)
    ended = run_tf2npu(["profile", "--from", "prof"], tmp_path, timeout=60)
    assert (ended.code, ended.left, ended.traceback) == (1, (), False), ended.err
    assert ended.err.startswith(f"tf2npu profile: error: prof/{DATA.parts[0]}: ")
    assert message.format(data=f"prof/{DATA}") in ended.err


def test_out_that_is_a_file_names_out(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file")
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    code = main(["profile", "--out", str(tmp_path / "taken"), "--", str(script)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith(f"tf2npu profile: error: --out '{tmp_path / 'taken'}' ")
    assert "--report-dir" not in err

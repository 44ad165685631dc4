"""``tf2npu run --dump``: the short form of the dump options, and golden dumps with --no-npu."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tf2npu.artifacts import dump as dumpfile
from tf2npu.artifacts import gegraph
from tf2npu.cli.main import main
from tf2npu.testing.hostile import run_tf2npu
from tf2npu.testing.scripts import DENSE_TRAINING

EXE = Path(sys.executable).with_name("tf2npu")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # oneDNN's CPU kernels are not run-to-run deterministic under load: switched off, so two
    # runs of one script agree to the last digit.
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, cwd=cwd, timeout=600, env=env
    )


def summary(report: Path) -> dict:
    return json.loads((report / "run_summary.json").read_text())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--dump-step", "0"], "--dump-step needs --dump DIR"),
        (["--dump-mode", "all", "--dump-data", "stats"], "--dump-mode, --dump-data needs --dump"),
        (["--no-npu", "--dump", "d", "--dump-mode", "input"], "apply to NPU dumps"),
    ],
)
def test_dump_flag_errors(tmp_path, capsys, argv, message):
    script = tmp_path / "t.py"
    script.write_text("open('ran.marker', 'w')\n")
    assert main(["run", *argv, str(script)]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "ran.marker").exists()


@pytest.mark.slow
@pytest.mark.tf
def test_dump_writes_the_device_layout_and_the_summary_counts_it(tmp_path):
    (tmp_path / "train.py").write_text(DENSE_TRAINING)
    done = cli(
        "run", "--dump", "dumps", "--dump-step", "1", "--dump-mode", "all",
        "--report-dir", "r", "train.py", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    steps = dumpfile.find_step_dirs(tmp_path / "dumps")
    assert steps and {d.step for d in steps} == {1} and {d.kind for d in steps} == {"npu"}
    kinds = {t.kind for d in steps for t in dumpfile.iter_npu_tensors(d)}
    assert kinds == {"input", "output"}
    # one raw file per op, its inputs and outputs together
    assert {dumpfile.parse_npu(f).ext for d in steps for f in d.files()} == {"raw"}  # type: ignore[union-attr]
    graphs = [g for d in steps if d.graph_json for g in gegraph.load(d.graph_json)]
    assert any(op.pass_name == "MatMulBiasAddFusionPass" for g in graphs for op in g.ops)
    [entry] = summary(tmp_path / "r")["dumps"]
    assert entry["path"] == str(tmp_path / "dumps") and entry["files"] > 0
    assert summary(tmp_path / "r")["options"]["enable_dump"] is True
    assert "dump " in done.stderr and "files" in done.stderr


@pytest.mark.slow
@pytest.mark.tf
def test_no_npu_dump_is_golden_and_changes_no_value(tmp_path):
    (tmp_path / "train.py").write_text(DENSE_TRAINING)
    plain = cli("run", "--no-npu", "--report-dir", "r0", "train.py", cwd=tmp_path)
    done = cli(
        "run", "--no-npu", "--dump", "golden", "--report-dir", "r1", "train.py", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == plain.stdout  # the losses, to the last digit
    steps = dumpfile.find_step_dirs(tmp_path / "golden")
    # the initialiser is run signature 1 (one step), the training step signature 2
    assert [(d.model_id, d.step) for d in steps] == [(1, 0), (2, 0), (2, 1), (2, 2)]
    assert {d.kind for d in steps} == {"golden"}
    names = {dumpfile.parse_golden(f).op_name for f in steps[1].files()}  # type: ignore[union-attr]
    assert {"y", "loss", "MatMul", "BiasAdd"} <= names


@pytest.mark.slow
@pytest.mark.tf
def test_dump_ge_graph_writes_the_graph_json_where_dump_graph_path_says(tmp_path):
    (tmp_path / "train.py").write_text(
        "import os\nos.environ['DUMP_GE_GRAPH'] = '2'\nos.environ['DUMP_GRAPH_PATH'] = 'g'\n"
        + DENSE_TRAINING
    )
    done = cli("run", "--report-dir", "r", "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # one build graph per run signature (the initialiser 1, the training step 2), as GE's
    # .txt and atc's .txt.json of it, which precision_tool takes when it is the newer
    graphs = tmp_path / "g"
    assert sorted(p.name for p in graphs.iterdir()) == [
        "ge_proto_00000001_Build.txt", "ge_proto_00000001_Build.txt.json",
        "ge_proto_00000002_Build.txt", "ge_proto_00000002_Build.txt.json",
    ]  # fmt: skip
    for n in (1, 2):
        text = graphs / f"ge_proto_{n:08d}_Build.txt"
        assert text.with_name(text.name + ".json").stat().st_mtime_ns > text.stat().st_mtime_ns
    [train] = gegraph.load(graphs / "ge_proto_00000002_Build.txt.json")
    assert train.name == "GeOp1_0_2"  # the name of its dump folder (model_name)
    assert any(op.pass_name for op in train.ops)
    text = (graphs / "ge_proto_00000002_Build.txt").read_text()
    assert text.startswith('graph {\n  name: "GeOp1_0_2"\n  op {\n')


# -- a full disk: the error on stderr, exit 1, run_summary.json, no cut-short file ------------

BIG = """\
import numpy as np
import tensorflow as tf
x = tf.compat.v1.placeholder(tf.float32, [256, 512])
w = tf.compat.v1.Variable(np.ones([512, 512], np.float32))
loss = tf.reduce_mean(tf.matmul(x, w))
train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.compat.v1.Session() as s:
    s.run(tf.compat.v1.global_variables_initializer())
    for _ in range(3):
        print("loss", s.run([train, loss], {x: np.ones([256, 512], np.float32)})[1])
"""


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs (root only): the 1 MB variable and the dumped tensors do not fit."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a 1 MB tmpfs (a real full disk)")
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], check=False
    )
    if done.returncode != 0:
        pytest.skip("mount -t tmpfs is not permitted here")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.slow  # starts tf2npu processes
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--record", "--report-dir", "{disk}/rec"], "tf2npu run: error: cannot write '{disk}/rec/variables.npz': No space left on device; free space on that disk (or give a folder on another), then run again"),
        (["--dump", "{disk}/dump", "--report-dir", "rep"], "tf2npu run: error: writing the dump under {disk}/dump failed: [Errno 28] No space left on device; free space on that disk (or give a folder on another), then run again"),
    ],
    ids=["record", "dump"],
)  # fmt: skip
def test_a_full_disk_ends_the_run_with_the_error(
    tmp_path: Path, full_disk: Path, flags: list[str], message: str
) -> None:
    (tmp_path / "big.py").write_text(BIG)
    argv = ["run", "--no-npu", *(f.format(disk=full_disk) for f in flags), "big.py"]
    ended = run_tf2npu(argv, tmp_path, timeout=240)
    assert (ended.code, ended.left, ended.traceback) == (1, (), False), ended.err
    assert message.format(disk=full_disk) in ended.err.splitlines()
    report = Path(flags[flags.index("--report-dir") + 1].format(disk=full_disk))
    summary = json.loads((tmp_path / report / "run_summary.json").read_text())
    assert summary["exit_status"] == 0 and summary["write_errors"]
    assert not list(full_disk.glob("**/*.partial"))
    if "--dump" in flags:
        assert summary["dumps"][0]["complete"] is False
        for raw in full_disk.glob("dump/**/*.*.*.*"):  # what is there is whole
            if raw.is_file() and dumpfile.parse_npu(raw.name) is not None:
                dumpfile.read_nano(raw)


PROFILED = """\
import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *
x = tf.placeholder(tf.float32, [64, 128], name="x")
w = tf.Variable(np.ones([128, 128], np.float32) / 128, name="w")
loss = tf.reduce_mean(tf.matmul(x, w), name="loss")
train = tf.train.GradientDescentOptimizer(1e-6).minimize(loss)
with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(5):
        sess.run([train, loss], {x: np.ones([64, 128], np.float32)})
"""


@pytest.mark.slow  # starts tf2npu processes
def test_a_full_disk_under_profile_is_named_and_the_profile_marked(
    tmp_path: Path, full_disk: Path
) -> None:
    (tmp_path / "train.py").write_text(PROFILED)
    (full_disk / "filler").write_bytes(b"\0" * (1000 << 10))
    ended = run_tf2npu(["run", "--profile", f"{full_disk}/prof", "train.py"], tmp_path, timeout=240)
    assert (ended.code, ended.left, ended.traceback) == (1, (), False), ended.err
    lines = ended.err.splitlines()
    assert any(
        line.startswith(f"tf2npu run: error: cannot write '{full_disk}/prof/PROF_")
        and line.endswith(
            "': No space left on device; free space on that disk (or give a folder on another), then run again"
        )
        for line in lines
    ), ended.err
    assert "not analysed:" in ended.err and "profile.html" not in ended.err
    summary = json.loads((tmp_path / "tf2npu-run" / "run_summary.json").read_text())
    assert summary["profiles"][0]["complete"] is False

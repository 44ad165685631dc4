"""``tf2npu doctor`` from the command line: output, --json keys, stdin, exit codes, usage."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tf2npu.cli.main import main
from tf2npu.testing.hostile import run_tf2npu

TABLE = "OP_REQUIRES failed at lookup_table_op.cc:809 : Failed precondition: Table not initialized."


def doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["doctor", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_an_error_symptom_is_printed_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "run.log"
    log.write_text(f"2021-03-19 W tensorflow/core/framework/op_kernel.cc:1651] {TABLE}\n")
    code, out, _ = doctor(capsys, str(log))
    assert code == 1
    assert "error   table_split" in out
    assert 'custom_op.parameter_map["mix_compile_mode"].b = True' in out
    assert f"seen    {log}:1: " in out
    assert out.rstrip().endswith("doctor: 1 error")


def test_json_has_stable_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    log.write_text("node while/Merge(Merge) is v1 control operator, which is not supported\n")
    code, out, _ = doctor(capsys, str(log), "--json")
    data = json.loads(out)
    assert code == 1
    assert list(data) == ["symptoms", "counts"]
    assert data["counts"] == {"error": 1, "warning": 0, "info": 0}
    [symptom] = data["symptoms"]
    assert set(symptom) >= {"id", "cause", "fix", "where", "severity", "source"}
    assert symptom["id"] == "v1_control_dynamic_shape"
    assert symptom["where"] == {
        "node": "while/Merge",
        "op_type": "Merge",
        "file": None,
        "line": None,
    }
    assert "tf.enable_control_flow_v2()" in symptom["fix"]


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("EI0006: Getting socket times out.\n"))
    code, out, _ = doctor(capsys, "-", "--json")
    assert (code, json.loads(out)["symptoms"][0]["id"]) == (1, "hccl_socket_timeout")


def test_warnings_only_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "train.py"
    script.write_text("import tensorflow as tf\nK = tf.keras.backend\nz = K.zeros((2,))\n")
    code, out, _ = doctor(capsys, "--script", str(script))
    assert code == 0
    assert "warning keras_zeros_uninitialized" in out
    assert f"{script}:3" in out


def test_nothing_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("")
    code, out, _ = doctor(capsys, str(empty))
    assert code == 0
    assert "no known symptom found (1 of the logs is empty)" in out
    code, out, _ = doctor(capsys, str(empty), "--json")
    assert json.loads(out) == {"symptoms": [], "counts": {"error": 0, "warning": 0, "info": 0}}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "nothing to read; give a LOG file"),
        (("missing.log",), "LOG 'missing.log' does not exist"),
        (("-", "-"), "given twice"),
        (("--run-dir", "nowhere"), "--run-dir 'nowhere' does not exist"),
        (("--script", "nope.py"), "--script 'nope.py' does not exist"),
    ],
)
def test_usage_errors_exit_2(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    code, out, err = doctor(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("tf2npu doctor: error: ")
    assert message in err


def test_help_teaches_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    out = capsys.readouterr().out
    assert "tf2npu doctor run.log --run-dir runs/a" in out
    assert "exit codes: 1 when a symptom at error level" in out


# -- hostile run folders and scripts: exit 2, the file named, no hang, no traceback -----------


def _summary(text: str) -> Any:
    return lambda run: (run / "run_summary.json").write_text(text)


def _swap_summary(make: Any) -> Any:
    def swap(run: Path) -> None:
        (run / "run_summary.json").unlink()
        make(run / "run_summary.json")

    return swap


@pytest.mark.parametrize(
    ("damage", "argv", "message"),
    [
        (_summary("[" * 100_000), ["--run-dir", "run"], "tf2npu doctor: error: run/run_summary.json is not valid JSON (run/run_summary.json: the JSON nests too deep"),
        (_summary('{"nonfinite": {"fetches": 5}}'), ["--run-dir", "run"], "tf2npu doctor: error: run/run_summary.json is JSON, but not as tf2npu run writes it (nonfinite.fetches = 5); give the --report-dir of a tf2npu run, or remove the edited file"),
        (_summary('{"injected_faults": 5}'), ["--run-dir", "run"], "tf2npu doctor: error: run/run_summary.json is JSON, but not as tf2npu run writes it (injected_faults = 5)"),
        (_swap_summary(os.mkfifo), ["--run-dir", "run"], "tf2npu doctor: error: run/run_summary.json cannot be read (a FIFO, not a regular file); give the --report-dir of a tf2npu run"),
        (_swap_summary(lambda p: p.symlink_to("/dev/zero")), ["--run-dir", "run"], "tf2npu doctor: error: run/run_summary.json cannot be read (a character device, not a regular file)"),
        (lambda run: os.mkfifo(run / "op_summary_0_1_1.csv"), ["--run-dir", "run"], "tf2npu doctor: error: run/op_summary_0_1_1.csv cannot be read (a FIFO, not a regular file)"),
        (lambda run: None, ["--script", "/dev/zero"], "tf2npu doctor: error: --script '/dev/zero' is a character device, not a regular file; give the training script's .py file"),
        (lambda run: os.mkfifo(run.parent / "fifo"), ["--run-dir", "fifo"], "tf2npu doctor: error: --run-dir 'fifo' is a FIFO, not a folder; give the --report-dir of a tf2npu run"),
        (lambda run: os.mkfifo(run / "train.py"), ["--script", "run/train.py"], "tf2npu doctor: error: --script 'run/train.py' is a FIFO, not a regular file; give the training script's .py file"),
    ],
    ids=["deep", "fetches-5", "faults-5", "fifo", "dev-zero", "fifo-csv", "script-dev-zero", "fifo-run-dir", "script-fifo"],
)  # fmt: skip
def test_hostile_run_folders_and_scripts(
    tmp_path: Path, damage: Any, argv: list[str], message: str
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run_summary.json").write_text('{"exit_status": 0}')
    damage(run)
    ended = run_tf2npu(["doctor", *argv], tmp_path, timeout=60)
    assert (ended.code, ended.out, ended.left, ended.traceback) == (2, "", (), False), ended.err
    assert ended.err.startswith(message)

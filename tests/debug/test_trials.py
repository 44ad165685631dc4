"""Trials: the child's command line and environment, its status, log and timeout."""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import pytest

import tf2npu
from tf2npu.debug.trials import (
    TIMED_OUT,
    Trial,
    TrialResult,
    TrialTimeout,
    run_trial,
    script_package_root,
    trial_command,
    trial_environment,
)

ROOT = str(Path(tf2npu.__file__).resolve().parents[1])


def test_command_puts_tf2npu_flags_before_the_script(tmp_path: Path) -> None:
    trial = Trial(
        Path("/s/train.py"),
        ("--steps", "3"),
        report_dir=tmp_path / "r",
        npu=False,
        options=("precision_mode=force_fp32",),
        flags=("--deterministic",),
    )
    assert trial_command(trial) == [
        sys.executable, "-m", "tf2npu", "run", "--quiet", "--record",
        "--report-dir", str(tmp_path / "r"), "--no-npu",
        "--option", "precision_mode=force_fp32", "--deterministic",
        "--", "/s/train.py", "--steps", "3",
    ]  # fmt: skip


def test_npu_trial_has_no_no_npu_flag(tmp_path: Path) -> None:
    command = trial_command(Trial(Path("t.py"), report_dir=tmp_path))
    assert "--no-npu" not in command
    assert command[-2:] == ["--", "t.py"]


def test_environment_of_a_deterministic_trial() -> None:
    trial = Trial(Path("t.py"), report_dir=Path("r"), options=("deterministic=1",),
                  env={"TF2NPU_X": "1"})  # fmt: skip
    env = trial_environment(trial, {"PYTHONPATH": "/a", "TF_ENABLE_ONEDNN_OPTS": "1"})
    assert env == {
        "PYTHONPATH": os.pathsep.join([ROOT, "/a"]),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "TF_NUM_INTEROP_THREADS": "1",
        "TF2NPU_X": "1",
    }


def test_environment_keeps_the_callers_choices() -> None:
    trial = Trial(Path("t.py"), report_dir=Path("r"))
    base = {"PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "0", "TF_ENABLE_ONEDNN_OPTS": "1"}
    assert trial_environment(trial, base) == base
    assert not trial.deterministic
    assert Trial(Path("t.py"), report_dir=Path("r"), flags=("--deterministic",)).deterministic


def test_a_failing_trial_keeps_its_status_and_log(tmp_path: Path) -> None:
    result = run_trial(Trial(tmp_path / "missing.py", report_dir=tmp_path / "r"))
    assert result.status == 2
    assert not result.ok
    assert result.summary == {}
    assert result.log == tmp_path / "r" / "trial.log"
    assert "missing.py' does not exist" in result.log_tail()
    assert result.failure().startswith(
        f"no run summary (the child exited 2); its log: SCRIPT '{tmp_path / 'missing.py'}' does "
        "not exist"
    )


def test_timeout_stops_the_child(tmp_path: Path) -> None:
    script = tmp_path / "sleep.py"
    script.write_text("import time\ntime.sleep(60)\n", encoding="utf-8")
    result = run_trial(Trial(script, report_dir=tmp_path / "r"), timeout=0.5)
    assert result.status == TIMED_OUT
    assert result.seconds < 30


def test_records_of_an_earlier_trial_are_removed(tmp_path: Path) -> None:
    report = tmp_path / "r"
    report.mkdir()
    (report / "steps.jsonl").write_text("{}\n", encoding="utf-8")
    (report / "run_summary.json").write_text('{"exit_status": 0}', encoding="utf-8")
    result = run_trial(Trial(tmp_path / "missing.py", report_dir=report))
    assert not (report / "steps.jsonl").exists()
    assert result.summary == {}


def test_failure_is_the_exception_of_the_last_traceback(tmp_path: Path) -> None:
    log = tmp_path / "trial.log"
    log.write_text(
        "WARNING: deprecated\nTraceback (most recent call last):\n  File 'a.py', line 1\n"
        "    x()\nKeyError: 'k'\n\nDuring handling...\nlast line\n",
        encoding="utf-8",
    )
    assert TrialResult(1, tmp_path, {}, 1.0, log).failure() == (
        "no run summary (the child exited 1); its log: KeyError: 'k'"
    )
    log.write_text("just this\n", encoding="utf-8")
    assert TrialResult(-9, tmp_path, {}, 1.0, log).failure() == (
        "no run summary (the child exited -9); its log: just this"
    )
    assert TrialResult(TIMED_OUT, tmp_path, {}, 1.0, log).failure() == "stopped by the timeout"


@pytest.mark.parametrize(
    ("error", "said"),
    [
        ({"kind": "exception", "type": "KeyError", "message": "'k'", "where": "/s/a.py:3"},
         "KeyError: 'k' (/s/a.py:3)"),
        ({"kind": "usage", "type": "ConfigError", "message": "precision_mode = 'x' is not valid",
          "where": "/s/a.py:7"}, "precision_mode = 'x' is not valid (/s/a.py:7)"),
        ({"kind": "exit", "type": "SystemExit", "message": "", "where": "/s/a.py:9"},
         "the script called sys.exit with a failure status (/s/a.py:9)"),
        ({"kind": "exit", "type": "SystemExit", "message": "bad data dir", "where": None},
         "bad data dir"),
        ({"kind": "write", "type": "OSError", "message": "cannot write 'v.npz': No space",
          "where": None}, "cannot write 'v.npz': No space"),
        ({"kind": "interrupted", "type": "KeyboardInterrupt", "message": "", "where": None},
         "KeyboardInterrupt"),
    ],
)  # fmt: skip
def test_failure_is_the_summarys_error_section_not_the_log(tmp_path: Path, error, said) -> None:
    log = tmp_path / "trial.log"
    log.write_text("tf2npu run: error: not this\n", encoding="utf-8")
    summary = {"exit_status": 1, "error": error}
    assert TrialResult(1, tmp_path, summary, 1.0, log).failure() == said


@pytest.mark.parametrize(
    ("given", "finished", "seconds", "text"),
    [
        (None, [], 3600.0, "per-trial timeout: 3600 s for the reference run, then 4x its time (at least 300 s); --timeout S sets one"),
        (None, [(0, 100.0)], 400.0, None),
        (None, [(0, 10.0)], 300.0, None),
        (None, [(1, 1000.0), (0, 200.0), (0, 9.0)], 800.0, None),
        (None, [(0, math.nan)], 3600.0, None),
        (60.0, [(0, 1000.0)], 60.0, "per-trial timeout 60 s (--timeout S)"),
    ],
)  # fmt: skip
def test_the_default_timeout_follows_the_reference_run(
    given: float | None, finished: list[tuple[int, float]], seconds: float, text: str | None
) -> None:
    timeouts = TrialTimeout(given)
    for status, took in finished:
        timeouts.note(status, took)
    assert timeouts.seconds() == seconds
    if text is not None:
        assert timeouts.describe() == text


@pytest.mark.slow
def test_what_the_script_left_running_is_stopped_with_the_trial(tmp_path: Path) -> None:
    marker = f"tf2npu-test-{os.getpid()}-leftover"
    script = tmp_path / "leaves.py"
    script.write_text(
        f"import subprocess\nsubprocess.Popen(['sh', '-c', 'sleep 300 # {marker}'])\n"
    )
    result = run_trial(Trial(script, report_dir=tmp_path / "r", npu=False), timeout=120)
    assert result.status == 0, result.log_tail()
    time.sleep(0.5)
    assert _running(marker) == []


def _running(needle: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if needle in line and state != "Z":
            found.append(line)
    return found


def _package(root: Path, name: str) -> Path:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    script = root / name / "run_pretraining.py"
    script.write_text("")
    return script


def test_a_script_in_a_package_gets_its_own_copy_first(tmp_path: Path) -> None:
    original = _package(tmp_path / "a", "albert")
    migrated = _package(tmp_path / "m", "albert")
    base = {"PYTHONPATH": str(tmp_path / "a")}
    env = trial_environment(Trial(migrated, report_dir=tmp_path / "r"), base)
    assert env["PYTHONPATH"] == os.pathsep.join([ROOT, str(tmp_path / "m"), str(tmp_path / "a")])
    env = trial_environment(Trial(original, report_dir=tmp_path / "r"), base)
    assert env["PYTHONPATH"] == os.pathsep.join([ROOT, str(tmp_path / "a")])


def test_the_root_of_a_nested_package_is_above_the_outermost(tmp_path: Path) -> None:
    (tmp_path / "top").mkdir()
    (tmp_path / "top" / "__init__.py").write_text("")
    script = _package(tmp_path / "top", "nmt")
    assert script_package_root(script) == tmp_path
    assert script_package_root(tmp_path / "top" / "x.py") == tmp_path
    loose = tmp_path / "loose.py"
    assert script_package_root(loose) is None
    assert trial_environment(Trial(loose, report_dir=tmp_path / "r"), {}) == {
        "PYTHONPATH": ROOT,
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }

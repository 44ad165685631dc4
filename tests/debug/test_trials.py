"""Trials: the child's run spec and environment, its status, log, failure and timeout."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import pytest

import tf2npu
from tf2npu.artifacts import run_spec
from tf2npu.artifacts.run_summary import RunSummary
from tf2npu.config.overrides import EngineOverrides, KeepFp32
from tf2npu.debug.trials import (
    TIMED_OUT,
    Trial,
    TrialResult,
    TrialTimeout,
    run_trial,
    script_package_root,
    trial_environment,
    trial_spec,
)
from tf2npu.runtime.job import RunSpec

ROOT = str(Path(tf2npu.__file__).resolve().parents[1])


def _trial(
    script: Path | str, report_dir: Path | str = "r", args: tuple[str, ...] = (), **kw: Any
) -> Trial:
    return Trial(trial_spec(Path(script), args, report_dir=Path(report_dir), **kw))


def test_a_trial_is_the_spec_tf2npu_run_quiet_record_makes(tmp_path: Path) -> None:
    engine = EngineOverrides(keep_fp32=KeepFp32(frozenset({"loss/Sum"}), "a trial"))
    spec = trial_spec(
        Path("/s/train.py"),
        ("--steps", "3"),
        report_dir=tmp_path / "r",
        options=("precision_mode=force_fp32",),
        deterministic=True,
        max_steps=3,
        engine=engine,
    )
    assert spec == RunSpec(
        script=Path("/s/train.py"),
        script_args=("--steps", "3"),
        report_dir=tmp_path / "r",
        options=("precision_mode=force_fp32", "deterministic=1"),
        npu=True,
        execution="host",
        deterministic=True,
        record=True,
        quiet=True,
        max_steps=3,
        engine=engine,
    )
    stock = trial_spec(Path("t.py"), report_dir=Path("r"), npu=False, deterministic=True)
    assert (stock.options, stock.deterministic) == ((), True)  # no NPU session to tell
    assert stock.script == Path("t.py").absolute() and stock.report_dir == Path("r").absolute()


def test_environment_of_a_deterministic_trial() -> None:
    spec = trial_spec(Path("t.py"), report_dir=Path("r"), options=("deterministic=1",))
    trial = Trial(spec, env={"TF2NPU_X": "1"})
    env = trial_environment(trial, {"PYTHONPATH": "/a", "TF_ENABLE_ONEDNN_OPTS": "1"})
    assert env == {
        "PYTHONPATH": os.pathsep.join([ROOT, "/a"]),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "TF_NUM_INTEROP_THREADS": "1",
        "TF2NPU_X": "1",
    }


def test_environment_keeps_the_callers_choices() -> None:
    trial = _trial("t.py")
    base = {"PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "0", "TF_ENABLE_ONEDNN_OPTS": "1"}
    assert trial_environment(trial, base) == base
    assert not trial.deterministic
    assert _trial("t.py", npu=False, deterministic=True).deterministic


def test_a_trial_that_never_starts_says_why_as_data(tmp_path: Path) -> None:
    result = run_trial(_trial(tmp_path / "missing.py", tmp_path / "r"))
    assert result.status == 2
    assert not result.ok
    assert result.summary is None
    assert result.log == tmp_path / "r" / "trial.log"
    spec_file = tmp_path / "r" / "run_spec.json"
    why = (
        f"run spec {str(spec_file)!r}: script = '{tmp_path / 'missing.py'}' is not an existing "
        "file; write the spec of an existing training script"
    )
    assert result.failure() == why
    assert json.loads((tmp_path / "r" / "start_error.json").read_text()) == {
        "schema": 1,
        "exit_code": 2,
        "error": {"kind": "usage", "type": "UsageError", "message": why, "where": None},
    }
    assert f"tf2npu run: error: {why}" in result.log_tail()


def test_the_spec_file_is_the_trials_spec(tmp_path: Path) -> None:
    trial = _trial(tmp_path / "missing.py", tmp_path / "r", options=("enable_dump=false",))
    run_trial(trial)
    assert run_spec.read(RunSpec, tmp_path / "r" / "run_spec.json") == trial.spec


@pytest.mark.slow
def test_a_trial_runs_its_spec_in_a_child(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import sys\nprint('args', sys.argv[1:])\n", encoding="utf-8")
    result = run_trial(_trial(script, tmp_path / "r", ("--lr", "0.1"), npu=False))
    assert result.status == 0, result.log_tail()
    assert "args ['--lr', '0.1']" in result.log_tail()
    assert result.summary is not None
    assert result.summary.exit_status == 0 and result.summary.error is None
    assert result.summary.record is not None  # a trial is a recorded run


def test_timeout_stops_the_child(tmp_path: Path) -> None:
    script = tmp_path / "sleep.py"
    script.write_text("import time\ntime.sleep(60)\n", encoding="utf-8")
    result = run_trial(_trial(script, tmp_path / "r"), timeout=0.5)
    assert result.status == TIMED_OUT
    assert result.seconds < 30


def test_records_of_an_earlier_trial_are_removed(tmp_path: Path) -> None:
    report = tmp_path / "r"
    report.mkdir()
    (report / "steps.jsonl").write_text("{}\n", encoding="utf-8")
    (report / "run_summary.json").write_text('{"exit_status": 0}', encoding="utf-8")
    (report / "start_error.json").write_text("{}", encoding="utf-8")
    result = run_trial(_trial(tmp_path / "missing.py", report))
    assert not (report / "steps.jsonl").exists()
    assert result.summary is None


def test_a_child_that_died_is_said_with_the_last_line_of_its_log(tmp_path: Path) -> None:
    log = tmp_path / "trial.log"
    log.write_text("Traceback (most recent call last):\n  x()\nKeyError: 'k'\n", encoding="utf-8")
    assert TrialResult(1, tmp_path, None, 1.0, log).failure() == (
        "no run summary (the child exited 1); the last line of its log: KeyError: 'k'"
    )
    log.write_text("", encoding="utf-8")
    assert TrialResult(-9, tmp_path, None, 1.0, log).failure() == (
        "no run summary (the child was killed by signal 9)"
    )
    assert TrialResult(TIMED_OUT, tmp_path, None, 1.0, log).failure() == "stopped by the timeout"
    summary = {"exit_status": 3, "error": None}
    assert TrialResult(3, tmp_path, RunSummary.from_json(summary), 1.0, log).failure() == (
        "the run exited 3 with no error recorded"
    )


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
    assert TrialResult(1, tmp_path, RunSummary.from_json(summary), 1.0, log).failure() == said


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
    result = run_trial(_trial(script, tmp_path / "r", npu=False), timeout=120)
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
    env = trial_environment(_trial(migrated, tmp_path / "r"), base)
    assert env["PYTHONPATH"] == os.pathsep.join([ROOT, str(tmp_path / "m"), str(tmp_path / "a")])
    env = trial_environment(_trial(original, tmp_path / "r"), base)
    assert env["PYTHONPATH"] == os.pathsep.join([ROOT, str(tmp_path / "a")])


def test_the_root_of_a_nested_package_is_above_the_outermost(tmp_path: Path) -> None:
    (tmp_path / "top").mkdir()
    (tmp_path / "top" / "__init__.py").write_text("")
    script = _package(tmp_path / "top", "nmt")
    assert script_package_root(script) == tmp_path
    assert script_package_root(tmp_path / "top" / "x.py") == tmp_path
    loose = tmp_path / "loose.py"
    assert script_package_root(loose) is None
    assert trial_environment(_trial(loose, tmp_path / "r"), {}) == {
        "PYTHONPATH": ROOT,
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }

"""``tf2npu.runtime.job``: a run is a value handed to one entry point, which returns its outcome.

Each case runs in a child Python (the run enters the TF 1.15 environment and hooks sessions in
its process, as ``tf2npu run`` does), calling the library, not the command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.tf, pytest.mark.slow]

SCRIPT = """
import sys
import tensorflow as tf
x = tf.Variable(3.0)
loss = tf.square(x)
step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(2):
        sess.run(step)
    print("final_loss=%r" % float(sess.run(loss)))
sys.exit(int(sys.argv[1]))
"""

CALLER = """
import json, sys
from pathlib import Path
from tf2npu.runtime.job import RunSpec, run
spec = RunSpec(script=Path(sys.argv[1]).resolve(), script_args=(sys.argv[2],),
               report_dir=Path(sys.argv[3]).resolve(), options=(), npu=False,
               execution="host", record=True, quiet=True)
outcome = run(spec)
print("OUTCOME=" + json.dumps({"status": outcome.status, "path": str(outcome.summary_path),
      "complete": outcome.complete, "steps": outcome.summary.steps,
      "exit_status": outcome.summary.exit_status,
      "record": outcome.summary.to_json()["record"]}))
"""


def _run(tmp_path: Path, code: str) -> dict[str, object]:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
    done = subprocess.run(
        [sys.executable, "-c", CALLER, str(script), code, str(tmp_path / "report")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    [line] = [x for x in done.stdout.splitlines() if x.startswith("OUTCOME=")]
    return json.loads(line.removeprefix("OUTCOME="))


def test_a_spec_runs_and_its_outcome_carries_the_summary_it_wrote(tmp_path: Path) -> None:
    outcome = _run(tmp_path, "0")
    report = (tmp_path / "report").resolve()
    path = report / "run_summary.json"
    record = outcome.pop("record")
    assert outcome == {"status": 0, "path": str(path), "complete": True,
                       "steps": 2, "exit_status": 0}  # fmt: skip
    assert record == {"steps": str(report / "steps.jsonl"), "page": str(report / "steps.html"),
                      "variables": str(report / "variables.npz"), "stopped_at_step": None}  # fmt: skip
    assert (report / "steps.html").is_file()
    assert json.loads(path.read_text())["steps"] == 2
    assert (tmp_path / "report" / "steps.jsonl").is_file()  # record=True: the recorder ran


def test_the_scripts_exit_status_is_the_outcomes_not_the_callers(tmp_path: Path) -> None:
    outcome = _run(tmp_path, "3")
    assert (outcome["status"], outcome["exit_status"]) == (3, 3)


CHILD_SCRIPT = """
import sys
import tensorflow as tf
x = tf.constant(2.0) * 3.0
with tf.Session() as sess:
    print("value=%r" % float(sess.run(x)))
if sys.argv[1] == "raise":
    def load(n):
        raise ValueError("bad batch size %d" % n)
    load(-1)
sys.exit(int(sys.argv[1]))
"""


def _child(tmp_path: Path, argument: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    """``python -m tf2npu.runtime.job SPEC.json`` on a spec file, as a tool starts a child."""
    from tf2npu.artifacts import run_spec
    from tf2npu.runtime.job import RunSpec

    script = tmp_path / "train.py"
    script.write_text(CHILD_SCRIPT)
    report = tmp_path / "report"
    spec = RunSpec(script=script, script_args=(argument,), report_dir=report, options=(),
                   npu=True, execution="host", quiet=True)  # fmt: skip
    run_spec.write(tmp_path / run_spec.SPEC_FILE, spec)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
    done = subprocess.run(
        [sys.executable, "-m", "tf2npu.runtime.job", str(tmp_path / run_spec.SPEC_FILE)],
        capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    return done, json.loads((report / "run_summary.json").read_text())


def test_a_child_runs_its_spec_file_and_exits_with_the_scripts_status(tmp_path: Path) -> None:
    done, summary = _child(tmp_path, "0")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "value=6.0" in done.stdout
    assert (summary["exit_status"], summary["error"], summary["write_errors"]) == (0, None, [])


def test_the_summary_file_reads_back_as_the_summary_the_run_made(tmp_path: Path) -> None:
    from tf2npu.artifacts.run_summary import RunSummary

    done, summary = _child(tmp_path, "0")
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(summary)[:3] == ["schema_version", "sessions", "stock_sessions"]
    assert summary["stock_sessions"] == 1
    assert RunSummary.from_json(summary).to_json() == summary  # every key, in its order


def test_a_childs_sys_exit_3_is_its_status_and_an_exit_error(tmp_path: Path) -> None:
    done, summary = _child(tmp_path, "3")
    assert done.returncode == 3, done.stderr[-2000:]
    assert summary["exit_status"] == 3
    assert summary["error"] == {"kind": "exit", "type": "SystemExit", "message": "",
                                "where": f"{tmp_path / 'train.py'}:11"}  # fmt: skip


def test_a_childs_exception_is_the_error_section_and_its_traceback_stays(tmp_path: Path) -> None:
    done, summary = _child(tmp_path, "raise")
    assert done.returncode == 1
    assert summary["error"] == {"kind": "exception", "type": "ValueError",
                                "message": "bad batch size -1",
                                "where": f"{tmp_path / 'train.py'}:9"}  # fmt: skip
    assert done.stderr.endswith("ValueError: bad batch size -1\n")  # as tf2npu run prints it


def test_child_command_runs_the_job_module_on_the_spec_file(tmp_path: Path) -> None:
    from tf2npu.runtime.job import child_command

    spec_file = tmp_path / "run_spec.json"
    assert child_command(spec_file) == [sys.executable, "-m", "tf2npu.runtime.job", str(spec_file)]


def test_child_command_is_the_one_child_run_command_line() -> None:
    # No tool rebuilds a `tf2npu run` command line (issue 21): trials and ranks write a spec file
    # and start child_command on it. testing/hostile.py starts the CLI as a user would.
    import re

    import tf2npu
    from tf2npu.runtime.job import child_command

    src = Path(tf2npu.__file__).parent
    allowed = {src / "runtime" / "job.py", src / "testing" / "hostile.py"}
    spelled = re.compile(r"[\"']-m[\"'],\s*[\"']tf2npu")
    found = [
        str(path.relative_to(src))
        for path in sorted(src.rglob("*.py"))
        if path not in allowed and spelled.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []
    assert child_command(Path("/r/run_spec.json")) == [
        sys.executable, "-m", "tf2npu.runtime.job", "/r/run_spec.json"
    ]  # fmt: skip

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
      "complete": outcome.complete, "steps": outcome.summary["steps"],
      "exit_status": outcome.summary["exit_status"]}))
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
    path = tmp_path / "report" / "run_summary.json"
    assert outcome == {"status": 0, "path": str(path.resolve()), "complete": True,
                       "steps": 2, "exit_status": 0}  # fmt: skip
    assert json.loads(path.read_text())["steps"] == 2
    assert (tmp_path / "report" / "steps.jsonl").is_file()  # record=True: the recorder ran


def test_the_scripts_exit_status_is_the_outcomes_not_the_callers(tmp_path: Path) -> None:
    outcome = _run(tmp_path, "3")
    assert (outcome["status"], outcome["exit_status"]) == (3, 3)

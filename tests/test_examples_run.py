"""The bundled TF 1.15 examples run end to end: original under ``tf2npu run --no-npu``, migrated
copy under ``tf2npu run`` (NPU sessions through the graph engine).

Each run is a subprocess with ``--steps 3``; the twelve runs are started together by one
module fixture (two at a time) and each parametrized test checks one of them: exit status 0, a
finite ``final_loss=`` as the script's last word, and a ``run_summary.json`` that counts the
sessions the run was expected to create.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.tree import make_plan, migrate_tree

pytestmark = [pytest.mark.tf, pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tf1"
TF2NPU = Path(sys.executable).parent / "tf2npu"
NAMES = sorted(p.name for p in EXAMPLES.glob("[!_]*.py"))
MIX_COMPILE = {"input_pipeline_lookup_pyfunc.py"}
"""Migrated with mix_compile_mode=True, the fix its migration report gives for the lookup table."""
LOSS = re.compile(r"^final_loss=(\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    summary: dict[str, object]


def _run(script: Path, report_dir: Path, model_dir: Path, *, npu: bool) -> Run:
    command = [str(TF2NPU), "run", "--quiet", "--report-dir", str(report_dir)]
    command += [] if npu else ["--no-npu"]
    command += [str(script), "--steps", "3", "--model-dir", str(model_dir)]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
    env.pop("RANK_SIZE", None)
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=report_dir.parent, timeout=300
    )
    path = report_dir / "run_summary.json"
    summary = json.loads(path.read_text()) if path.exists() else {}
    return Run(done.returncode, done.stdout, done.stderr, summary)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, bool], Run]:
    """Every example, original (npu=False) and migrated (npu=True), run once."""
    work = tmp_path_factory.mktemp("examples_run")
    migrated = {}
    for mix in (False, True):
        out = work / ("migrated_mix" if mix else "migrated")
        migrate_tree(make_plan(EXAMPLES, out), MigrateOptions(mix_compile=mix))
        migrated[mix] = out
    jobs = []
    for name in NAMES:
        for npu in (False, True):
            folder = migrated[name in MIX_COMPILE] if npu else EXAMPLES
            tag = f"{Path(name).stem}.{'npu' if npu else 'stock'}"
            jobs.append(((name, npu), folder / name, work / tag, work / "models" / tag))
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda job: _run(job[1], job[2], job[3], npu=job[0][1]), jobs)
        return {job[0]: result for job, result in zip(jobs, results, strict=True)}


def _check_finished(run: Run) -> None:
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1].startswith("final_loss="), run.stdout[-500:]
    losses = LOSS.findall(run.stdout)
    assert math.isfinite(float(losses[-1])), losses
    assert run.summary["exit_status"] == 0


@pytest.mark.parametrize("name", NAMES)
def test_original_runs_with_stock_sessions(runs: dict[tuple[str, bool], Run], name: str) -> None:
    run = runs[(name, False)]
    _check_finished(run)
    assert run.summary["sessions"] == 0
    assert isinstance(run.summary["stock_sessions"], int) and run.summary["stock_sessions"] >= 1


@pytest.mark.parametrize("name", NAMES)
def test_migrated_copy_runs_through_the_engine(
    runs: dict[tuple[str, bool], Run], name: str
) -> None:
    run = runs[(name, True)]
    _check_finished(run)
    summary = run.summary
    # Keras and Estimator scripts open several sessions (train, evaluate, weight saving).
    assert isinstance(summary["sessions"], int) and summary["sessions"] >= 1
    assert isinstance(summary["geops"], int) and summary["geops"] >= 1
    assert isinstance(summary["steps"], int) and summary["steps"] >= 3  # Keras: whole epochs

"""The bundled TF 1.15 examples run end to end: original under ``tf2npu run --no-npu``, migrated
copy under ``tf2npu run`` (NPU sessions through the graph engine).

Each run is a subprocess with ``--steps 3``; the runs are started together by one module
fixture (two at a time) and each parametrized test checks one of them: exit status 0, a finite
``final_loss=`` as the script's last word, and a ``run_summary.json`` that counts the sessions
the run was expected to create.

Every example is also migrated with ``--mix-compile`` (what the migration report recommends
when it finds host-only ops, and so what a user of ``make demo`` tries next) and must run with
the same loss as its default migration: Savers over ref variables included (issue 10). The
demo's own run (``DEMO_RUN`` with ``allow_mix_precision``, as in the Makefile) is repeated on
the ``--mix-compile`` output.
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
DEMO_RUN = "transformer_block_gelu.py"  # the Makefile's DEMO_RUN
DEMO_OPTIONS = ("--option", "precision_mode=allow_mix_precision")
NO_CHECKPOINT = {"keras_tf1_session.py"}  # saves Keras weights (h5), not a TF checkpoint
LOSS = re.compile(r"^final_loss=(\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    summary: dict[str, object]
    model_dir: Path


def _run(
    script: Path, report_dir: Path, model_dir: Path, *, npu: bool, options: tuple[str, ...] = ()
) -> Run:
    command = [str(TF2NPU), "run", "--quiet", "--report-dir", str(report_dir), *options]
    command += [] if npu else ["--no-npu"]
    command += [str(script), "--steps", "3", "--model-dir", str(model_dir)]
    # oneDNN is not run-to-run deterministic under load: losses are compared exactly
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0", TF_ENABLE_ONEDNN_OPTS="0")
    env.pop("RANK_SIZE", None)
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=report_dir.parent, timeout=300
    )
    path = report_dir / "run_summary.json"
    summary = json.loads(path.read_text()) if path.exists() else {}
    return Run(done.returncode, done.stdout, done.stderr, summary, model_dir)


Key = tuple[str, str]
"""(example, variant): ``stock`` the original with --no-npu, ``npu`` its migration (with
--mix-compile for MIX_COMPILE), ``mix`` its --mix-compile migration, ``demo`` the demo's run of
the --mix-compile migration."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[Key, Run]:
    """Every example, original and migrated (with and without --mix-compile), run once."""
    work = tmp_path_factory.mktemp("examples_run")
    migrated = {}
    for mix in (False, True):
        out = work / ("migrated_mix" if mix else "migrated")
        migrate_tree(make_plan(EXAMPLES, out), MigrateOptions(mix_compile=mix))
        migrated[mix] = out
    jobs: list[tuple[Key, Path, tuple[str, ...]]] = []
    for name in NAMES:
        jobs.append(((name, "stock"), EXAMPLES / name, ()))
        jobs.append(((name, "npu"), migrated[name in MIX_COMPILE] / name, ()))
        if name not in MIX_COMPILE:
            jobs.append(((name, "mix"), migrated[True] / name, ()))
    jobs.append(((DEMO_RUN, "demo"), migrated[True] / DEMO_RUN, DEMO_OPTIONS))

    def start(job: tuple[Key, Path, tuple[str, ...]]) -> Run:
        (name, variant), script, options = job
        tag = f"{Path(name).stem}.{variant}"
        report, model = work / tag, work / "models" / tag
        return _run(script, report, model, npu=variant != "stock", options=options)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(start, jobs)
        return {job[0]: result for job, result in zip(jobs, results, strict=True)}


def _check_finished(run: Run) -> None:
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1].startswith("final_loss="), run.stdout[-500:]
    losses = LOSS.findall(run.stdout)
    assert math.isfinite(float(losses[-1])), losses
    assert run.summary["exit_status"] == 0


@pytest.mark.parametrize("name", NAMES)
def test_original_runs_with_stock_sessions(runs: dict[Key, Run], name: str) -> None:
    run = runs[(name, "stock")]
    _check_finished(run)
    assert run.summary["sessions"] == 0
    assert isinstance(run.summary["stock_sessions"], int) and run.summary["stock_sessions"] >= 1


@pytest.mark.parametrize("name", NAMES)
def test_migrated_copy_runs_through_the_engine(runs: dict[Key, Run], name: str) -> None:
    _check_engine_run(runs[(name, "npu")])


@pytest.mark.parametrize("name", sorted(set(NAMES) - MIX_COMPILE))
def test_mix_compile_migration_runs_with_the_same_loss(runs: dict[Key, Run], name: str) -> None:
    """Savers over ref variables included: SaveV2 reads the variables' values (issue 10)."""
    run, default = runs[(name, "mix")], runs[(name, "npu")]
    _check_engine_run(run)
    assert LOSS.findall(run.stdout) == LOSS.findall(default.stdout)
    if name not in NO_CHECKPOINT:
        assert _checkpoint(run.model_dir) == _checkpoint(default.model_dir)


def _checkpoint(model_dir: Path) -> dict[str, list[object]]:
    """Every variable of the latest checkpoint in ``model_dir``, as nested lists."""
    import tensorflow as tf

    path = tf.train.latest_checkpoint(str(model_dir))
    assert path is not None, f"no checkpoint in {model_dir}"
    reader = tf.train.load_checkpoint(path)
    names = sorted(reader.get_variable_to_shape_map())
    assert names, path
    return {n: reader.get_tensor(n).tolist() for n in names}


def test_the_demo_run_works_on_the_mix_compile_migration(runs: dict[Key, Run]) -> None:
    _check_engine_run(runs[(DEMO_RUN, "demo")])


def _check_engine_run(run: Run) -> None:
    _check_finished(run)
    summary = run.summary
    # Keras and Estimator scripts open several sessions (train, evaluate, weight saving).
    assert isinstance(summary["sessions"], int) and summary["sessions"] >= 1
    assert isinstance(summary["geops"], int) and summary["geops"] >= 1
    assert isinstance(summary["steps"], int) and summary["steps"] >= 3  # Keras: whole epochs

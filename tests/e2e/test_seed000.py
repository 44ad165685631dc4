"""Seed 000's three error cases, run with ``tf2npu run`` and diagnosed with ``tf2npu doctor``.

Each script reproduces one case in a few lines (``seed000/``), and each fails here as on the
device: the graph engine reports a lookup table initialised on the device but looked up in the
input pipeline (01, ``table_split``), a variable the pipeline reads on the host but the device
initialises (02, ``variable_in_preprocessing``) and a v1 while loop whose variable grows every
iteration (03, ``v1_control_dynamic_shape``), so ``tf2npu run`` stops with exit status 2. The
test checks that and that doctor gives the seed's fix for all three from the log.
``tests/debug/doctor/test_seed000.py`` checks the same on logs recorded from these runs,
without TensorFlow.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.tf,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs TensorFlow"),
]

SCRIPTS = Path(__file__).parent / "seed000"
CASES = {
    # case: (exit status of tf2npu run, doctor's symptom, severity, a piece of the seed's fix)
    "case01_table": (2, "table_split", "error", '["mix_compile_mode"].b = True'),
    "case02_variable": (2, "variable_in_preprocessing", "error", "`batch_size = 64`"),
    "case03_v1cond": (2, "v1_control_dynamic_shape", "error", "tf.enable_control_flow_v2()"),
}


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tf2npu", *args]


def env() -> dict[str, str]:
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0"}


def run_case(case: str, out: Path) -> tuple[int, Path]:
    report = out / case
    done = subprocess.run(
        command("run", "--report-dir", str(report), str(SCRIPTS / f"{case}.py")),
        capture_output=True, text=True, timeout=600, env=env(),
    )  # fmt: skip
    log = out / f"{case}.log"
    log.write_text(done.stdout + done.stderr)
    return done.returncode, log


def test_seed_000_error_cases_are_diagnosed_with_the_seeds_fix(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(CASES, pool.map(lambda c: run_case(c, tmp_path), CASES), strict=True))
    for case, (status, symptom, severity, fix) in CASES.items():
        code, log = runs[case]
        assert code == status, log.read_text()
        done = subprocess.run(
            command("doctor", str(log), "--run-dir", str(tmp_path / case),
                    "--script", str(SCRIPTS / f"{case}.py"), "--json"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == (1 if severity == "error" else 0), done.stderr
        found = {s["id"]: s for s in json.loads(done.stdout)["symptoms"]}
        assert symptom in found, sorted(found)
        assert found[symptom]["severity"] == severity
        assert fix in found[symptom]["fix"]

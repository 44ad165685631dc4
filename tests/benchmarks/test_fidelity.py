"""``benchmarks/fidelity.py``: loss parsing, relative differences, its table and its verdict."""

from __future__ import annotations

import math
from types import ModuleType

import pytest
from tests.benchmarks.conftest import BENCHMARKS, load_benchmark


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("fidelity")


def test_the_last_final_loss_line_counts(bench):
    assert bench.parse_loss("final_loss=1.5\nstep 3\nfinal_loss=0.250000\n") == 0.25
    assert bench.parse_loss("loss=0.3\n  final_loss=0.2\n") is None  # not at a line start
    assert bench.parse_loss("final_loss=abc\n") is None
    assert math.isnan(bench.parse_loss("final_loss=nan\n"))


def test_relative_difference(bench):
    assert bench.relative(1.01, 1.0) == pytest.approx(0.01)
    assert bench.relative(-0.5, -1.0) == pytest.approx(0.5)
    assert bench.relative(0.0, 0.0) == 0.0
    assert bench.relative(0.1, 0.0) == math.inf
    assert bench.relative(None, 1.0) is None


def test_dropout_examples_get_dropout_zero(bench, tmp_path):
    examples = {e.name: e for e in bench.ALL_EXAMPLES}
    assert examples["sessrun_dataset_saver.py"].script_args(5, tmp_path) == [
        "--steps", "5", "--model-dir", str(tmp_path), "--dropout", "0",
    ]  # fmt: skip
    assert "--dropout" not in examples["horovod_style.py"].script_args(5, tmp_path)
    on_disk = sorted(p.name for p in (BENCHMARKS.parent / "examples" / "tf1").glob("[!_]*.py"))
    assert sorted(examples) == on_disk


def _result(bench, name, key, loss, returncode=0, casts=0):
    summary = {"casts_inserted": casts, "geops": 1, "fusions": {"matmul_biasadd": 2}, "steps": 9}
    return bench.RunResult(name, key, returncode, loss, summary)


def test_table_and_verdict_flag_runs_over_budget_and_failures(bench):
    name = "sessrun_dataset_saver.py"
    runs = [
        _result(bench, name, "a", 1.0),
        _result(bench, name, "a2", 1.0),
        _result(bench, name, "b", 1.00002),
        _result(bench, name, "c", 1.01, casts=18),
        _result(bench, name, "d", None, returncode=1),
    ]
    results = {(r.example, r.variant): r for r in runs}
    example = next(e for e in bench.ALL_EXAMPLES if e.name == name)
    row = bench.table(results, [example]).splitlines()[2]
    assert row == (
        "| sessrun_dataset_saver | 1.000000 | 0 | 2.0e-05 **over** | 0 | 1.0e-02 | 18 "
        "| — | FAIL (exit 1) | 1 | matmul_biasadd ×2 | 9 |"
    )
    assert bench.verdict(results) == [
        "sessrun_dataset_saver.py (d): exit 1, loss None",
        "sessrun_dataset_saver.py (b): rel Δ 2.00e-05 > budget 1e-05",
    ]

"""``benchmarks/runtime_overhead.py``: its tables and verdicts, and a ``--quick`` run end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from types import ModuleType

import pytest
from tests.benchmarks.conftest import BENCHMARKS, load_benchmark


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("runtime_overhead")


def test_step_table_gives_median_ratio_rounds_and_flags_identity_over_budget(bench):
    results = [
        bench.StepResult("trivial", "identity", 300, 100e-6, 110e-6, 0, 0),
        bench.StepResult("mlp", "default", 300, 1e-3, 2e-3, 12, 3),
        bench.StepResult("mlp", "A/A control", 280, 1e-3, 1e-3, None, None),
        bench.StepResult("trivial", "identity", 250, 100e-6, 102e-6, 0, 0),
        bench.StepResult("trivial", "identity", 300, 100e-6, 106e-6, 0, 0),
    ]
    table = bench.step_table(results).splitlines()
    assert len(table) == 5
    # Three rounds of "trivial": medians of the rounds, the fewest steps, each round's ratio.
    assert table[2] == (
        "| trivial | identity | 250 | 0.100 ms | 0.106 ms | **1.060** (over budget) "
        "| 1.100, 1.020, 1.060 | +6 µs | 0, 0 |"
    )
    # The default options change compute: no budget applies to them.
    assert table[3] == (
        "| mlp | default | 300 | 1.000 ms | 2.000 ms | **2.000** | 2.000 | +1000 µs | 12, 3 |"
    )
    assert table[4] == (
        "| mlp | A/A control | 280 | 1.000 ms | 1.000 ms | **1.000** | 1.000 | +0 µs | – |"
    )


def test_rewrite_table_sums_the_sync_phases(bench):
    result = bench.RewriteResult(222, 10030, 10030, 0.05, 0.3, 0.6, 1.0, 2.2, 0.4)
    assert result.sync_s == pytest.approx(0.95)
    row = bench.rewrite_table([result]).splitlines()[2]
    assert row == (
        "| 1 | 10,030 | 10,030 | 0.050 s | 0.300 s | 0.600 s | **0.950 s** | 1.000 s "
        "| 2.200 s | +1.200 s | 0.400 s |"
    )


def test_verdicts_name_the_worst_workload_and_the_missed_budget(bench):
    steps = [
        bench.StepResult("a", "identity", 10, 1.0, 1.02, 0, 0),
        bench.StepResult("b", "identity", 10, 1.0, 1.08, 0, 0),
        bench.StepResult("c", "default", 10, 1.0, 3.0, 5, 0),
    ]
    rewrites = [bench.RewriteResult(222, 10030, 10030, 0.1, 0.4, 1.2, 1.0, 2.5, 0.5)]
    assert bench.verdicts(steps, rewrites) == [
        "per-step overhead (identity): worst ratio 1.080 (b); budget <= 1.05: MISSED",
        "first sync (10,030 nodes): best 1.700 s, median 1.700 s; budget <= 1.5 s: MISSED",
    ]


def test_verdicts_use_the_median_of_rounds_and_of_repeats(bench):
    steps = [
        bench.StepResult("a", "identity", 10, 1.0, 1.09, 0, 0),  # one noisy round of three
        bench.StepResult("a", "identity", 10, 1.0, 1.01, 0, 0),
        bench.StepResult("a", "identity", 10, 1.0, 1.03, 0, 0),
    ]
    rewrites = [
        bench.RewriteResult(222, 10030, 10030, 0.1, 0.3, s, 1.0, 2.5, 0.5) for s in (0.6, 0.8, 1.6)
    ]
    assert bench.verdicts(steps, rewrites) == [
        "per-step overhead (identity): worst ratio 1.030 (a); budget <= 1.05: met",
        "first sync (10,030 nodes): best 1.000 s, median 1.200 s; budget <= 1.5 s: met",
    ]


def test_quick_mode_fills_unset_sizes_and_keeps_given_ones(bench):
    args = bench.parse_args(["--quick", "--steps", "7"])
    assert (args.steps, args.warmup, args.rounds, args.max_seconds) == (7, 3, 1, 5.0)
    assert (args.layers, args.repeats) == (20, 1)
    args = bench.parse_args(["--layers", "155"])
    assert (args.steps, args.warmup, args.rounds, args.max_seconds) == (300, 30, 3, 20.0)
    assert (args.layers, args.repeats) == (155, 3)


@pytest.mark.tf
@pytest.mark.slow
def test_quick_run_prints_both_tables_and_the_verdicts(bench, tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "runtime_overhead.py"), "--quick", "--steps", "4", "--warmup", "1",
         "--layers", "6"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "| workload | options | steps | stock median | NPU median |" in out
    for workload in bench.WORKLOADS:
        assert f"| {workload} | identity | 4 |" in out
        assert f"| {workload} | A/A control | 4 |" in out
    assert "| default |" not in out  # --quick measures the identity options only
    assert "| 1 | " in out.split("## First run")[1]
    assert "mirror.py" in out.split("## cProfile")[1]
    assert "per-step overhead (identity): worst ratio" in out
    assert "first sync (" in out

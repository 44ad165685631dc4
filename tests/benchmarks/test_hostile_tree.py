"""``benchmarks/hostile_tree.py``, small: the key checks of the hostile-tree measurement."""

from __future__ import annotations

import os
import signal
import stat
from types import ModuleType

import pytest
from tests.benchmarks.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("hostile_tree")


@pytest.fixture
def hostile(bench, tmp_path):
    bench.build(tmp_path, files=4, huge_mb=5)
    yield tmp_path, bench.snapshot(tmp_path / "src")
    bench._unlock(tmp_path)


def test_the_fixture_is_hostile(bench, hostile):
    base, before = hostile
    kinds = {entry[0] for entry in before.values()}
    assert {"file", "link", stat.S_IFIFO, stat.S_IFSOCK, stat.S_IFDIR} <= kinds
    assert os.path.getsize(base / "src" / "huge" / "generated.py") > 4 * 1024 * 1024
    assert os.fsdecode(b"odd/caf\xe9.py") in before


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_whole_run_keeps_every_guarantee(bench, hostile, jobs):
    base, before = hostile
    row = bench.case(base, "whole run", jobs, None, before)
    assert row.exit == 1  # devices, unreadable entries and broken files are reported failed
    assert row.src_identical and row.nothing_outside
    assert row.processes_left == 0 and row.leftovers == 0
    assert row.accounted == "yes"


@pytest.mark.slow
def test_a_killed_parallel_run_leaves_no_process_and_the_next_run_cleans_up(bench, hostile):
    base, before = hostile
    killed = bench.case(base, "SIGKILL", 2, (signal.SIGKILL, 2.5), before)
    assert killed.src_identical and killed.nothing_outside and killed.processes_left == 0
    rerun = bench.case(base, "rerun --force", 2, None, before)
    assert rerun.leftovers == 0 and rerun.accounted == "yes" and rerun.src_identical

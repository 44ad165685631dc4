"""``benchmarks/distributed_equivalence.py``: its differences and table; a 2-rank BERT-style job."""

from __future__ import annotations

import math
import sys
from types import ModuleType

import numpy as np
import pytest
from tests.benchmarks.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("distributed_equivalence")


def _f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


def test_identical_ranks_and_the_differences_to_one_process(bench):
    single = {"w": _f32(1.0, -2.0), "b": _f32(0.5, 0.0), "key_bias": _f32(1e-12, 0.0)}
    rank = {"w": _f32(1.0, -2.0 + 2**-22), "b": _f32(0.5, 0.0), "key_bias": _f32(3e-12, 0.0)}
    row = bench.differences([rank, dict(rank)], single)
    assert row["bitwise"] and row["between_ranks"] == 0.0
    assert row["max_abs"] == 2**-22
    assert row["max_rel"] == pytest.approx(2**-22 / 2.0)  # infinity norms of "w"
    assert row["worst_rel_variable"] == "w"
    assert row["near_zero"] == {"key_bias": pytest.approx(2e-12)}
    assert bench.meets(row)


def test_ranks_that_differ_miss_the_target_however_small_the_difference(bench):
    single = {"w": _f32(1.0, 2.0)}
    other = {"w": _f32(1.0, np.nextafter(np.float32(2.0), np.float32(3.0)))}
    row = bench.differences([single, other], single)
    assert not row["bitwise"] and row["between_ranks"] == pytest.approx(2**-22)
    assert not bench.meets(row)
    assert not bench.meets({**row, "bitwise": True, "max_rel": 2e-6})


def test_a_variable_missing_on_a_rank_is_an_error(bench):
    with pytest.raises(ValueError, match="variables differ"):
        bench.differences([{"w": _f32(1.0)}], {"w": _f32(1.0), "b": _f32(0.0)})


def test_table_rows(bench):
    rows = [
        {"model": "bert", "optimizer": "sgd", "ranks": 2, "between_ranks": 0.0, "bitwise": True,
         "max_abs": 1.19e-7, "max_rel": 6.69e-7, "worst_rel_variable": "v",
         "near_zero": {"k0": 0.0, "k1": 0.0}},
        {"model": "mlp", "optimizer": "adam", "ranks": 4, "between_ranks": 3e-8, "bitwise": False,
         "max_abs": 1e-7, "max_rel": 5.8e-6, "worst_rel_variable": "l2", "near_zero": {}},
    ]  # fmt: skip
    lines = bench.table(rows).splitlines()
    assert (
        lines[2]
        == "| bert | sgd | 2 | 0 (bitwise) | 1.19e-07 | 6.69e-07 (v; 2 near 0 left out) | met |"
    )
    assert lines[3] == "| mlp | adam | 4 | 3e-08 | 1e-07 | 5.8e-06 (l2) | MISSED |"


def test_job_commands(bench, tmp_path):
    args = bench.parse(["--models", "bert", "--optimizers", "sgd", "--steps", "3"])
    assert args.ranks == [2, 4]
    two = bench.job_command(2, tmp_path / "out", tmp_path / "rep", args)
    assert two[:6] == [sys.executable, "-m", "tf2npu", "run", "--ranks", "2"]
    assert two[-9:] == [str(bench.HERE / "distributed_equivalence.py"), "--worker",
                        str(tmp_path / "out"), "--models", "bert", "--optimizers", "sgd",
                        "--steps", "3"]  # fmt: skip
    assert "precision_mode=must_keep_origin_dtype" in two
    one = bench.job_command(1, tmp_path / "out", tmp_path / "rep", args)
    assert "--ranks" not in one and one[-9:] == two[-9:]


@pytest.mark.slow
@pytest.mark.tf
def test_two_ranks_train_the_bert_style_model_as_one_process(bench, tmp_path):
    rows = bench.main(["--ranks", "2", "--models", "bert", "--optimizers", "sgd", "--steps", "3",
                       "--work", str(tmp_path), "--timeout", "240"])  # fmt: skip
    [row] = rows
    assert (row["model"], row["ranks"]) == ("bert", 2)
    assert row["bitwise"], row
    assert row["max_abs"] <= 1e-6 and row["max_rel"] <= 1e-6, row
    assert row["max_abs"] > 0 and not math.isnan(row["max_rel"])  # the runs did differ a bit
    assert sorted(row["near_zero"]) == [f"bert/layer_{i}/attention/key/bias" for i in (0, 1)]

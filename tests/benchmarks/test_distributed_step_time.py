"""``benchmarks/distributed_step_time.py``: the raw baselines' collectives, ratios and table."""

from __future__ import annotations

import collections
from types import ModuleType, SimpleNamespace

import pytest
from tests.benchmarks.conftest import BENCHMARKS, load_benchmark

pytestmark = pytest.mark.tf


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCHMARKS))  # it imports distributed_models beside it
        return load_benchmark("distributed_step_time")


def _fake_world(size: int) -> SimpleNamespace:
    return SimpleNamespace(size=size, device="/device:CPU:0",
                           cluster=SimpleNamespace(exec_timeout=30.0))  # fmt: skip


def _collectives(bench: ModuleType, model: str, fused: bool) -> tuple[collections.Counter, list]:
    import tensorflow as tf

    keys = iter(range(100, 200))
    made = []

    def raw(v1):
        made.append(bench.RawAllReduceOptimizer(v1.train.GradientDescentOptimizer(0.1),
                                                _fake_world(2), keys, fused))  # fmt: skip
        return made[-1]

    built = bench.build(model, raw, 0, 2)
    ops = [op for op in built.graph.get_operations() if op.type.startswith("Collective")]
    keys = [int(tf.get_static_value(op.inputs[3])) for op in ops]  # input, size, group, instance
    return collections.Counter(op.type for op in ops), keys


def test_raw_all_reduces_each_gradient_or_one_flat_tensor(bench):
    each, keys = _collectives(bench, "small_mlp", fused=False)
    assert each == {"CollectiveReduceV2": 6}
    assert sorted(keys) == list(range(100, 106))  # small keys, none reused
    fused, _ = _collectives(bench, "small_mlp", fused=True)
    assert fused == {"CollectiveReduceV2": 1}


@pytest.mark.slow
def test_raw_gathers_the_embedding_gradient_as_ours_does(bench):
    each, keys = _collectives(bench, "bert", fused=False)
    assert each == {"CollectiveReduceV2": 37, "CollectiveGatherV2": 2}
    assert len(set(keys)) == 39 and max(keys) < 2**24
    fused, _ = _collectives(bench, "bert", fused=True)
    assert fused == {"CollectiveReduceV2": 1, "CollectiveGatherV2": 2}


def test_ratios_and_table(bench):
    row = bench.with_ratios({"ours": 3.0, "ours fused": 1.8, "raw": 2.0, "raw fused": 1.5,
                             "collectives": {"ours": 3, "ours fused": 2, "raw": 7,
                                             "raw fused": 2}})  # fmt: skip
    assert (row["ours/raw"], row["ours fused/raw fused"]) == (1.5, 1.2)
    assert "ours/stock" not in row and "ours/raw fused" not in row
    lines = bench.table(2, {"small_mlp": row}).splitlines()
    assert lines[0] == (
        "| model | ours | ours fused | raw | raw fused | ours/raw | ours fused/raw fused "
        "| collectives/step (ours, ours fused, raw, raw fused) |"
    )
    assert lines[1] == "| --- | --- | --- | --- | --- | --- | --- | --- |"
    assert lines[2] == "| small_mlp | 3.00 | 1.80 | 2.00 | 1.50 | 1.500 | 1.200 | 3, 2, 7, 2 |"
    single = bench.with_ratios({"ours": 1.0, "stock": 0.8, "collectives": {"ours": 0, "stock": 0}})
    assert (
        bench.table(1, {"bert": single}).splitlines()[2] == "| bert | 1.00 | 0.80 | 1.250 | 0, 0 |"
    )

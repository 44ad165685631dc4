"""Seed 000, case 04: a ``ReduceSum`` fed by a ``MatMul`` runs in float16 under
``allow_mix_precision``; ``{"black-list": {"to-add": ["ReduceSumD"]}}`` puts it back in float32.

On Ascend ``ReduceSumD`` has no ``precision_reduce`` flag, so it is gray and follows the float16
``MatMul`` (white). With TensorFlow's AMP lists, where ``Sum`` is deny, the case could not occur.
Checked twice: the decision of the graph engine, and a session configured for the NPU that runs
the decided graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.runtime.conftest import npu_config, runtime, tf  # noqa: F401  (runtime: autouse)

from tf2npu.config.options import NpuOptions
from tf2npu.graph.decisions import PRECISION, PrecisionDecision
from tf2npu.graph.engine import run_engine
from tf2npu.graph.ir import Graph

pytestmark = pytest.mark.tf

COLUMNS = 1001
MIXLIST = '{"black-list": {"to-add": ["ReduceSumD"]}}'


def model() -> tuple[Any, Any, Any]:
    """x[2,3] @ w[3,1001] (all 0.1) -> reduce_sum over axis 1: each row sums 1001 × 0.3."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        w = tf.constant(np.full((3, COLUMNS), 0.1, np.float32), name="w")
        total = tf.reduce_sum(tf.matmul(x, w, name="mm"), axis=1, name="total")
    return graph, x, total


def options(tmp_path: Path, *, mixlist: bool) -> dict[str, str]:
    values = {"precision_mode": "allow_mix_precision"}
    if mixlist:
        path = tmp_path / "ops_info.json"
        path.write_text(MIXLIST, encoding="utf-8")
        values["modify_mixlist"] = str(path)
    return values


def decided(tmp_path: Path, *, mixlist: bool) -> dict[str, PrecisionDecision]:
    graph = Graph.from_graph_def(model()[0].as_graph_def())
    run = run_engine(graph, NpuOptions.from_values(options(tmp_path, mixlist=mixlist)))
    assert run.config.diagnostics.of("warning") == []
    return {name: run.graph[name].meta[PRECISION] for name in ("mm", "total")}


def test_the_engine_lowers_the_sum_after_a_float16_matmul(tmp_path: Path) -> None:
    assert decided(tmp_path, mixlist=False) == {
        "mm": PrecisionDecision("float32", "float16", "allow_list: MatMul is in the allow list"),
        "total": PrecisionDecision(
            "float32", "float16", "follows_lowered: follows fp16 input 'mm'"
        ),
    }


def test_the_mixlist_puts_reducesumd_back_in_float32(tmp_path: Path) -> None:
    assert decided(tmp_path, mixlist=True) == {
        "mm": PrecisionDecision("float32", "float16", "allow_list: MatMul is in the allow list"),
        "total": PrecisionDecision(
            "float32", "float32", "mixlist_deny: Sum is in the deny list by modify_mixlist"
        ),
    }


def execute(tmp_path: Path, *, mixlist: bool) -> tuple[np.ndarray, np.ndarray, set[Any]]:
    """The sums, the products they read (the MatMul's float16 values, cast back), and the
    dtypes the mirror graph's ``Sum`` nodes compute in."""
    graph, x, total = model()
    settings = options(tmp_path, mixlist=mixlist)
    with graph.as_default(), tf.compat.v1.Session(config=npu_config(**settings)) as sess:
        value, products = sess.run([total, "mm:0"], {x: np.ones((2, 3), np.float32)})
        sums = [op for op in sess.mirror.graph.get_operations() if op.type == "Sum"]
        dtypes = {op.get_attr("T") for op in sums}
    return value, products, dtypes


def test_the_session_runs_the_sum_in_float16_then_float32_with_the_mixlist(
    tmp_path: Path,
) -> None:
    value, products, dtypes = execute(tmp_path, mixlist=False)
    exact = products.astype(np.float64).sum(axis=1)  # about 300: float16 steps are 0.25 there
    assert tf.float16 in dtypes
    assert value.dtype == np.float32 and np.all(value * 4 == np.round(value * 4))
    assert not np.allclose(value, exact, rtol=1e-6, atol=0)

    value, products, dtypes = execute(tmp_path, mixlist=True)
    assert dtypes == {tf.float32}
    np.testing.assert_allclose(value, products.astype(np.float64).sum(axis=1), rtol=1e-6)

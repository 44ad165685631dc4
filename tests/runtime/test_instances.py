"""fusion_instances.json: every fusion instance of the run, where the script created its root."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from tests.runtime.conftest import npu_config

from tf2npu.config.overrides import EngineOverrides, FusionOverride
from tf2npu.runtime import configure, context
from tf2npu.runtime.compile import report_dir
from tf2npu.runtime.instances import FUSION_INSTANCES_FILE, creation_line

RULE = "matmul_biasadd"
HERE = Path(__file__).resolve()


def two_dense_layers() -> tuple[Any, Any, list[int]]:
    """x -> d0 -> d1 (MatMul + BiasAdd each); the lines that created the BiasAdds."""
    import tensorflow as tf

    graph = tf.Graph()
    lines = []
    with graph.as_default():
        y = x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        for i in range(2):
            w = tf.constant(np.eye(3, dtype=np.float32) * (i + 2), name=f"d{i}/w")
            z = tf.matmul(y, w, name=f"d{i}/MatMul")
            lines.append(_line() + 1)
            y = tf.nn.bias_add(z, tf.constant([1.0, 2.0, 3.0]), name=f"d{i}/add")
        out = tf.identity(y, name="out")
    return graph, (x, out), lines


def _line() -> int:
    import inspect

    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


def run_once(graph: Any, x: Any, out: Any) -> np.ndarray:
    import tensorflow as tf

    with tf.compat.v1.Session(graph=graph, config=npu_config()) as session:
        return np.asarray(session.run(out, {x: np.ones((2, 3), np.float32)}))


def written() -> list[dict[str, Any]]:
    path = report_dir(context().settings) / FUSION_INSTANCES_FILE
    loaded: list[dict[str, Any]] = json.loads(path.read_text())
    return loaded


def test_each_instance_is_listed_with_the_line_that_created_its_root() -> None:
    graph, (x, out), lines = two_dense_layers()
    run_once(graph, x, out)
    records = written()
    assert [{k: r[k] for k in ("rule", "root", "nodes")} for r in records] == [
        {"rule": RULE, "root": "d0/add", "nodes": ["d0/add", "d0/MatMul"]},
        {"rule": RULE, "root": "d1/add", "nodes": ["d1/add", "d1/MatMul"]},
    ]
    assert [r["where"] for r in records] == [f"{HERE}:{line}" for line in lines]
    assert records[0]["graph"] == records[1]["graph"] >= 1
    assert context().fusion_instances.unmatched() == []


def test_an_instance_file_turns_one_off_and_reports_entries_that_matched_nothing() -> None:
    graph, (x, out), _ = two_dense_layers()
    clean = run_once(graph, x, out)
    off = frozenset({(RULE, "d1/add"), (RULE, "d9/add")})
    configure(engine=EngineOverrides(FusionOverride(frozenset({"layer_norm"}), off, "t.json")))
    np.testing.assert_allclose(run_once(graph, x, out), clean)
    # the clean run, then the trial
    assert [r["root"] for r in written()] == ["d0/add", "d1/add", "d0/add"]
    assert context().fusion_instances.unmatched() == [
        {"rule": "layer_norm"},
        {"rule": RULE, "root": "d9/add"},
    ]


def test_a_run_that_fuses_nothing_writes_an_empty_list() -> None:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        out = tf.nn.relu(x, name="out")
    run_once(graph, x, out)
    assert written() == []


def test_creation_line_is_none_for_an_op_without_a_stack() -> None:
    class Imported:
        @property
        def traceback(self) -> Any:
            raise AttributeError("no stack")

    assert creation_line(Imported()) is None

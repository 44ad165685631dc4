"""``precision_lowered.json``: the nodes a precision mode lowered, with type, GE type and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.runtime.conftest import npu_config, tf

from tf2npu.runtime.precision_record import ENV, FILE

pytestmark = pytest.mark.tf


def _run(mode: str) -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant([[1.0, 2.0]], name="x")
        mm = tf.matmul(x, tf.ones([2, 2]), name="mm")  # allow list: float16
        out = tf.exp(mm, name="out")
    with tf.compat.v1.Session(graph=graph, config=npu_config(precision_mode=mode)) as sess:
        sess.run(out)


def _report_dir() -> Path:
    from tf2npu.runtime.compile import report_dir
    from tf2npu.runtime.context import context

    return report_dir(context().settings)


def test_lowered_nodes_are_written_when_asked(monkeypatch: Any) -> None:
    monkeypatch.setenv(ENV, "1")
    _run("allow_mix_precision")
    rows = json.loads((_report_dir() / FILE).read_text())
    by_node = {row["node"]: row for row in rows}
    assert by_node["mm"]["type"] == "MatMul"
    assert by_node["mm"]["ge_type"] == "MatMulV2"
    assert by_node["mm"]["dtype"] == "float16"
    assert by_node["mm"]["reason"].startswith("allow")
    assert by_node["mm"]["where"].startswith(f"{__file__}:")
    assert by_node["mm"]["graph"] >= 1
    assert all(row["dtype"] == "float16" for row in rows)
    assert not [row["node"] for row in rows if "/_tf2npu_" in row["node"]]


def test_nothing_is_written_without_the_variable_or_without_lowering(monkeypatch: Any) -> None:
    monkeypatch.delenv(ENV, raising=False)
    _run("allow_mix_precision")
    assert not (_report_dir() / FILE).exists()
    monkeypatch.setenv(ENV, "1")
    _run("must_keep_origin_dtype")
    assert not (_report_dir() / FILE).exists()

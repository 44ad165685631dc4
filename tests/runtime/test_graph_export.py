"""``run --export-graph DIR``: each NPU session's client graph as a .pb graph inspect reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.runtime.conftest import npu_config, tf

from tf2npu.runtime.graph_export import GraphExport, file_name

pytestmark = pytest.mark.tf


@pytest.fixture
def export(tmp_path: Path) -> Any:
    from tf2npu.runtime.context import context

    instrument = GraphExport(tmp_path / "graphs")
    context().extra_instruments.append(instrument)
    yield instrument
    context().extra_instruments.remove(instrument)


def _graph() -> tuple[Any, Any]:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant([[1.0, 2.0]], name="x")
        out = tf.exp(tf.matmul(x, tf.ones([2, 2]), name="mm"), name="out")
    return graph, out


def test_each_npu_session_graph_is_written_and_graph_inspect_reads_it(
    export: GraphExport, capsys: pytest.CaptureFixture[str]
) -> None:
    from tf2npu.graph.io import load_graph

    graph, out = _graph()
    with tf.compat.v1.Session(graph=graph, config=npu_config()) as sess:
        sess.run(out)
        with graph.as_default():
            more = tf.identity(out, name="later")  # the graph grows: compiled again
        sess.run(more)
    (key, path), = export.written.items()  # fmt: skip
    assert path == export.directory / file_name(key) == export.directory / f"session_{key}.pb"
    nodes = {node.name: node for node in load_graph(path)}
    assert {"x", "mm", "out", "later"} <= set(nodes)  # the user's graph as last compiled
    # with the shapes TF inferred, so graph inspect knows what crosses and how big it is
    [shape] = nodes["mm"].attrs["_output_shapes"].list.shape
    assert [d.size for d in shape.dim] == [1, 2]
    export.close()
    err = capsys.readouterr().err
    assert f"exported 1 session graph: {path} (tf2npu graph inspect {path})" in err


def test_stock_sessions_are_not_written_and_the_exit_line_says_so(
    export: GraphExport, capsys: pytest.CaptureFixture[str]
) -> None:
    graph, out = _graph()
    with tf.compat.v1.Session(graph=graph) as sess:  # no NpuOptimizer: stock
        sess.run(out)
    assert export.written == {}
    export.close()
    err = capsys.readouterr().err
    assert "no NPU session compiled a graph, nothing written" in err
    assert not export.directory.exists()

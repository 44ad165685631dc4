"""Dumps: pbtxt around every pass, and the PRINT_MODEL files around the partition pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from tf2npu.graph.decisions import CLUSTERS, Cluster
from tf2npu.graph.dumps import PrintModel, pass_dumps, write_pbtxt
from tf2npu.graph.ir import Graph
from tf2npu.graph.partition import GRAPH_NUM
from tf2npu.graph.passes.infra import PassContext, PassInfo, PassManager, PassResult

pytestmark = pytest.mark.tf


def tf_graph() -> Graph:
    """x (Placeholder float) -> relu -> out (Identity)."""
    import tensorflow as tf

    with tf.Graph().as_default() as g:
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        relu = tf.nn.relu(x, name="relu")
        tf.identity(relu, name="out")
    return Graph.from_graph_def(g.as_graph_def())


class Noop:
    def __init__(self, name: str) -> None:
        self.info = PassInfo(name)

    def run(self, graph: Graph, ctx: PassContext) -> PassResult[Graph]:
        return PassResult(graph, changed=False)


class Cluster1:
    """Stands in for the partition pass: relu and out form GeOp1_0."""

    info = PassInfo("partition")

    def run(self, graph: Graph, ctx: PassContext) -> PassResult[Graph]:
        graph.meta[CLUSTERS] = [Cluster("GeOp1_0", ("relu", "out"), ("x",), ("out",))]
        return PassResult(graph, changed=True)


def run(graph: Graph, *instruments: object) -> None:
    manager = PassManager([Noop("placement"), Cluster1(), Noop("lowering")])
    manager.run(graph, PassContext(config=None, instruments=instruments))  # type: ignore[arg-type]


def test_write_pbtxt_round_trips(tmp_path: Path) -> None:
    from google.protobuf import text_format
    from tensorflow.core.framework import graph_pb2

    graph = tf_graph()
    path = tmp_path / "sub" / "g.pbtxt"
    write_pbtxt(graph, path)
    parsed = text_format.Parse(path.read_text(), graph_pb2.GraphDef())
    assert [n.name for n in parsed.node] == ["x", "relu", "out"]


def test_pass_dumps_are_numbered_in_run_order(tmp_path: Path) -> None:
    dumps = pass_dumps(tmp_path)
    run(tf_graph(), dumps)
    assert [p.name for p in dumps.written] == [
        "01_placement_before.pbtxt", "01_placement_after.pbtxt",
        "02_partition_before.pbtxt", "02_partition_after.pbtxt",
        "03_lowering_before.pbtxt", "03_lowering_after.pbtxt",
    ]  # fmt: skip
    assert len(list(tmp_path.iterdir())) == 6


def test_print_model_writes_before_after_and_one_file_per_geop(tmp_path: Path) -> None:
    from google.protobuf import text_format
    from tensorflow.core.framework import graph_pb2

    graph = tf_graph()
    graph.meta[GRAPH_NUM] = 3
    dumps = PrintModel(tmp_path)
    run(graph, dumps)
    assert [p.name for p in dumps.written] == [
        "BeforeSubGraph_3.pbtxt", "AfterSubGraph_3.pbtxt", "AfterSubGraph_GeOp1_0.pbtxt",
    ]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in dumps.written)
    sub = text_format.Parse(
        (tmp_path / "AfterSubGraph_GeOp1_0.pbtxt").read_text(), graph_pb2.GraphDef()
    )
    assert [(n.name, n.op) for n in sub.node] == [
        ("x_0_arg", "Placeholder"), ("relu", "Relu"), ("out", "Identity"),
    ]  # fmt: skip


def test_print_model_without_geops_writes_only_the_two_graphs(tmp_path: Path) -> None:
    dumps = PrintModel(tmp_path)
    manager = PassManager([Noop("partition")])
    manager.run(tf_graph(), PassContext(config=None, instruments=[dumps]))
    assert [p.name for p in dumps.written] == ["BeforeSubGraph_1.pbtxt", "AfterSubGraph_1.pbtxt"]

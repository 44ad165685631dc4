"""Loading graph files: .pb, .pbtxt, .meta, and the errors for everything else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tf2npu.errors import GraphError, UsageError
from tf2npu.graph.io import load_graph, read_graph_def


def test_unknown_suffix_names_the_file_and_the_accepted_kinds(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"")
    with pytest.raises(UsageError) as caught:
        load_graph(path)
    assert str(caught.value) == (
        f"graph file '{path}': unknown suffix '.onnx'; expected .pb (binary GraphDef), "
        ".pbtxt (text GraphDef) or .meta (MetaGraphDef)"
    )


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"graph file '.*nope\.pb': cannot read it \(No such file"):
        load_graph(tmp_path / "nope.pb")


tf_only = pytest.mark.tf


@pytest.fixture
def graph_def() -> Any:
    tf = pytest.importorskip("tensorflow")
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.identity(x * 2.0, name="y")
    return g.as_graph_def()


@tf_only
def test_pb_pbtxt_and_meta_load_the_same_graph(tmp_path: Path, graph_def: Any) -> None:
    tf = pytest.importorskip("tensorflow")
    (tmp_path / "g.pb").write_bytes(graph_def.SerializeToString())
    tf.io.write_graph(graph_def, str(tmp_path), "g.pbtxt", as_text=True)
    meta = tf.compat.v1.MetaGraphDef(graph_def=graph_def)
    (tmp_path / "g.meta").write_bytes(meta.SerializeToString())
    for name in ("g.pb", "g.pbtxt", "g.meta"):
        assert read_graph_def(tmp_path / name) == graph_def, name
        graph = load_graph(str(tmp_path / name))
        assert [n.name for n in graph] == ["x", "mul/y", "mul", "y"]


@tf_only
@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.pb", b"\xff\xff\xff", r"graph file '.*bad\.pb' is not a valid binary GraphDef: "),
        (
            "bad.pbtxt",
            b"node { nme: 1 }",
            r"graph file '.*bad\.pbtxt' is not a valid text GraphDef: ",
        ),
        ("bad.pbtxt", b"\xff", "is not a valid text GraphDef"),
        ("bad.meta", b"\xff\xff\xff", "is not a valid MetaGraphDef"),
        ("empty.pb", b"", r"graph file '.*empty\.pb' holds no nodes; expected a binary GraphDef"),
        ("empty.pbtxt", b"versions { producer: 1 }", "holds no nodes"),
    ],
)
def test_bad_content_is_a_graph_error_naming_the_file(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    pytest.importorskip("tensorflow")
    (tmp_path / name).write_bytes(content)
    with pytest.raises(GraphError, match=message):
        load_graph(tmp_path / name)


@tf_only
def test_meta_without_a_graph_def(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    meta = tf.compat.v1.MetaGraphDef()
    meta.meta_info_def.tags.append("serve")
    (tmp_path / "m.meta").write_bytes(meta.SerializeToString())
    with pytest.raises(GraphError, match="the MetaGraphDef holds no graph_def"):
        load_graph(tmp_path / "m.meta")


@tf_only
def test_load_validates_the_graph(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    (tmp_path / "g.pbtxt").write_text('node { name: "b" op: "Identity" input: "ghost" }')
    with pytest.raises(GraphError, match=r"\[input-exists\] graph, node 'b': input 0 'ghost'"):
        load_graph(tmp_path / "g.pbtxt")

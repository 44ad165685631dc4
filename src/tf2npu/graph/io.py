"""Reading graph files: ``.pb`` (binary GraphDef), ``.pbtxt`` (text GraphDef), ``.meta``.

>>> load_graph("model.onnx")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
tf2npu.errors.UsageError: graph file 'model.onnx': unknown suffix '.onnx'; expected .pb ...
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tf2npu.errors import GraphError, UsageError
from tf2npu.graph.ir import Graph

__all__ = ["SUFFIXES", "load_graph", "read_graph_def"]

SUFFIXES = {
    ".pb": "binary GraphDef",
    ".pbtxt": "text GraphDef",
    ".meta": "MetaGraphDef",
}


def load_graph(path: str | Path) -> Graph:
    """The IR of a graph file, validated (a bad graph is a :class:`GraphError`)."""
    return Graph.from_graph_def(read_graph_def(path)).validate()


def read_graph_def(path: str | Path) -> Any:
    """The ``GraphDef`` in a ``.pb``, ``.pbtxt`` or ``.meta`` file.

    Raises:
        UsageError: the file is missing or its suffix is not one of :data:`SUFFIXES`.
        GraphError: the content is not what the suffix promises, or holds no nodes.
    """
    file = Path(path)
    kind = SUFFIXES.get(file.suffix)
    if kind is None:
        expected = ", ".join(f"{s} ({k})" for s, k in SUFFIXES.items())
        expected = expected.replace(", .meta", " or .meta")
        raise UsageError(
            f"graph file '{file}': unknown suffix {file.suffix!r}; expected {expected}"
        )
    try:
        data = file.read_bytes()
    except OSError as err:
        raise UsageError(f"graph file '{file}': cannot read it ({err.strerror})") from None
    from google.protobuf import message, text_format
    from tensorflow.core.framework import graph_pb2
    from tensorflow.core.protobuf import meta_graph_pb2

    try:
        if file.suffix == ".pbtxt":
            graph_def = text_format.Parse(data.decode("utf-8"), graph_pb2.GraphDef())
        elif file.suffix == ".meta":
            meta = meta_graph_pb2.MetaGraphDef.FromString(data)
            if not meta.HasField("graph_def"):
                raise GraphError(f"graph file '{file}': the MetaGraphDef holds no graph_def")
            graph_def = meta.graph_def
        else:
            graph_def = graph_pb2.GraphDef.FromString(data)
    except (message.DecodeError, text_format.ParseError, UnicodeDecodeError) as err:
        raise GraphError(f"graph file '{file}' is not a valid {kind}: {err}") from None
    if not graph_def.node and not graph_def.library.function:
        raise GraphError(
            f"graph file '{file}' holds no nodes; expected a {kind} "
            "(a SavedModel's saved_model.pb is not a GraphDef: export the .meta or a frozen .pb)"
        )
    return graph_def

"""Adding tf2npu's traced functions (an op's CPU body, its body gradient) to a TF graph."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["add_functions"]


def add_functions(graph: Any, serialized: Sequence[bytes]) -> None:
    """Add serialized FunctionDefs (callees first) to ``graph``'s library."""
    import tensorflow as tf
    from tensorflow.core.framework import graph_pb2

    # import_graph_def is the public way to add a FunctionDef proto to a graph: with no
    # nodes it only copies the library (to the C graph and the Python function table).
    library_only = graph_pb2.GraphDef()
    for function in serialized:
        library_only.library.function.add().ParseFromString(function)
    with graph.as_default():  # the caller's graph, whatever the default graph is
        tf.graph_util.import_graph_def(library_only, name="")

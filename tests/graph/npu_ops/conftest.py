"""Running one NPU op the way the engine does: IR node → materialize → GraphDef → TF session."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from tf2npu.graph.ir import Graph
from tf2npu.graph.npu_ops import add_npu_node, materialize

RunOp = Callable[..., list[np.ndarray]]


def build_op_graph(
    op: str, inputs: Sequence[np.ndarray], dtype: int, attrs: Mapping[str, Any] | None = None
) -> Graph:
    """Placeholders ``in0..inN`` (dtypes of the arrays) feeding one NPU node named ``op``."""
    import tensorflow as tf
    from tensorflow.core.framework.attr_value_pb2 import AttrValue

    graph = Graph()
    refs = []
    for i, array in enumerate(inputs):
        enum = tf.dtypes.as_dtype(array.dtype).as_datatype_enum
        refs.append(
            graph.add_node(f"in{i}", "Placeholder", attrs={"dtype": AttrValue(type=enum)}).output()
        )
    add_npu_node(graph, "op", op, refs, dtype=dtype, attrs=attrs)
    return graph


def _run_graph(
    graph: Graph, feeds: Sequence[np.ndarray], fetches: Sequence[str], runs: int = 1
) -> list[list[np.ndarray]]:
    """Import ``graph`` into a fresh TF graph and run ``fetches`` ``runs`` times in one session."""
    import tensorflow as tf

    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(graph.to_graph_def(), name="")
    feed = {f"in{i}:0": array for i, array in enumerate(feeds)}
    with tf.compat.v1.Session(graph=tf_graph) as session:
        return [list(session.run(list(fetches), feed)) for _ in range(runs)]


@pytest.fixture
def run_op() -> RunOp:
    """``run_op(op, inputs, dtype, attrs=None, outputs=1)`` → the op's outputs as arrays."""

    def run(
        op: str,
        inputs: Sequence[np.ndarray],
        dtype: int,
        attrs: Mapping[str, Any] | None = None,
        outputs: int = 1,
    ) -> list[np.ndarray]:
        graph = build_op_graph(op, inputs, dtype, attrs)
        assert materialize(graph) == 1
        graph.lint()
        return _run_graph(graph, inputs, [f"op:{i}" for i in range(outputs)])[0]

    return run


@pytest.fixture(name="run_graph")
def run_graph_fixture() -> Callable[..., list[list[np.ndarray]]]:
    """``run_graph(graph, feeds, fetches, runs=1)``: import into TF, run in one session."""
    return _run_graph

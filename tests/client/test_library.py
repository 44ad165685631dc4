"""client.library: serialized FunctionDefs become functions of the given graph's library."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.client.library import add_functions

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


def _function_def(name: str) -> bytes:
    concrete = tf.function(lambda x: x * 2.0).get_concrete_function(tf.TensorSpec([2], tf.float32))
    fd = concrete.function_def
    fd.signature.name = name
    fd.ClearField("attr")
    return bytes(fd.SerializeToString())


def test_an_added_function_is_callable_by_its_name() -> None:
    with tf.Graph().as_default() as graph:
        add_functions(graph, [_function_def("Double__tf2npu")])
        assert graph._is_function("Double__tf2npu")
        x = tf.constant([1.0, 2.5])
        (y,) = graph.create_op("Double__tf2npu", [x], [tf.float32]).outputs
        with tf.compat.v1.Session(graph=graph) as session:
            np.testing.assert_array_equal(session.run(y), [2.0, 5.0])


def test_no_functions_add_nothing() -> None:
    with tf.Graph().as_default() as graph:
        add_functions(graph, [])
    assert list(graph.as_graph_def().library.function) == []


def test_the_functions_go_to_the_given_graph_not_the_default_one() -> None:
    target = tf.Graph()
    with tf.Graph().as_default() as default:
        add_functions(target, [_function_def("Double__tf2npu")])
    assert target._is_function("Double__tf2npu")
    assert not default._is_function("Double__tf2npu")

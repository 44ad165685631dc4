"""Reading Const values from TensorProtos without TensorFlow's help (built with TF here)."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.fusion.consts import const_values, scalar_like, scalar_value
from tf2npu.graph.ir import Graph

pytestmark = pytest.mark.tf


def const(value: object, dtype: object = None) -> object:
    import tensorflow as tf
    from tensorflow.core.framework.attr_value_pb2 import AttrValue

    g = Graph()
    proto = tf.make_tensor_proto(value, dtype=dtype)
    return g.add_node(
        "c", "Const", attrs={"value": AttrValue(tensor=proto), "dtype": AttrValue(type=proto.dtype)}
    )


@pytest.mark.parametrize(
    ("value", "dtype", "expected"),
    [
        (0.5, np.float32, [0.5]),
        (np.float16(0.044715), np.float16, [float(np.float16(0.044715))]),
        ([-1], np.int32, [-1.0]),
        (3, np.int64, [3.0]),
        (np.arange(6, dtype=np.float32).reshape(2, 3), None, [0, 1, 2, 3, 4, 5]),
        (np.zeros(4, np.float32), None, [0.0] * 4),
        (2.5, np.float64, [2.5]),
    ],
)
def test_const_values(value, dtype, expected) -> None:
    assert const_values(const(value, dtype)) == pytest.approx(expected)


def test_scalar_value_only_for_one_element() -> None:
    assert scalar_value(const([7.0], np.float32)) == 7.0
    assert scalar_value(const([1.0, 2.0], np.float32)) is None


def test_large_string_and_non_const_nodes_are_unreadable() -> None:
    assert const_values(const(np.zeros(100, np.float32))) is None
    assert const_values(const(b"text")) is None
    assert const_values(Graph().add_node("x", "Placeholder")) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_scalar_like_keeps_the_dtype(dtype) -> None:
    node = const(np.ones([2], dtype))
    copy = scalar_like(node.attrs["value"], 0.25)
    assert copy.tensor.dtype == node.attrs["value"].tensor.dtype
    node.attrs["value"] = copy
    assert const_values(node) == [0.25]

"""Float32 signatures read from TF's op registry: which attrs switch, which inputs, blockers."""

from __future__ import annotations

import pytest

from tf2npu.graph.ir import Graph, TensorRef
from tf2npu.graph.precision.signature import DT_HALF, Output, SignatureReader

pytestmark = pytest.mark.tf
attr_value_pb2 = pytest.importorskip("tensorflow.core.framework.attr_value_pb2")

F32, F64, I32 = 1, 2, 3


def t(dtype: int) -> object:
    return attr_value_pb2.AttrValue(type=dtype)


def test_a_multi_attr_op_switches_only_its_float32_attr() -> None:
    g = Graph()
    node = g.add_node("c", "ConcatV2", [TensorRef("a"), TensorRef("b"), TensorRef("axis")])
    node.attrs.update(T=t(F32), Tidx=t(I32), N=attr_value_pb2.AttrValue(i=2))
    sig = SignatureReader(DT_HALF).read(node)
    assert sig is not None
    assert (sig.attrs, sig.inputs, sig.blocker) == (("T",), (0, 1), "")
    assert sig.outputs == (Output("output", 0, 0, True),)


def test_a_mixed_output_op_marks_only_float_outputs() -> None:
    g = Graph()
    node = g.add_node("m", "Merge", [TensorRef("a"), TensorRef("b")])
    node.attrs.update(T=t(F32), N=attr_value_pb2.AttrValue(i=2))
    sig = SignatureReader(DT_HALF).read(node)
    assert sig is not None
    assert [o.is_float for o in sig.outputs] == [True, False]
    assert sig.outputs[1].ref("m", function_body=True) == TensorRef("m", 0, "value_index")
    assert sig.outputs[1].ref("m", function_body=False) == TensorRef("m", 1)


def test_nodes_without_float32_have_no_signature_and_the_cache_keys_on_dtypes() -> None:
    g = Graph()
    reader = SignatureReader(DT_HALF)
    f32 = g.add_node("a", "Relu", [TensorRef("x")], attrs={"T": t(F32)})
    f64 = g.add_node("b", "Relu", [TensorRef("x")], attrs={"T": t(F64)})
    again = g.add_node("c", "Relu", [TensorRef("x")], attrs={"T": t(F32)})
    assert reader.read(f64) is None
    assert reader.read(f32) is reader.read(again) is not None


def test_an_unset_count_attr_makes_the_signature_unknown() -> None:
    g = Graph()
    node = g.add_node("c", "ConcatV2", [TensorRef("a")], attrs={"T": t(F32)})
    sig = SignatureReader(DT_HALF).read(node)
    assert sig is not None
    assert sig.blocker == "unknown_signature: the tensor count of arg 'values' is not set"


def test_a_resource_input_ties_the_dtype_to_the_variable() -> None:
    g = Graph()
    node = g.add_node("r", "ReadVariableOp", [TensorRef("v")], attrs={"dtype": t(F32)})
    sig = SignatureReader(DT_HALF).read(node)
    assert sig is not None
    assert sig.blocker.startswith("variable_dtype:")

"""materialize(): one monomorphic CPU function per (op, dtype, attrs); the graph imports and runs."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.errors import GraphError
from tf2npu.graph._proto import function_from_proto
from tf2npu.graph.ir import Graph, TensorRef
from tf2npu.graph.lint import Signature
from tf2npu.graph.npu_ops import (
    FUNCTION_SUFFIX,
    NPU_ATTRS_META,
    NPU_OP_META,
    add_npu_node,
    materialize,
    output_dtypes,
)
from tf2npu.graph.npu_ops.opdef import DT_FLOAT, DT_HALF

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
text_format = pytest.importorskip("google.protobuf.text_format")


def _placeholder(graph: Graph, name: str, dtype: int) -> TensorRef:
    from tensorflow.core.framework.attr_value_pb2 import AttrValue

    return graph.add_node(name, "Placeholder", attrs={"dtype": AttrValue(type=dtype)}).output()


def _two_gelus() -> Graph:
    graph = Graph()
    x32, x16 = _placeholder(graph, "in0", DT_FLOAT), _placeholder(graph, "in1", DT_HALF)
    add_npu_node(graph, "g32", "Gelu", [x32], dtype=DT_FLOAT)
    add_npu_node(graph, "g32b", "Gelu", [x32], dtype=DT_FLOAT)
    add_npu_node(graph, "g16", "Gelu", [x16], dtype=DT_HALF)
    graph.add_node("out", "Identity", [graph["g16"].output()], attrs={"T": graph["g16"].attrs["T"]})
    return graph


def test_fp32_and_fp16_gelu_give_two_functions_and_run(run_graph) -> None:
    graph = _two_gelus()
    graph["g16"].device = "/device:CPU:0"
    baseline = Signature.of(graph)
    assert materialize(graph) == 3
    graph.lint(baseline)  # names and output dtypes survive
    assert sorted(graph.functions) == sorted({graph["g32"].op, graph["g16"].op})
    assert graph["g32"].op == graph["g32b"].op != graph["g16"].op
    assert graph["g32"].op.startswith("Gelu_DT_FLOAT_") and graph["g32"].op.endswith(
        FUNCTION_SUFFIX
    )
    assert graph["g16"].op.startswith("Gelu_DT_HALF_")
    g16 = graph["g16"]
    assert g16.meta[NPU_OP_META] == "Gelu" and g16.meta[NPU_ATTRS_META]["T"].type == DT_HALF
    assert g16.attrs == {} and g16.device == "/device:CPU:0"
    assert output_dtypes(g16) == (DT_HALF,)
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    ((y32, y16, out),) = run_graph(graph, [x, x.astype(np.float16)], ["g32:0", "g16:0", "out:0"])
    assert y32.dtype == np.float32 and y16.dtype == out.dtype == np.float16
    np.testing.assert_allclose(y16, y32, rtol=1e-3, atol=1e-3)


def test_materialize_is_idempotent() -> None:
    graph = _two_gelus()
    assert materialize(graph) == 3
    first = graph.to_graph_def().SerializeToString(deterministic=True)
    assert materialize(graph) == 0
    assert graph.to_graph_def().SerializeToString(deterministic=True) == first


def test_different_attrs_give_different_functions_and_underscore_attrs_stay() -> None:
    from tensorflow.core.framework.attr_value_pb2 import AttrValue

    graph = Graph()
    refs = [_placeholder(graph, f"in{i}", DT_FLOAT) for i in range(3)]
    a = add_npu_node(graph, "a", "LayerNorm", refs, dtype=DT_FLOAT, attrs={"epsilon": 1e-5})
    b = add_npu_node(graph, "b", "LayerNorm", refs, dtype=DT_FLOAT, attrs={"epsilon": 1e-6})
    c = add_npu_node(graph, "c", "LayerNorm", refs, dtype=DT_FLOAT, attrs={"epsilon": 1e-5})
    a.attrs["_class"] = AttrValue(s=b"keep me")
    assert materialize(graph) == 3
    assert a.op == c.op != b.op and len(graph.functions) == 2
    assert set(a.attrs) == {"_class"}
    signature = graph.functions[a.op].template.signature
    assert [arg.name for arg in signature.input_arg] == ["x", "gamma", "beta"]
    assert [arg.name for arg in signature.output_arg] == ["y", "mean", "variance"]


FUNCTION_WITH_NPU_OP = """
signature {
  name: "norm_fn"
  input_arg { name: "x" type: DT_FLOAT }
  input_arg { name: "g" type: DT_FLOAT }
  input_arg { name: "b" type: DT_FLOAT }
  output_arg { name: "var" type: DT_FLOAT }
}
node_def { name: "ln" op: "LayerNorm" input: "x" input: "g" input: "b"
  attr { key: "T" value { type: DT_FLOAT } }
  attr { key: "begin_norm_axis" value { i: -1 } }
  attr { key: "epsilon" value { f: 0.001 } } }
ret { key: "var" value: "ln:variance:0" }
"""


def test_npu_ops_in_function_bodies_keep_their_output_arg_indexing(run_graph) -> None:
    from tensorflow.core.framework.function_pb2 import FunctionDef

    graph = Graph()
    refs = [_placeholder(graph, f"in{i}", DT_FLOAT) for i in range(3)]
    fd = text_format.Parse(FUNCTION_WITH_NPU_OP, FunctionDef())
    graph.functions["norm_fn"] = function_from_proto(fd, graph)
    graph.add_node("call", "norm_fn", refs)
    graph.lint()
    assert materialize(graph) == 1
    body = graph.functions["norm_fn"]
    assert body["ln"].meta[NPU_OP_META] == "LayerNorm"
    assert body["ln"].attrs == {}
    graph.lint()
    x = np.array([[1.0, 3.0], [2.0, 2.0]], np.float32)
    ((var,),) = run_graph(graph, [x, np.ones(2, np.float32), np.zeros(2, np.float32)], ["call:0"])
    np.testing.assert_allclose(var, [[1.0], [0.0]])


def test_a_malformed_npu_node_from_a_file_names_the_node() -> None:
    from tensorflow.core.framework.attr_value_pb2 import AttrValue

    graph = Graph()
    x = _placeholder(graph, "in0", DT_FLOAT)
    graph.add_node("untyped", "Gelu", [x])
    with pytest.raises(GraphError, match="graph, node 'untyped': NPU op Gelu has no attr 'T'"):
        materialize(graph)
    graph.erase_node("untyped")
    graph.add_node("wrong", "GeluGrad", [x], attrs={"T": AttrValue(type=DT_FLOAT)})
    with pytest.raises(GraphError, match="node 'wrong': NPU op GeluGrad: got 1 inputs, expected 3"):
        materialize(graph)


def test_a_graph_without_npu_ops_is_unchanged() -> None:
    graph = Graph()
    _placeholder(graph, "in0", DT_FLOAT)
    assert materialize(graph) == 0 and graph.functions == {}

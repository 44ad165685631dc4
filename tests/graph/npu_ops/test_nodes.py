"""Building NPU-op nodes: checked attrs, arity and dtypes; output dtypes for lint and passes."""

from __future__ import annotations

import pytest

from tf2npu.errors import InternalError
from tf2npu.graph._opdef import output_layout
from tf2npu.graph.ir import Graph
from tf2npu.graph.lint import Signature
from tf2npu.graph.npu_ops import NPU_OPS, add_npu_node, is_npu_op, npu_layout, output_dtypes
from tf2npu.graph.npu_ops.opdef import DT_FLOAT, DT_HALF, DT_INT32, DT_INT64, DT_UINT8

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


def _graph(inputs: int = 3) -> tuple[Graph, list]:
    graph = Graph()
    return graph, [graph.add_node(f"in{i}", "Placeholder").output() for i in range(inputs)]


def test_catalogue_has_the_twenty_four_ops() -> None:
    assert sorted(NPU_OPS) == [
        "AdamApplyOne",
        "AdamApplyOneWithDecay",
        "BasicLSTMCell",
        "DropOutDoMask",
        "DropOutDoMaskV3",
        "DropOutGenMask",
        "DropOutGenMaskV3",
        "DynamicAUGRU",
        "DynamicGruV2",
        "DynamicRnn",
        "FastGelu",
        "FastGeluGrad",
        "Gelu",
        "GeluGrad",
        "HcomAllGather",
        "HcomAllReduce",
        "HcomBroadcast",
        "HcomReceive",
        "HcomReduce",
        "HcomReduceScatter",
        "HcomSend",
        "LarsV2",
        "LayerNorm",
        "LayerNormGrad",
    ]
    assert is_npu_op("Gelu") and not is_npu_op("Relu") and not is_npu_op("gelu")


@pytest.mark.parametrize("op", sorted(NPU_OPS))
def test_every_definition_is_documented_with_unique_arg_names(op: str) -> None:
    spec = NPU_OPS[op]
    assert spec.summary and spec.math and spec.exactness
    names = [a.name for a in (*spec.inputs, *spec.outputs)] + [a.name for a in spec.attrs]
    assert len(names) == len(set(names))
    assert all(a.doc for a in (*spec.inputs, *spec.outputs, *spec.attrs))


def test_add_npu_node_sets_type_and_default_attrs() -> None:
    graph, refs = _graph(2)
    node = add_npu_node(
        graph, "gen", "DropOutGenMask", refs, dtype=DT_HALF, attrs={"seed": 3}, origin=["dropout"]
    )
    assert node.op == "DropOutGenMask" and node.origin == ("dropout",)
    assert node.attrs["T"].type == DT_HALF
    assert (node.attrs["seed"].i, node.attrs["seed2"].i) == (3, 0)
    assert node.attrs["Tshape"].type == DT_INT32
    assert output_dtypes(node) == (DT_UINT8,)


def test_attrs_accept_attr_value_protos() -> None:
    from tensorflow.core.framework.attr_value_pb2 import AttrValue

    graph, refs = _graph(3)
    node = add_npu_node(
        graph,
        "ln",
        "LayerNorm",
        refs,
        dtype=DT_FLOAT,
        attrs={"epsilon": AttrValue(f=1e-5), "begin_norm_axis": -1},
    )
    assert node.attrs["epsilon"].f == pytest.approx(1e-5)
    assert node.attrs["begin_norm_axis"].i == -1
    assert output_dtypes(node) == (DT_FLOAT, DT_FLOAT, DT_FLOAT)


@pytest.mark.parametrize(
    ("op", "inputs", "dtype", "attrs", "message"),
    [
        ("Gelu", 2, DT_FLOAT, {}, "got 2 inputs, expected 1 (x)"),
        ("Gelu", 1, DT_INT32, {}, "T = DT_INT32 is not supported; use one of DT_FLOAT, DT_HALF"),
        ("Gelu", 1, DT_FLOAT, {"alpha": 1.0}, "unknown attr 'alpha'"),
        ("LayerNorm", 3, DT_FLOAT, {"epsilon": "small"}, "'epsilon' = 'small' is not a float"),
        (
            "LayerNorm",
            3,
            DT_FLOAT,
            {"begin_norm_axis": 1.5},
            "1.5 is not an int; pass an int (default 0)",
        ),
        ("DropOutGenMask", 2, DT_FLOAT, {"Tshape": DT_FLOAT}, "Tshape = DT_FLOAT"),
        ("DropOutGenMask", 2, DT_FLOAT, {"seed": True}, "'seed' = True is not an int"),
        ("DynamicRnn", 6, DT_FLOAT, {"direction": 1}, "'direction' = 1 is not a str"),
        ("Relu", 1, DT_FLOAT, {}, "'Relu' is not an NPU op; the catalogue has: AdamApplyOne"),
    ],
)
def test_add_npu_node_rejects_bad_nodes(op, inputs, dtype, attrs, message) -> None:
    graph, refs = _graph(inputs)
    with pytest.raises(InternalError, match=r"NPU op|not an NPU op") as info:
        add_npu_node(graph, "n", op, refs, dtype=dtype, attrs=attrs)
    assert message in str(info.value)
    assert "n" not in graph


def test_attr_value_proto_of_the_wrong_kind_is_rejected() -> None:
    from tensorflow.core.framework.attr_value_pb2 import AttrValue

    graph, refs = _graph(3)
    with pytest.raises(InternalError, match="attr 'epsilon' holds 'i', expected an AttrValue"):
        add_npu_node(
            graph, "n", "LayerNorm", refs, dtype=DT_FLOAT, attrs={"epsilon": AttrValue(i=1)}
        )


def test_output_dtypes_of_a_non_npu_node_is_an_error() -> None:
    graph, _ = _graph(1)
    with pytest.raises(InternalError, match="'in0' \\(Placeholder\\) is not an NPU-op node"):
        output_dtypes(graph["in0"])


def test_lint_knows_npu_op_outputs() -> None:
    graph, refs = _graph(2)
    gen = add_npu_node(
        graph, "gen", "DropOutGenMask", refs, dtype=DT_FLOAT, attrs={"Tshape": DT_INT64}
    )
    assert output_layout(gen) == (("y", (DT_UINT8,)),)
    graph.add_node("bad", "Identity", [gen.output(1)])
    with pytest.raises(InternalError, match=r"\[output-index\].*DropOutGenMask has 1 outputs"):
        graph.lint()
    assert Signature.of(graph).graphs[""]["gen"] == (DT_UINT8,)


def test_an_untyped_npu_node_has_no_layout() -> None:
    graph, refs = _graph(1)
    node = graph.add_node("g", "Gelu", refs)
    assert npu_layout(node) is None and output_layout(node) is None

"""The graph JSON of each GeOp: real engine runs over small TF graphs, and hand-set decisions.

The engine cases run the whole default pipeline (lowering included) and compare the GeGraphs
with literal ones: fused and float16 ops show what the device runs, under the vendor's pass
name, and each replaced user tensor is carried by exactly one output.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tf2npu.artifacts import gegraph
from tf2npu.artifacts.gegraph import GeGraph, GeOp, TensorDesc
from tf2npu.config.options import NpuOptions
from tf2npu.errors import InternalError
from tf2npu.graph.decisions import (
    CLUSTERS,
    DEVICE_FORM,
    FUSED_BY,
    Cluster,
    DeviceForm,
    supersede,
)
from tf2npu.graph.engine import run_engine
from tf2npu.graph.ir import Graph, TensorRef
from tf2npu.graph.npu_ops import NPU_OP_META
from tf2npu.graph.report.ge_graph import (
    carriers,
    device_inputs,
    device_op,
    fusion_pass_names,
    ge_dtype_name,
    ge_graphs,
)

F32, F16 = "DT_FLOAT", "DT_FLOAT16"


def D(dtype: str, shape: tuple[int, ...] = (), name: str | None = None, index: int | None = None,
      ) -> TensorDesc:  # fmt: skip
    return TensorDesc(dtype, shape, name, index)


# -- engine runs over TF graphs ---------------------------------------------------------------


def engine(build: Callable[[Any], None], **options: object) -> Graph:
    """The top-level IR after the default pipeline over the graph ``build(tf)`` makes; x is a
    [2, 3] float32 placeholder, w a [3, 2] Const, b a [2] Const, mm = MatMul(x, w)."""
    tf = pytest.importorskip("tensorflow")
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        w = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="w")
        tf.constant([0.5, -0.5], name="b")
        tf.matmul(x, w, name="MatMul")
        build(tf)
    ir = Graph.from_graph_def(graph.as_graph_def(add_shapes=True))
    return run_engine(ir, NpuOptions.from_values(options)).graph  # type: ignore[arg-type]


def bias_add(tf: Any) -> None:
    g = tf.compat.v1.get_default_graph()
    out = tf.nn.bias_add(g.get_tensor_by_name("MatMul:0"), g.get_tensor_by_name("b:0"),
                         name="BiasAdd")  # fmt: skip
    tf.identity(out, name="out")


FUSED = "BiasAdd/_tf2npu_fused_matmul"


@pytest.mark.tf
def test_matmul_bias_add_is_one_op_named_after_the_vendor_pass() -> None:
    [graph] = ge_graphs(engine(bias_add))
    assert graph == GeGraph("GeOp1_0", (
        GeOp("w", "Const", 0, output_desc=(D(F32, (3, 2)),)),
        GeOp("b", "Const", 1, output_desc=(D(F32, (2,)),)),
        GeOp(FUSED, "_FusedMatMul", 2, ("x:0", "w:0", "b:0"),
             (D(F32, (2, 3)), D(F32, (3, 2)), D(F32, (2,))),
             (D(F32, (2, 2), "BiasAdd", 0),),
             original_op_names=("BiasAdd", "MatMul"), pass_name="MatMulBiasAddFusionPass"),
        GeOp("out", "Identity", 3, (f"{FUSED}:0",), (D(F32, (2, 2)),), (D(F32, (2, 2)),)),
    ))  # fmt: skip


def l2_loss(tf: Any) -> None:
    """L2Loss is on the deny list: it reads the float16 MatMul through a cast back."""
    mm = tf.compat.v1.get_default_graph().get_tensor_by_name("MatMul:0")
    tf.identity(tf.nn.l2_loss(mm, name="L2Loss"), name="out")


@pytest.mark.tf
def test_mixed_precision_the_cast_back_carries_the_user_matmul() -> None:
    [graph] = ge_graphs(engine(l2_loss, precision_mode="allow_mix_precision"))
    assert graph == GeGraph("GeOp1_0", (
        GeOp("w", "Const", 0, output_desc=(D(F32, (3, 2)),)),
        # a pass's node for one user op names that op's tensor on its outputs (msaccucmp
        # compares an output through these attrs only)
        GeOp("x/_tf2npu_to_fp16", "Cast", 1, ("x:0",), (D(F32, (2, 3)),),
             (D(F16, (2, 3), "x", 0),), original_op_names=("x",)),
        GeOp("w/_tf2npu_to_fp16", "Cast", 2, ("w:0",), (D(F32, (3, 2)),),
             (D(F16, (3, 2), "w", 0),), original_op_names=("w",)),
        # the float16 MatMul runs as Cast(MatMul(Cast, Cast)) here; the JSON shows the device's
        GeOp("MatMul/_tf2npu_fp16", "MatMul", 3, ("x/_tf2npu_to_fp16:0", "w/_tf2npu_to_fp16:0"),
             (D(F16, (2, 3)), D(F16, (3, 2))), (D(F16, (2, 2), "MatMul", 0),),
             original_op_names=("MatMul",)),
        GeOp("MatMul/_tf2npu_to_f32", "Cast", 4, ("MatMul/_tf2npu_fp16:0",), (D(F16, (2, 2)),),
             (D(F32, (2, 2), "MatMul", 0),), original_op_names=("MatMul",)),
        GeOp("L2Loss", "L2Loss", 5, ("MatMul/_tf2npu_to_f32:0",), (D(F32, (2, 2)),),
             (D(F32),)),
        GeOp("out", "Identity", 6, ("L2Loss:0",), (D(F32),), (D(F32),)),
    ))  # fmt: skip


def relu(tf: Any) -> None:
    mm = tf.compat.v1.get_default_graph().get_tensor_by_name("MatMul:0")
    tf.identity(tf.nn.relu(mm, name="Relu"), name="out")


@pytest.mark.tf
def test_without_a_running_cast_back_the_float16_clone_carries_the_user_tensor() -> None:
    """Every reader runs in float16: the casts back only serve fetches and are not in the GeOp,
    so the float16 clones carry MatMul:0, Relu:0 and out:0."""
    [graph] = ge_graphs(engine(relu, precision_mode="allow_mix_precision"))
    assert [(op.name, op.output_desc) for op in graph.ops[3:]] == [
        ("MatMul/_tf2npu_fp16", (D(F16, (2, 2), "MatMul", 0),)),
        ("Relu/_tf2npu_fp16", (D(F16, (2, 2), "Relu", 0),)),
        ("out/_tf2npu_fp16", (D(F16, (2, 2), "out", 0),)),
    ]


def dense_relu_softmax(tf: Any) -> None:
    g = tf.compat.v1.get_default_graph()
    biased = tf.nn.bias_add(g.get_tensor_by_name("MatMul:0"), g.get_tensor_by_name("b:0"),
                            name="BiasAdd")  # fmt: skip
    tf.identity(tf.nn.softmax(tf.nn.relu(biased, name="Relu"), name="Softmax"), name="out")


@pytest.mark.tf
def test_a_float16_fused_op_lowered_into_a_cpu_chain_shows_as_the_fused_op() -> None:
    """The float16 _FusedMatMul has no CPU kernel: lowering expands it and runs its steps in
    float32 between casts under helper names. None of those is in the JSON."""
    [graph] = ge_graphs(engine(dense_relu_softmax, precision_mode="allow_mix_precision"))
    fused = "Relu/_tf2npu_fp16/_tf2npu_fused_matmul"
    assert [op.name for op in graph.ops] == [
        "w", "b", "x/_tf2npu_to_fp16", "w/_tf2npu_to_fp16", "b/_tf2npu_to_fp16", fused,
        "Softmax/_tf2npu_fp16", "out/_tf2npu_fp16",
    ]  # fmt: skip
    assert graph.ops[5] == GeOp(
        fused, "_FusedMatMul", 5,
        ("x/_tf2npu_to_fp16:0", "w/_tf2npu_to_fp16:0", "b/_tf2npu_to_fp16:0"),
        (D(F16, (2, 3)), D(F16, (3, 2)), D(F16, (2,))),
        (D(F16, (2, 2), "Relu", 0),),
        original_op_names=("Relu", "BiasAdd", "MatMul"), pass_name="MatMulBiasAddFusionPass",
    )  # fmt: skip


def host_strings_between(tf: Any) -> None:
    """MatMul+BiasAdd, then AsString/StringToNumber (no device kernel for strings), then Relu."""
    g = tf.compat.v1.get_default_graph()
    biased = tf.nn.bias_add(g.get_tensor_by_name("MatMul:0"), g.get_tensor_by_name("b:0"),
                            name="BiasAdd")  # fmt: skip
    number = tf.strings.to_number(tf.strings.as_string(biased, name="s"), name="n")
    tf.identity(tf.nn.relu(number, name="Relu"), name="out")


@pytest.mark.tf
def test_a_host_op_in_the_middle_gives_two_geops_in_order() -> None:
    graphs = ge_graphs(engine(host_strings_between, mix_compile_mode=True))
    assert [(g.name, [(op.id, op.name) for op in g.ops]) for g in graphs] == [
        ("GeOp1_0", [(0, "w"), (1, "b"), (2, FUSED)]),
        ("GeOp1_1", [(0, "Relu"), (1, "out")]),
    ]
    assert graphs[1].ops[0] == GeOp("Relu", "Relu", 0, ("n:0",), (D(F32, (2, 2)),),
                                    (D(F32, (2, 2)),))  # fmt: skip


@pytest.mark.tf
def test_the_json_file_reads_back_as_the_same_graphs(tmp_path: Path) -> None:
    graphs = ge_graphs(engine(dense_relu_softmax, precision_mode="allow_mix_precision"))
    path = tmp_path / "ge_proto_00000001_Build.json"
    gegraph.dump(graphs, path)
    assert gegraph.load(path) == graphs
    fused = gegraph.load(path)[0].ops[5].to_json()
    assert fused["attr"] == [
        {"key": "_datadump_original_op_names",
         "value": {"list": {"s": ["Relu", "BiasAdd", "MatMul"]}}},
        {"key": "pass_name", "value": {"s": "MatMulBiasAddFusionPass"}},
    ]  # fmt: skip
    assert fused["output_desc"][0]["attr"] == [
        {"key": "_datadump_origin_name", "value": {"s": "Relu"}},
        {"key": "_datadump_origin_output_index", "value": {"i": 0}},
    ]


# -- hand-set decisions -----------------------------------------------------------------------


def test_a_graph_without_geops_has_no_graph_json() -> None:
    graph = Graph()
    graph.add_node("x", "Placeholder")
    assert ge_graphs(graph) == []


def test_a_geop_naming_a_missing_node_is_a_bug() -> None:
    graph = Graph()
    graph.meta[CLUSTERS] = [Cluster("GeOp1_0", ("gone",), (), ())]
    with pytest.raises(InternalError, match="GeOp 'GeOp1_0' holds 'gone', which is not in"):
        ge_graphs(graph)


def test_superseded_members_are_left_out_and_unknown_ops_get_outputs_from_their_readers() -> None:
    graph = Graph()
    a = graph.add_node("a", "NoSuchOp")
    b = graph.add_node("b", "NoSuchOp", [a.output(2)], control_inputs=["a"])
    old = graph.add_node("old", "NoSuchOp")
    supersede(graph, old, {}, by="test")
    graph.meta[CLUSTERS] = [Cluster("GeOp1_0", ("a", "old", "b"), (), ())]
    undefined = D("DT_UNDEFINED", (-2,))  # unknown rank, as GE writes it
    assert ge_graphs(graph) == [GeGraph("GeOp1_0", (
        GeOp("a", "NoSuchOp", 0, output_desc=(undefined,) * 3),
        GeOp(b.name, "NoSuchOp", 1, ("a:2", "a:-1"), (undefined,)),
    ))]  # fmt: skip


def test_a_rule_without_a_vendor_name_is_named_by_itself() -> None:
    graph = Graph()
    node = graph.add_node("f", "NoSuchOp", origin=["u"])
    node.meta[FUSED_BY] = "not_a_rule"
    graph.meta[CLUSTERS] = [Cluster("GeOp1_0", ("f",), (), ())]
    [op] = ge_graphs(graph)[0].ops
    assert (op.original_op_names, op.pass_name) == (("u",), "not_a_rule")


def test_every_rule_shows_its_first_vendor_alias() -> None:
    names = fusion_pass_names()
    assert names["matmul_biasadd"] == "MatMulBiasAddFusionPass"
    assert names["adam_apply_one"] == "AdamApplyOneRuleCond1"


def test_the_device_op_and_inputs_come_before_the_cpu_form() -> None:
    graph = Graph()
    x = graph.add_node("x", "Placeholder")
    node = graph.add_node("g", "Gelu_DT_FLOAT_0123__tf2npu", [x.output()])
    assert (device_op(node), device_inputs(node)) == (node.op, ((x.output(),), ()))
    node.meta[DEVICE_FORM] = DeviceForm("Cast", (TensorRef("y"),), ("z",))
    assert (device_op(node), device_inputs(node)) == ("Cast", ((TensorRef("y"),), ("z",)))
    node.meta[NPU_OP_META] = "Gelu"
    assert device_op(node) == "Gelu"


@pytest.mark.parametrize(
    ("dtype", "name"),
    [(1, "DT_FLOAT"), (19, "DT_FLOAT16"), (14, "DT_BF16"), (3, "DT_INT32"), (10, "DT_BOOL"),
     (7, "DT_STRING"), (20, "DT_RESOURCE"), (101, "DT_FLOAT"), (119, "DT_FLOAT16"),
     (0, "DT_UNDEFINED"), (99, "DT_UNDEFINED"), (None, "DT_UNDEFINED")],
)  # fmt: skip
def test_tensorflow_dtypes_by_their_ge_names(dtype: int | None, name: str) -> None:
    assert ge_dtype_name(dtype) == name


def typed(dtype: int) -> dict[str, Any]:
    attr_value = pytest.importorskip("tensorflow.core.framework.attr_value_pb2")
    return {"T": attr_value.AttrValue(type=dtype)}


@pytest.mark.tf
def test_two_user_tensors_on_one_output_the_one_of_its_dtype_keeps_it() -> None:
    """half16 (float16) comes first in graph order but f32 has the output's dtype, and of two
    in its dtype the first (f32, not again) keeps it; ``user`` replaced by a user node and
    ``far`` replaced outside the GeOps are carried by no member."""
    graph = Graph()
    x = graph.add_node("x", "Placeholder")
    half16 = graph.add_node("half16", "Identity", [x.output()], attrs=typed(19))
    f32 = graph.add_node("f32", "Identity", [x.output()], attrs=typed(1))
    again = graph.add_node("again", "Identity", [x.output()], attrs=typed(1))
    user = graph.add_node("user", "Identity", [x.output()], attrs=typed(1))
    far = graph.add_node("far", "Identity", [x.output()], attrs=typed(1))
    new = graph.add_node("f32/_tf2npu_new", "Identity", [x.output()], attrs=typed(1),
                         origin=["f32"])  # fmt: skip
    outside = graph.add_node("far/_tf2npu_new", "Identity", [x.output()], attrs=typed(1),
                             origin=["far"])  # fmt: skip
    supersede(graph, half16, {0: new.output()}, by="test")
    supersede(graph, f32, {0: new.output()}, by="test")
    supersede(graph, again, {0: new.output()}, by="test")
    supersede(graph, user, {0: x.output()}, by="test")
    supersede(graph, far, {0: outside.output()}, by="test")
    assert carriers(graph, {"x", new.name}) == {new.output(): f32.output()}

"""The precision pass on small literal graphs: per mode, per mixed-precision class, the rewrite.

Signatures come from TensorFlow's op registry and the rewrite writes ``AttrValue`` protos, so
every test here needs TensorFlow. Each run is linted against the graph's signature before the
pass (original names and float32 outputs survive) and checked for cast-to-cast chains.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest

from tf2npu.config.fusion_switch import FusionSwitch
from tf2npu.config.mixlist import Mixlist
from tf2npu.config.options import NpuOptions
from tf2npu.errors import UnknownNameError
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import (
    PLACEMENT,
    PRECISION,
    SUPERSEDED,
    Diagnostics,
    Placement,
    PrecisionDecision,
    replacement_of,
)
from tf2npu.graph.ir import FunctionGraph, Graph, Node, TensorRef, is_reserved_name
from tf2npu.graph.lint import Signature
from tf2npu.graph.opinfo import OpInfo, OpLibrary, load_default
from tf2npu.graph.opinfo import mixlist as opinfo_mixlist
from tf2npu.graph.passes.infra import PassContext, PassResult
from tf2npu.graph.passes.precision import PrecisionPass

pytestmark = pytest.mark.tf
attr_value_pb2 = pytest.importorskip("tensorflow.core.framework.attr_value_pb2")

F32, F16, BF16, I32 = 1, 19, 14, 3


def t(dtype: int = F32) -> object:
    return attr_value_pb2.AttrValue(type=dtype)


class Builder:
    """A graph of real op types; nodes are device nodes unless ``host=True``."""

    def __init__(self, graph: Graph | None = None) -> None:
        self.g = graph if graph is not None else Graph()

    def op(self, name: str, op: str, *inputs: str, host: bool = False, **attrs: object) -> Node:
        node = self.g.add_node(name, op, [TensorRef.parse(i) for i in inputs], attrs=dict(attrs))
        node.meta[PLACEMENT] = Placement(not host)
        return node

    def x(self, name: str = "x") -> Node:
        return self.op(name, "Placeholder", dtype=t())

    def unary(self, name: str, op: str, src: str, **kw: object) -> Node:
        return self.op(name, op, src, T=t(), **kw)

    def binary(self, name: str, op: str, a: str, b: str, **kw: object) -> Node:
        return self.op(name, op, a, b, T=t(), **kw)


def config(
    mode: str | None = None,
    *,
    v2: str | None = None,
    ops: Mapping[str, OpInfo] | None = None,
    mixlist: str = "",
) -> EngineConfig:
    values: dict[str, str] = {}
    if mode is not None:
        values["precision_mode"] = mode
    if v2 is not None:
        values["precision_mode_v2"] = v2
    infos = {info.op: info for info in load_default()}
    infos.update(ops or {})
    library = OpLibrary(infos)
    classes = {info.op: info.precision for info in library}
    if mixlist:
        classes = opinfo_mixlist.apply(Mixlist.parse(mixlist), library, classes, Diagnostics())
    return EngineConfig(NpuOptions.from_values(values), library, classes, FusionSwitch.all_on({}))


def run(graph: Graph, cfg: EngineConfig) -> PassResult[Graph]:
    baseline = Signature.of(graph)
    result = PrecisionPass().run(graph, PassContext(config=cfg))
    graph.lint(baseline)
    for body in graph.walk():
        for node in body:
            if node.op == "Cast" and is_reserved_name(node.name):
                producer = body.get(node.inputs[0].node)
                assert producer is None or not (
                    producer.op == "Cast" and is_reserved_name(producer.name)
                ), f"{node.name} reads another inserted cast"
    return result


def decision(g: Graph, name: str) -> PrecisionDecision:
    found: PrecisionDecision = g[name].meta[PRECISION]
    return found


def slug(g: Graph, name: str) -> str:
    return decision(g, name).reason.split(":")[0]


def inputs(g: Graph, name: str) -> list[str]:
    return [str(r) for r in g[name].inputs]


def added(g: Graph) -> list[str]:
    return sorted(n.name for n in g if is_reserved_name(n.name))


def mlp_chain() -> Builder:
    """x -> mm(MatMul x,w) -> relu -> sm(Softmax) -> out(host Identity)."""
    b = Builder()
    b.x()
    b.x("w")
    b.binary("mm", "MatMul", "x", "w")
    b.unary("relu", "Relu", "mm")
    b.unary("sm", "Softmax", "relu")
    b.op("out", "Identity", "sm", T=t(), host=True)
    return b


# -- modes that keep float32 ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "v2"),
    [("force_fp32", None), ("must_keep_origin_dtype", None), (None, "origin")],
)
def test_keep_modes_change_nothing_and_say_so(mode: str | None, v2: str | None) -> None:
    b = mlp_chain()
    result = run(b.g, config(mode, v2=v2))
    assert added(b.g) == []
    assert result.changed is False
    assert dict(result.stats) == {"casts_inserted": 0, "nodes_fp16": 0, "nodes_fp32": 5}
    assert decision(b.g, "mm") == PrecisionDecision(
        "float32", "float32", f"origin_dtype: precision_mode {mode or v2} keeps float32"
    )
    assert PRECISION not in b.g["out"].meta  # host node: not judged


def test_cube_mode_keeps_dtypes_and_reports_the_approximation() -> None:
    b = mlp_chain()
    cfg = config("cube_fp16in_fp32out")
    run(b.g, cfg)
    assert added(b.g) == []
    [info] = cfg.diagnostics.of("info")
    assert info.code == "precision_mode_approximated"


def test_unknown_mode_is_an_error_listing_the_modes() -> None:
    with pytest.raises(UnknownNameError, match=r"'fp17'.*allow_mix_precision"):
        run(mlp_chain().g, config("fp17"))


# -- allow_fp32_to_fp16 (the default) --------------------------------------------------------
def no_fp32(op: str, **changes: object) -> dict[str, OpInfo]:
    info = dataclasses.replace(load_default().get(op), has_fp32_kernel=False, **changes)
    return {op: info}


def test_default_mode_lowers_only_ops_without_an_fp32_kernel() -> None:
    b = mlp_chain()
    result = run(b.g, config(ops=no_fp32("Relu")))
    g = b.g
    assert slug(g, "mm") == "fp32_kernel"
    assert decision(g, "relu") == PrecisionDecision(
        "float32", "float16", "no_fp32_kernel: Relu has no float32 kernel"
    )
    assert added(g) == ["mm/_tf2npu_to_fp16", "relu/_tf2npu_fp16", "relu/_tf2npu_to_f32"]
    assert inputs(g, "relu/_tf2npu_fp16") == ["mm/_tf2npu_to_fp16"]
    assert g["relu/_tf2npu_fp16"].attrs["T"].type == F16
    assert g["relu/_tf2npu_fp16"].origin == ("relu",)
    assert inputs(g, "sm") == ["relu/_tf2npu_to_f32"]
    assert g["relu/_tf2npu_to_f32"].attrs["SrcT"].type == F16
    assert g["relu/_tf2npu_to_f32"].attrs["DstT"].type == F32
    assert g["relu/_tf2npu_to_f32"].attrs["Truncate"].b is False
    assert g["relu"].meta[SUPERSEDED].by == "precision"
    assert replacement_of(g, TensorRef("relu")) == TensorRef("relu/_tf2npu_to_f32")
    assert dict(result.stats) == {"casts_inserted": 2, "nodes_fp16": 1, "nodes_fp32": 4}


def test_default_mode_warns_when_an_op_has_neither_fp32_nor_fp16_kernel() -> None:
    b = mlp_chain()
    cfg = config(ops=no_fp32("Relu", float_dtypes=frozenset({"float32"})))
    run(b.g, cfg)
    assert slug(b.g, "relu") == "no_fp16_kernel"
    [warning] = cfg.diagnostics.of("warning")
    assert (warning.code, warning.node) == ("precision_unrunnable", "relu")
    assert "without_npu_compile_scope" in warning.fix


# -- force_fp16 ------------------------------------------------------------------------------
@pytest.mark.parametrize(("mode", "v2"), [("force_fp16", None), (None, "fp16")])
def test_force_lowers_every_op_with_an_fp16_kernel_without_ping_pong(
    mode: str | None, v2: str | None
) -> None:
    b = mlp_chain()
    result = run(b.g, config(mode, v2=v2))
    g = b.g
    assert slug(g, "x") == "no_fp16_kernel"  # Placeholder has no AI-Core kernel
    for name in ("mm", "relu", "sm"):
        assert decision(g, name).after == "float16"
    assert inputs(g, "mm/_tf2npu_fp16") == ["x/_tf2npu_to_fp16", "w/_tf2npu_to_fp16"]
    assert inputs(g, "relu/_tf2npu_fp16") == ["mm/_tf2npu_fp16"]
    assert inputs(g, "sm/_tf2npu_fp16") == ["relu/_tf2npu_fp16"]
    assert inputs(g, "out") == ["sm/_tf2npu_to_f32"]  # the host reader gets float32
    assert PRECISION not in g["out"].meta
    # mm's and relu's casts back are read by superseded originals only: not counted.
    assert dict(result.stats) == {"casts_inserted": 3, "nodes_fp16": 3, "nodes_fp32": 2}


def test_a_shared_cast_serves_every_lowered_reader_of_a_tensor() -> None:
    b = Builder()
    b.x()
    b.unary("r1", "Relu", "x")
    b.unary("r2", "Relu", "x")
    result = run(b.g, config("force_fp16"))
    assert inputs(b.g, "r1/_tf2npu_fp16") == inputs(b.g, "r2/_tf2npu_fp16") == ["x/_tf2npu_to_fp16"]
    assert result.stats["casts_inserted"] == 1


def test_int_tensors_and_int_inputs_are_untouched() -> None:
    b = Builder()
    b.x()
    b.op("shape", "Placeholder", dtype=t(I32))
    b.op("r", "Reshape", "x", "shape", T=t(), Tshape=t(I32))
    b.op("ints", "Relu", "shape", T=t(I32))
    run(b.g, config("force_fp16"))
    g = b.g
    assert inputs(g, "r/_tf2npu_fp16") == ["x/_tf2npu_to_fp16", "shape"]
    assert g["r/_tf2npu_fp16"].attrs["Tshape"].type == I32
    assert PRECISION not in g["ints"].meta
    assert PRECISION not in g["shape"].meta


def test_host_nodes_are_untouched() -> None:
    b = Builder()
    b.x()
    b.op("h", "Relu", "x", T=t(), host=True)
    b.unary("d", "Relu", "h")
    run(b.g, config("force_fp16"))
    assert PRECISION not in b.g["h"].meta
    assert inputs(b.g, "d/_tf2npu_fp16") == ["h/_tf2npu_to_fp16"]
    assert b.g["h/_tf2npu_to_fp16"].meta[PLACEMENT].device is True


def test_nodes_without_a_placement_are_untouched() -> None:
    g = Graph()
    g.add_node("x", "Placeholder", attrs={"dtype": t()})
    g.add_node("r", "Relu", [TensorRef("x")], attrs={"T": t()})
    result = run(g, config("force_fp16"))
    assert added(g) == []
    assert result.stats["nodes_fp32"] == 0


@pytest.mark.parametrize("value", [True, 1])
def test_keep_dtype_scope_nodes_are_untouched(value: bool | int) -> None:
    b = mlp_chain()
    kept = attr_value_pb2.AttrValue(b=True) if value is True else attr_value_pb2.AttrValue(i=1)
    b.g["relu"].attrs["_keep_dtype"] = kept
    run(b.g, config("force_fp16"))
    g = b.g
    assert decision(g, "relu") == PrecisionDecision(
        "float32", "float32", "keep_dtype_scope: under keep_dtype_scope (_keep_dtype)"
    )
    assert SUPERSEDED not in g["relu"].meta
    assert inputs(g, "relu") == ["mm/_tf2npu_to_f32"]
    assert inputs(g, "sm/_tf2npu_fp16") == ["relu/_tf2npu_to_fp16"]


@pytest.mark.parametrize("mode", ["force_fp16", "allow_mix_precision", "allow_fp32_to_fp16"])
def test_keep_fp32_override_nodes_stay_float32_in_every_mode(mode: str) -> None:
    from tf2npu.config.overrides import EngineOverrides, KeepFp32

    b = mlp_chain()
    cfg = config(mode, ops=no_fp32("MatMul"))
    keep = KeepFp32(frozenset({"mm", "relu"}), "keep.json")
    cfg = dataclasses.replace(cfg, overrides=EngineOverrides(keep_fp32=keep))
    run(b.g, cfg)
    for name in ("mm", "relu"):
        assert decision(b.g, name) == PrecisionDecision(
            "float32", "float32", "keep_fp32: kept in float32 by keep.json"
        )
        assert SUPERSEDED not in b.g[name].meta
    assert inputs(b.g, "relu") == ["mm"]


def test_control_readers_of_a_lowered_node_wait_for_its_replacement() -> None:
    b = mlp_chain()
    b.op("after", "NoOp")
    b.g.add_control_input(b.g["after"], "relu")
    run(b.g, config("force_fp16"))
    assert b.g["after"].control_inputs == ("relu/_tf2npu_to_f32",)


# -- signatures that cannot switch --------------------------------------------------------
def with_fp16(op: str) -> dict[str, OpInfo]:
    return {op: OpInfo(op, True, float_dtypes=frozenset({"float16", "float32"}))}


def test_a_ref_input_keeps_the_node_float32() -> None:
    b = Builder()
    b.op("var", "VariableV2", dtype=t(), shape=attr_value_pb2.AttrValue())
    b.x("lr")
    b.x("grad")
    b.op("apply", "ApplyGradientDescent", "var", "lr", "grad", T=t())
    run(b.g, config("force_fp16"))
    assert decision(b.g, "apply").reason == ("variable_dtype: arg 'var' is a float32 reference")
    assert added(b.g) == []


def test_an_attr_that_excludes_half_keeps_the_node_float32() -> None:
    b = Builder()
    b.x()
    b.op("n", "Betainc", "x", "x", "x", T=t())
    run(b.g, config("force_fp16", ops=with_fp16("Betainc")))
    assert slug(b.g, "n") == "dtype_not_allowed"


def test_a_float32_fixed_by_the_op_definition_keeps_the_node_float32() -> None:
    b = Builder()
    b.x()
    b.op("size", "Placeholder", dtype=t(I32))
    b.op("n", "ResizeBilinear", "x", "size", T=t())
    run(b.g, config("force_fp16", ops=with_fp16("ResizeBilinear")))
    assert decision(b.g, "n").reason == (
        "fixed_dtype: arg 'resized_images' is float32 by definition"
    )


def test_a_dtype_list_keeps_the_node_float32() -> None:
    b = Builder()
    b.x()
    lst = attr_value_pb2.AttrValue()
    lst.list.type.extend([F32, I32])
    b.op("n", "IdentityN", "x", "x", T=lst)
    run(b.g, config("force_fp16", ops=with_fp16("IdentityN")))
    assert slug(b.g, "n") == "list_dtype"


def test_an_unknown_op_with_a_float_attr_is_judged_but_never_lowered() -> None:
    b = Builder()
    b.x()
    b.op("n", "NoSuchOp", "x", T=t())
    run(b.g, config("force_fp16", ops=with_fp16("NoSuchOp")))
    assert slug(b.g, "n") == "unknown_signature"


# -- allow_mix_precision ------------------------------------------------------------------
def mixed_graph() -> Builder:
    """Two matmuls with a reshape between, a bias add, a softmax, then a deny L2Loss and its
    followers.

    x,w -> mm1 -> rs(Reshape) -> mm2 -> ba(BiasAdd) -> sm(Softmax) -> l2(L2Loss)
        -> add(Add l2, ba) -> neg(Neg) -> mm3(MatMul neg, w) -> gray(Mul x, x)
    """
    b = Builder()
    b.x()
    b.x("w")
    b.op("shape", "Placeholder", dtype=t(I32))
    b.binary("mm1", "MatMul", "x", "w")
    b.op("rs", "Reshape", "mm1", "shape", T=t(), Tshape=t(I32))
    b.binary("mm2", "MatMul", "rs", "w")
    b.binary("ba", "BiasAdd", "mm2", "x")
    b.unary("sm", "Softmax", "ba")
    b.unary("l2", "L2Loss", "sm")
    b.binary("add", "AddV2", "l2", "ba")
    b.unary("neg", "Neg", "add")
    b.binary("mm3", "MatMul", "neg", "w")
    b.binary("gray", "Mul", "x", "x")
    return b


@pytest.mark.parametrize(("mode", "v2"), [("allow_mix_precision", None), (None, "mixed_float16")])
def test_mixed_precision_classes(mode: str | None, v2: str | None) -> None:
    b = mixed_graph()
    result = run(b.g, config(mode, v2=v2))
    g = b.g
    names = ("mm1", "rs", "ba", "sm", "l2", "add", "neg", "gray")
    reasons = {n: decision(g, n).reason for n in names}
    assert reasons == {
        "mm1": "allow_list: MatMul is in the allow list",
        "rs": "follows_lowered: follows fp16 input 'mm1'",
        "ba": "follows_lowered: follows fp16 input 'mm2'",
        "sm": "follows_lowered: follows fp16 input 'ba'",  # gray on Ascend (no flag)
        "l2": "deny_list: L2Loss is in the deny list",  # precision_reduce false
        "add": "deny_spread: deny spreads from 'l2'",  # deny wins over the fp16 'ba'
        "neg": "deny_spread: deny spreads from 'l2'",
        "gray": "no_lowered_input: gray op with no fp16 float input",
    }
    assert decision(g, "mm3").after == "float16"  # the spread stops at an allow op
    # No ping-pong around the clear Reshape between the matmuls.
    assert inputs(g, "rs/_tf2npu_fp16") == ["mm1/_tf2npu_fp16", "shape"]
    assert inputs(g, "mm2/_tf2npu_fp16") == ["rs/_tf2npu_fp16", "w/_tf2npu_to_fp16"]
    assert inputs(g, "sm/_tf2npu_fp16") == ["ba/_tf2npu_fp16"]
    assert inputs(g, "l2") == ["sm/_tf2npu_to_f32"]
    assert inputs(g, "add") == ["l2", "ba/_tf2npu_to_f32"]
    assert inputs(g, "mm3/_tf2npu_fp16") == ["neg/_tf2npu_to_fp16", "w/_tf2npu_to_fp16"]
    # x, w, neg cast down; sm's cast back is read by l2, ba's by add; mm3's by nobody.
    assert dict(result.stats) == {"casts_inserted": 5, "nodes_fp16": 6, "nodes_fp32": 6}


MOVE_MATMUL_TO_DENY = '{"black-list": {"to-add": ["MatMul"]}}'
REMOVE_MATMUL_FROM_ALLOW = '{"white-list": {"to-remove": ["MatMul"]}}'
MOVE_L2LOSS_TO_ALLOW = '{"white-list": {"to-add": ["L2Loss"]}}'
MOVE_SOFTMAX_TO_DENY = '{"black-list": {"to-add": ["SoftmaxV2"]}}'  # the GE op type


@pytest.mark.parametrize(
    ("mixlist", "expected"),
    [
        (MOVE_MATMUL_TO_DENY, {"mm1": "mixlist_deny", "rs": "deny_spread", "l2": "deny_list"}),
        (REMOVE_MATMUL_FROM_ALLOW, {"mm1": "no_lowered_input", "rs": "no_lowered_input"}),
        (
            MOVE_L2LOSS_TO_ALLOW,
            {"mm1": "allow_list", "l2": "mixlist_allow", "add": "follows_lowered"},
        ),
        (
            MOVE_SOFTMAX_TO_DENY,
            {"ba": "follows_lowered", "sm": "mixlist_deny", "l2": "deny_list"},
        ),
    ],
)
def test_modify_mixlist_moves_ops_between_classes(mixlist: str, expected: dict[str, str]) -> None:
    b = mixed_graph()
    run(b.g, config("allow_mix_precision", mixlist=mixlist))
    assert {name: slug(b.g, name) for name in expected} == expected


def test_modify_mixlist_file_is_read_by_the_engine_config(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "ops_info.json"
    path.write_text(MOVE_MATMUL_TO_DENY)
    options = NpuOptions.from_values(
        {"precision_mode": "allow_mix_precision", "modify_mixlist": str(path)}
    )
    b = mixed_graph()
    run(b.g, EngineConfig.build(options))
    assert slug(b.g, "mm1") == "mixlist_deny"
    assert added(b.g) == []


def test_bfloat16_modes_lower_to_bfloat16_where_the_kernel_has_it() -> None:
    b = mlp_chain()
    ops = {
        "MatMul": dataclasses.replace(
            load_default().get("MatMul"), float_dtypes=frozenset({"bfloat16", "float32"})
        )
    }
    run(b.g, config(v2="mixed_bfloat16", ops=ops))
    g = b.g
    assert decision(g, "mm").after == "bfloat16"
    assert g["mm/_tf2npu_bf16"].attrs["T"].type == BF16
    assert g["x/_tf2npu_to_bf16"].attrs["DstT"].type == BF16
    assert slug(g, "relu") == "no_bf16_kernel"  # Relu has float16 and float32 only


# -- function bodies ------------------------------------------------------------------------
def test_function_bodies_are_lowered_and_keep_their_signature() -> None:
    g = Graph()
    body = FunctionGraph("f", g)
    body.args = ("a", "b")
    fb = Builder(body)
    fb.binary("mm", "MatMul", "a", "b")
    fb.unary("relu", "Relu", "mm:product:0")
    body.ret = {"out": TensorRef("relu", 0, "activations")}
    g.functions["f"] = body
    result = run(g, config("force_fp16"))
    assert inputs(body, "mm/_tf2npu_fp16") == ["a/_tf2npu_to_fp16:y:0", "b/_tf2npu_to_fp16:y:0"]
    assert inputs(body, "relu/_tf2npu_fp16") == ["mm/_tf2npu_fp16:product:0"]
    assert body.ret == {"out": TensorRef("relu/_tf2npu_to_f32", 0, "y")}
    assert inputs(body, "relu") == ["mm/_tf2npu_to_f32:y:0"]  # the superseded original
    assert replacement_of(body, TensorRef("relu", 0, "activations")) == body.ret["out"]
    assert dict(result.stats) == {"casts_inserted": 3, "nodes_fp16": 2, "nodes_fp32": 0}


# -- v1 loops ----------------------------------------------------------------------------
def test_v1_loop_primitives_keep_float32_so_back_edges_carry_no_cast() -> None:
    b = Builder()
    b.x()
    b.op("enter", "Enter", "x", T=t(), frame_name=attr_value_pb2.AttrValue(s=b"f"))
    b.op("merge", "Merge", "enter", "next", T=t(), N=attr_value_pb2.AttrValue(i=2))
    b.unary("relu", "Relu", "merge")
    b.op("next", "NextIteration", "relu", T=t())
    run(b.g, config("force_fp16"))
    g = b.g
    assert slug(g, "merge") == slug(g, "next") == "control_flow"
    assert inputs(g, "merge") == ["enter", "next"]
    assert inputs(g, "next") == ["relu/_tf2npu_to_f32"]
    assert inputs(g, "relu/_tf2npu_fp16") == ["merge/_tf2npu_to_fp16"]


# -- cost ----------------------------------------------------------------------------------
def synthetic(size: int) -> Graph:
    """A chain of ``size`` device nodes cycling through allow, gray and deny ops."""
    b = Builder()
    b.x()
    b.x("w")
    b.op("shape", "Placeholder", dtype=t(I32))
    ops = ("MatMul", "BiasAdd", "Relu", "L2Loss", "AddV2", "Reshape", "Mul", "Exp", "Identity")
    prev = "x"
    for i in range(size - 3):
        op, name = ops[i % len(ops)], f"n{i}"
        if op == "Reshape":
            b.op(name, op, prev, "shape", T=t(), Tshape=t(I32))
        elif op in ("MatMul", "BiasAdd", "AddV2", "Mul"):
            b.binary(name, op, prev, "w")
        else:
            b.unary(name, op, prev)
        prev = name
    return b.g


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["allow_mix_precision", "force_fp16"])
def test_the_pass_decides_every_node_of_a_10k_node_graph(mode: str) -> None:
    """At scale every float node is judged (speed: benchmarks/graph_passes.py)."""
    graph = synthetic(10_000)
    result = PrecisionPass().run(graph, PassContext(config=config(mode)))
    assert result.stats["nodes_fp16"] + result.stats["nodes_fp32"] > 0

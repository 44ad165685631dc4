"""float16 ops run as float32 ops plus a rounding: literal rewrites, and bit-identical values.

Every numeric case runs the graph before and after the rewrite in TensorFlow and compares the
bits of every float16 and float32 tensor the test names (NaNs compared as NaNs), on inputs
spread over float16's whole range: subnormals, signed zeros, values near overflow, infinities.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tf2npu.graph.decisions import CLUSTER, DEVICE_FORM, FUSED_BY, SUPERSEDED, DeviceForm
from tf2npu.graph.ir import Graph, TensorRef
from tf2npu.graph.lint import Signature
from tf2npu.graph.passes.cpu_runnable import CPU_FORM
from tf2npu.graph.passes.half_via_fp32 import (
    EXACT,
    HALF_ROUND_OP,
    ROUNDED,
    ZERO_SIGN_MAY_DIFFER,
    compute_half_in_fp32,
)
from tf2npu.runtime.native import HALF_ROUND_LIBRARY, half_round_available

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
from tensorflow.core.framework.attr_value_pb2 import AttrValue  # noqa: E402

HALF, FLOAT, INT32 = 19, 1, 3
RNG = np.random.default_rng(11)
#: ``Tf2npuHalfRound`` is built and registered: every numeric case also runs with it.
HALF_ROUND = half_round_available()
needs_half_round = pytest.mark.skipif(
    not HALF_ROUND, reason=f"{HALF_ROUND_LIBRARY} is not built (make half-round)"
)


def typ(dtype: int) -> Any:
    return AttrValue(type=dtype)


def ints(*values: int) -> Any:
    return AttrValue(list=AttrValue.ListValue(i=list(values)))


def cast(graph: Graph, name: str, source: str, src: int, dst: int) -> None:
    attrs = {"SrcT": typ(src), "DstT": typ(dst), "Truncate": AttrValue(b=False)}
    graph.add_node(name, "Cast", [TensorRef(source)], attrs=attrs)


def half_inputs(graph: Graph, *names: str) -> None:
    """``<name>`` float32 placeholders, ``<name>16`` their float16 casts (the precision pass's)."""
    for name in names:
        graph.add_node(name, "Placeholder", attrs={"dtype": typ(FLOAT)})
        cast(graph, f"{name}16", name, FLOAT, HALF)


def spread(shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """float32 values over float16's range: tiny, normal, large, overflowing, special."""
    scale = RNG.choice([1e-7, 1e-5, 1e-2, 1.0, 3.0, 300.0, 3e4, 7e4], size=shape)
    values = (RNG.standard_normal(shape) * scale).astype(np.float32)
    flat = values.reshape(-1)
    special = [0.0, -0.0, np.inf, -np.inf, 65504.0, 6e-8]
    flat[: len(special)] = special[: flat.size]
    return values


def run(graph: Graph, fetches: list[str], feeds: dict[str, Any]) -> list[Any]:
    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(graph.to_graph_def(), name="")
    with tf.compat.v1.Session(graph=tf_graph) as session:
        named = {f"{k}:0": v for k, v in feeds.items()}
        return list(session.run([f"{f}:0" for f in fetches], named))


def assert_same_bits(before: list[Any], after: list[Any], *, signed_zero: bool = True) -> None:
    """The same bits; with ``signed_zero=False`` a zero may change sign (-0.0 == 0.0)."""
    for old, new in zip(before, after, strict=True):
        assert old.dtype == new.dtype and old.shape == new.shape
        nan = np.isnan(old)
        np.testing.assert_array_equal(nan, np.isnan(new))
        if not signed_zero:
            old, new = np.where(old == 0, 0, old), np.where(new == 0, 0, new)
        bits = {np.float16: np.uint16, np.float32: np.uint32}[old.dtype.type]
        np.testing.assert_array_equal(old[~nan].view(bits), new[~nan].view(bits))


def rewritten_equals(
    graph: Graph, fetches: list[str], feeds: dict[str, Any], *, signed_zero: bool = True
) -> dict[str, int]:
    """Rewrites ``graph`` (lint against before) and checks every fetch keeps its bits; when
    the rounding op is built, a copy rewritten with it first (the bits must be the same)."""
    before = run(graph, fetches, feeds)
    if HALF_ROUND:
        copy = Graph.from_graph_def(graph.to_graph_def())
        baseline = Signature.of(copy)
        compute_half_in_fp32(copy, half_round=True)
        copy.lint(baseline)
        assert_same_bits(before, run(copy, fetches, feeds), signed_zero=signed_zero)
    baseline = Signature.of(graph)
    stats = compute_half_in_fp32(graph)
    graph.lint(baseline)
    assert_same_bits(before, run(graph, fetches, feeds), signed_zero=signed_zero)
    return stats


# -- literal rewrites --------------------------------------------------------------------------


def relu_chain() -> Graph:
    """x → x16 (Cast) → relu (float16) → out (Cast to float32)."""
    graph = Graph()
    half_inputs(graph, "x")
    graph.add_node("relu", "Relu", [TensorRef("x16")], attrs={"T": typ(HALF)})
    cast(graph, "out", "relu", HALF, FLOAT)
    return graph


def test_an_exact_op_runs_in_fp32_and_its_fp32_reader_reads_the_twin() -> None:
    graph = relu_chain()
    graph["relu"].meta[CLUSTER] = "GeOp1_0"
    stats = rewritten_equals(graph, ["relu", "out"], {"x": spread((4, 64))}, signed_zero=False)
    assert stats == {"half_ops_via_fp32": 1, "half_casts_elided": 1, "half_roundings_in_one_op": 0}
    twin, wide = graph["x16/_tf2npu_twin_f32"], graph["relu/_tf2npu_f32"]
    assert (twin.op, twin.inputs, twin.attrs["DstT"].type) == ("Cast", (TensorRef("x16"),), FLOAT)
    assert (wide.op, wide.inputs, wide.attrs["T"].type) == ("Relu", (twin.output(),), FLOAT)
    relu = graph["relu"]  # the float16 tensor keeps its name and dtype, for dumps
    assert (relu.op, relu.inputs, relu.attrs["DstT"].type) == ("Cast", (wide.output(),), HALF)
    out = graph["out"]  # no float16 round trip: relu of float16 values is a float16 value
    assert (out.op, out.inputs, out.attrs["T"].type) == ("Identity", (wide.output(),), FLOAT)
    assert relu.meta[CLUSTER] == wide.meta[CLUSTER] == "GeOp1_0"
    assert wide.meta[CPU_FORM] == "half via fp32 Relu"
    assert relu.meta[DEVICE_FORM] == DeviceForm("Relu", (TensorRef("x16"),))
    assert out.meta[DEVICE_FORM] == DeviceForm("Cast", (TensorRef("relu"),))


def test_a_twin_shares_its_producers_geop_not_its_form_nor_its_fusion() -> None:
    graph = relu_chain()
    form = DeviceForm("Cast", (TensorRef("x"),))
    graph["x16"].meta.update({CLUSTER: "GeOp1_0", DEVICE_FORM: form, FUSED_BY: "rule"})
    compute_half_in_fp32(graph)
    assert graph["x16/_tf2npu_twin_f32"].meta == {
        CLUSTER: "GeOp1_0",
        CPU_FORM: "half via fp32 twin",
    }


def test_a_rounded_op_keeps_its_rounding_and_its_fp32_reader() -> None:
    graph = Graph()
    half_inputs(graph, "x", "y")
    graph.add_node("add", "AddV2", [TensorRef("x16"), TensorRef("y16")], attrs={"T": typ(HALF)})
    cast(graph, "out", "add", HALF, FLOAT)
    graph.add_node("relu", "Relu", [TensorRef("add")], attrs={"T": typ(HALF)})
    feeds = {"x": spread((4, 64)), "y": spread((4, 64))}
    stats = rewritten_equals(graph, ["add", "out", "relu"], feeds, signed_zero=False)
    assert stats == {"half_ops_via_fp32": 2, "half_casts_elided": 0, "half_roundings_in_one_op": 0}
    wide = graph["add/_tf2npu_f32"]
    assert wide.inputs == (TensorRef("x16/_tf2npu_twin_f32"), TensorRef("y16/_tf2npu_twin_f32"))
    assert graph["add"].op == "Cast" and graph["add"].inputs == (wide.output(),)
    assert graph["out"].op == "Cast"  # the float32 value of a rounded result: a Cast, shared
    assert graph["relu/_tf2npu_f32"].inputs == (TensorRef("out"),)


def test_a_second_fp32_cast_of_a_half_tensor_reads_the_first() -> None:
    """Two readers cast ``g16`` (a gradient both Conv2DBackprop* ops read): one conversion."""
    graph = Graph()
    half_inputs(graph, "g")
    cast(graph, "first", "g16", HALF, FLOAT)
    cast(graph, "second", "g16", HALF, FLOAT)
    graph.add_node("after", "NoOp")
    graph.add_control_input(graph["second"], "after")
    stats = rewritten_equals(graph, ["first", "second"], {"g": spread((4, 64))})
    assert stats == {"half_ops_via_fp32": 0, "half_casts_elided": 1, "half_roundings_in_one_op": 0}
    assert graph["first"].op == "Cast"
    second = graph["second"]
    assert (second.op, second.inputs, second.control_inputs) == (
        "Identity",
        (TensorRef("first"),),
        ("after",),
    )


def test_with_the_op_a_rounded_op_is_read_back_through_one_rounding() -> None:
    """``add`` (float16) → float32 readers: ``HalfRound`` of the float32 sum, not a Cast pair;
    the float16 ``Cast`` keeps the name ``add`` for fetches and dumps."""
    graph = Graph()
    half_inputs(graph, "x", "y")
    graph.add_node("add", "AddV2", [TensorRef("x16"), TensorRef("y16")], attrs={"T": typ(HALF)})
    cast(graph, "out", "add", HALF, FLOAT)
    stats = compute_half_in_fp32(graph, half_round=True)
    assert stats == {"half_ops_via_fp32": 1, "half_casts_elided": 1, "half_roundings_in_one_op": 3}
    wide, rounded = graph["add/_tf2npu_f32"], graph["add/_tf2npu_f32_round"]
    # the inputs' twins: a rounding of the float32 placeholders the precision casts read
    assert [graph[ref.node].op for ref in wide.inputs] == [HALF_ROUND_OP, HALF_ROUND_OP]
    assert graph["x16/_tf2npu_twin_f32"].inputs == (TensorRef("x"),)
    assert (rounded.op, rounded.inputs, rounded.attrs) == (HALF_ROUND_OP, (wide.output(),), {})
    add = graph["add"]
    assert (add.op, add.inputs, add.attrs["DstT"].type) == ("Cast", (wide.output(),), HALF)
    out = graph["out"]
    assert (out.op, out.inputs) == ("Identity", (rounded.output(),))


def test_with_the_op_a_cast_pair_becomes_one_rounding() -> None:
    """x (float32) → x16 (Cast) → back (Cast to float32): ``back`` rounds ``x`` itself; a
    truncating Cast or one with control inputs keeps the pair."""
    graph = Graph()
    half_inputs(graph, "x", "t", "c")
    graph["t16"].attrs["Truncate"] = AttrValue(b=True)
    graph.add_node("first", "NoOp")
    graph.add_control_input(graph["c16"], "first")
    for name in ("x", "t", "c"):
        cast(graph, f"{name}_back", f"{name}16", HALF, FLOAT)
    assert compute_half_in_fp32(graph, half_round=True)["half_roundings_in_one_op"] == 1
    back = graph["x_back"]
    assert (back.op, back.inputs, back.meta[CPU_FORM]) == (
        HALF_ROUND_OP,
        (TensorRef("x"),),
        "half via fp32 rounding",
    )
    assert back.meta[DEVICE_FORM] == DeviceForm("Cast", (TensorRef("x16"),))
    assert graph["t_back"].op == graph["c_back"].op == "Cast"
    assert graph["x16"].op == "Cast"  # the float16 tensor stays, under its name


def test_without_the_op_no_rounding_op_is_emitted() -> None:
    graph = Graph()
    half_inputs(graph, "x")
    cast(graph, "back", "x16", HALF, FLOAT)
    compute_half_in_fp32(graph)
    assert all(node.op != HALF_ROUND_OP for node in graph)


@needs_half_round
def test_a_conv_net_chain_rewritten_with_the_op_uses_it() -> None:
    """The numeric cases run with the op only if it loads: make sure it did, on a graph."""
    graph = Graph()
    half_inputs(graph, "x", "y")
    graph.add_node("mul", "Mul", [TensorRef("x16"), TensorRef("y16")], attrs={"T": typ(HALF)})
    cast(graph, "out", "mul", HALF, FLOAT)
    # Not spread(): drawing from RNG here would change the later tests' draws.
    local = np.random.default_rng(5)
    feeds = {name: local.standard_normal((8, 64)).astype(np.float32) * 3e4 for name in "xy"}
    before = run(graph, ["mul", "out"], feeds)
    compute_half_in_fp32(graph, half_round=True)
    assert graph["out"].inputs == (TensorRef("mul/_tf2npu_f32_round"),)
    assert_same_bits(before, run(graph, ["mul", "out"], feeds))


def pool_attrs(ksize: tuple[int, int], strides: tuple[int, int], padding: str) -> dict[str, Any]:
    return {"ksize": ints(1, *ksize, 1), "strides": ints(1, *strides, 1),
            "padding": AttrValue(s=padding.encode()), "T": typ(HALF)}  # fmt: skip


def max_pool_grad_graph(
    ksize: tuple[int, int], strides: tuple[int, int], padding: str, **extra: Any
) -> Graph:
    """x → x16 → pool (MaxPool) → grad (MaxPoolGrad of g16) → out (Cast to float32)."""
    graph = Graph()
    half_inputs(graph, "x", "g")
    attrs = {**pool_attrs(ksize, strides, padding), **extra}
    graph.add_node("pool", "MaxPool", [TensorRef("x16")], attrs=attrs)
    graph.add_node("grad", "MaxPoolGrad", [TensorRef("x16"), TensorRef("pool"), TensorRef("g16")],
                   attrs=attrs)  # fmt: skip
    cast(graph, "out", "grad", HALF, FLOAT)
    return graph


def test_an_overlapping_max_pool_grad_finds_the_maxima_in_fp32_and_adds_in_fp16() -> None:
    graph = max_pool_grad_graph((3, 3), (2, 2), "SAME")
    graph["grad"].meta[CLUSTER] = "GeOp1_0"
    assert compute_half_in_fp32(graph) == {
        "half_ops_via_fp32": 2,
        "half_casts_elided": 0,
        "half_roundings_in_one_op": 0,
    }
    argmax, grad = graph["grad/_tf2npu_f32_argmax"], graph["grad"]
    assert (argmax.op, argmax.inputs) == ("MaxPoolWithArgmax", (TensorRef("x16/_tf2npu_twin_f32"),))
    assert (argmax.attrs["T"].type, argmax.attrs["Targmax"].type) == (FLOAT, 9)
    assert argmax.attrs["include_batch_in_index"].b and argmax.attrs["padding"].s == b"SAME"
    assert list(argmax.attrs["ksize"].list.i) == [1, 3, 3, 1]
    assert (grad.op, grad.inputs) == (  # the forward pool's output is no longer read
        "MaxPoolGradWithArgmax",
        (TensorRef("x16"), TensorRef("g16"), TensorRef("grad/_tf2npu_f32_argmax", 1)),
    )
    assert grad.attrs["T"].type == HALF and grad.attrs["include_batch_in_index"].b
    assert graph["out"].op == "Cast"  # a float16 result: its reader still converts it
    assert grad.meta[CLUSTER] == argmax.meta[CLUSTER] == "GeOp1_0"
    assert argmax.meta[CPU_FORM] == "half via fp32 MaxPoolGrad"
    assert grad.meta[DEVICE_FORM] == DeviceForm(
        "MaxPoolGrad", (TensorRef("x16"), TensorRef("pool"), TensorRef("g16"))
    )


@pytest.mark.parametrize(
    "extra",
    [
        {"data_format": AttrValue(s=b"NCHW")},  # the CPU kernel has NHWC only: its error stays
        {"padding": AttrValue(s=b"EXPLICIT"), "explicit_paddings": ints(0, 0, 1, 1, 1, 1, 0, 0)},
        {"ksize": ints(1, 3, 3, 2)},  # a window over depth: the kernel's own error stays
    ],
    ids=["NCHW", "EXPLICIT", "depth"],
)
def test_a_max_pool_grad_the_argmax_ops_cannot_compute_keeps_its_kernel(extra: dict) -> None:
    graph = max_pool_grad_graph((3, 3), (2, 2), "SAME")
    graph["grad"].attrs.update(extra)
    compute_half_in_fp32(graph)
    assert graph["grad"].op == "MaxPoolGrad"


def test_superseded_and_float32_nodes_are_left_alone() -> None:
    graph = Graph()
    half_inputs(graph, "x")
    graph.add_node("dead", "Relu", [TensorRef("x16")], attrs={"T": typ(HALF)})
    graph["dead"].meta[SUPERSEDED] = "test"
    graph.add_node("f32", "Relu", [TensorRef("x")], attrs={"T": typ(FLOAT)})
    assert compute_half_in_fp32(graph) == {
        "half_ops_via_fp32": 0,
        "half_casts_elided": 0,
        "half_roundings_in_one_op": 0,
    }
    assert graph["dead"].op == "Relu" and graph["dead"].inputs == (TensorRef("x16"),)
    assert graph["f32"].inputs == (TensorRef("x"),)


def test_a_graph_without_float16_is_unchanged() -> None:
    graph = Graph()
    graph.add_node("x", "Placeholder", attrs={"dtype": typ(FLOAT)})
    graph.add_node("relu", "Relu", [TensorRef("x")], attrs={"T": typ(FLOAT)})
    before = graph.to_graph_def().SerializeToString(deterministic=True)
    assert compute_half_in_fp32(graph) == {
        "half_ops_via_fp32": 0,
        "half_casts_elided": 0,
        "half_roundings_in_one_op": 0,
    }
    assert graph.to_graph_def().SerializeToString(deterministic=True) == before


# -- bit identity, op by op --------------------------------------------------------------------

ZERO_SIGN = ZERO_SIGN_MAY_DIFFER
UNARY = sorted(EXACT & {"Relu", "Relu6", "Neg", "Abs", "Identity"} | {"Square", "Sqrt"})
BINARY = sorted((EXACT & {"Maximum", "Minimum", "ReluGrad", "Relu6Grad"}) | (ROUNDED - {
    "Square", "Sqrt", "BiasAdd"}))  # fmt: skip


@pytest.mark.parametrize("op", UNARY)
def test_unary_ops_give_the_float16_kernels_bits(op: str) -> None:
    graph = Graph()
    half_inputs(graph, "x")
    graph.add_node("y", op, [TensorRef("x16")], attrs={"T": typ(HALF)})
    cast(graph, "out", "y", HALF, FLOAT)
    feeds = {"x": np.abs(spread((8, 128))) if op == "Sqrt" else spread((8, 128))}
    signed = op not in ZERO_SIGN
    stats = rewritten_equals(graph, ["y", "out"], feeds, signed_zero=signed)
    assert stats["half_ops_via_fp32"] == 1


@pytest.mark.parametrize("op", BINARY)
def test_binary_ops_give_the_float16_kernels_bits(op: str) -> None:
    graph = Graph()
    half_inputs(graph, "x", "y", "s")
    graph.add_node("z", op, [TensorRef("x16"), TensorRef("y16")], attrs={"T": typ(HALF)})
    graph.add_node("b", op, [TensorRef("z"), TensorRef("s16")], attrs={"T": typ(HALF)})
    cast(graph, "out", "b", HALF, FLOAT)
    side = (8, 128) if op.endswith("Grad") else (128,)  # the others broadcast
    feeds = {"x": spread((8, 128)), "y": spread((8, 128)), "s": spread(side)}
    signed = op not in ZERO_SIGN
    stats = rewritten_equals(graph, ["z", "b", "out"], feeds, signed_zero=signed)
    assert stats["half_ops_via_fp32"] == 2


def test_a_conv_net_chain_gives_the_same_bits() -> None:
    """BiasAdd → Relu → MaxPool → MaxPoolGrad (2x2/2: no overlap) → Reshape, all float16."""
    graph = Graph()
    half_inputs(graph, "x", "bias", "g")
    t = {"T": typ(HALF)}
    graph.add_node("bias_add", "BiasAdd", [TensorRef("x16"), TensorRef("bias16")],
                   attrs={**t, "data_format": AttrValue(s=b"NHWC")})  # fmt: skip
    graph.add_node("relu", "Relu", [TensorRef("bias_add")], attrs=t)
    pool = {"ksize": ints(1, 2, 2, 1), "strides": ints(1, 2, 2, 1), "padding": AttrValue(s=b"SAME"),
            **t}  # fmt: skip
    graph.add_node("pool", "MaxPool", [TensorRef("relu")], attrs=pool)
    graph.add_node("grad", "MaxPoolGrad", [TensorRef("relu"), TensorRef("pool"), TensorRef("g16")],
                   attrs=pool)  # fmt: skip
    graph.add_node("shape", "Const", attrs={"dtype": typ(INT32), "value": AttrValue(
        tensor=tf.make_tensor_proto(np.array([2, -1], np.int32)))})  # fmt: skip
    graph.add_node("flat", "Reshape", [TensorRef("grad"), TensorRef("shape")],
                   attrs={**t, "Tshape": typ(INT32)})  # fmt: skip
    cast(graph, "pool32", "pool", HALF, FLOAT)
    cast(graph, "out", "flat", HALF, FLOAT)
    feeds = {"x": spread((2, 7, 7, 4)), "bias": spread((4,)), "g": spread((2, 4, 4, 4))}
    feeds["x"][0, :2, :2, :] = 1.0  # ties inside a window: the same element must win
    fetches = ["bias_add", "relu", "pool", "grad", "flat", "pool32", "out"]
    stats = rewritten_equals(graph, fetches, feeds, signed_zero=False)
    assert stats == {"half_ops_via_fp32": 5, "half_casts_elided": 2, "half_roundings_in_one_op": 0}
    assert graph["grad/_tf2npu_f32"].inputs == (
        TensorRef("relu/_tf2npu_f32"),
        TensorRef("pool/_tf2npu_f32"),
        TensorRef("g16/_tf2npu_twin_f32"),
    )


# -- overlapping MaxPoolGrad, bit for bit ------------------------------------------------------

EPS = 2.0**-11  # half an ulp of 1.0 in float16
CENTRE_OF_FOUR = np.zeros((1, 5, 5, 1), np.float32)
CENTRE_OF_FOUR[0, 2, 2, 0] = 1.0  # the maximum of all four 3x3/2 VALID windows


def half_bits(values: Any) -> np.ndarray[Any, Any]:
    array = np.asarray(values)
    return array.view(np.uint16 if array.dtype == np.float16 else np.uint32)


def max_pool_grad_runs(
    graph: Graph, x: np.ndarray[Any, Any], g: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``grad`` by the float16 kernel and by the rewrite; asserts every bit (NaNs' too) equal."""
    fetches, feeds = ["grad", "out"], {"x": x, "g": g}
    before = run(graph, fetches, feeds)
    baseline = Signature.of(graph)
    assert compute_half_in_fp32(graph)["half_ops_via_fp32"] == 2
    assert graph["grad"].op == "MaxPoolGradWithArgmax"
    graph.lint(baseline)
    after = run(graph, fetches, feeds)
    for old, new in zip(before, after, strict=True):
        assert old.dtype == new.dtype and old.shape == new.shape
        np.testing.assert_array_equal(half_bits(old), half_bits(new))
    return before[0], after[0]


@pytest.mark.parametrize(
    ("grads", "expected"),
    [
        ([1.0, EPS, EPS, 0.0], 1.0),  # rounded after each addition: 1 + 2^-11 is 1 (to even)
        ([1.0, EPS, EPS, EPS], 1.0),
        ([EPS, EPS, EPS, 1.0], 1.0 + 2.0**-9),  # output order: the small ones add up first
        ([65504.0, 65504.0, -65504.0, 0.0], np.inf),  # overflow on the way stays infinite
        ([2.0**-24, 2.0**-24, 3 * 2.0**-24, -(2.0**-24)], 4 * 2.0**-24),  # subnormals
        ([-0.0, -0.0, -0.0, -0.0], 0.0),  # the sum starts at +0
        ([np.inf, -np.inf, 1.0, 1.0], np.nan),
    ],
)
def test_four_windows_picking_one_element_add_in_output_order(
    grads: list[float], expected: float
) -> None:
    graph = max_pool_grad_graph((3, 3), (2, 2), "VALID")
    g = np.array(grads, np.float32).reshape(1, 2, 2, 1)
    _, new = max_pool_grad_runs(graph, CENTRE_OF_FOUR.copy(), g)
    centre = new[0, 2, 2, 0]
    assert np.isnan(centre) if np.isnan(expected) else centre == np.float16(expected)
    assert np.count_nonzero(new) == (centre != 0)  # every window picked the centre


def special_inputs(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """float16 values with many ties and every kind of special value."""
    palette = np.array([0.0, -0.0, 1.0, -1.0, 2.0**-24, 6e-5, 65504.0, np.inf, -np.inf, np.nan],
                       np.float32)  # fmt: skip
    values = np.where(
        rng.random(shape) < 0.5,
        palette[rng.integers(0, len(palette), shape)],
        spread(shape) if rng.random() < 0.5 else rng.standard_normal(shape),
    )
    with np.errstate(over="ignore"):  # values beyond 65504 become infinities, as wanted
        return values.astype(np.float16).astype(np.float32)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize(
    ("ksize", "strides"),
    [
        ((3, 3), (2, 2)),
        ((3, 3), (1, 1)),
        ((2, 2), (1, 1)),
        ((5, 5), (2, 2)),
        ((4, 4), (3, 3)),
        ((3, 2), (2, 1)),
        ((3, 1), (1, 1)),
    ],
)
def test_overlapping_max_pool_grad_gives_the_float16_kernels_bits(
    ksize: tuple[int, int], strides: tuple[int, int], padding: str
) -> None:
    rng = np.random.default_rng(sum(ksize) * 10 + sum(strides))
    x = special_inputs((2, 11, 10, 3), rng)
    x[0, :4, :4, :] = 0.0  # a region of ties: each window takes its first element
    x[1, :3, :3, 0] = np.nan  # NaN first in a window wins it, NaN later never does
    graph = max_pool_grad_graph(ksize, strides, padding)
    pool = run(graph, ["pool"], {"x": x, "g": np.zeros(1, np.float32)})[0]
    g = special_inputs(pool.shape, rng)
    g[1] = rng.standard_normal(pool.shape[1:]) * EPS + (rng.random(pool.shape[1:]) < 0.3)
    max_pool_grad_runs(graph, x, g)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 3), st.integers(1, 9), st.integers(1, 9), st.integers(1, 3)),
    ksize=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from(["SAME", "VALID"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_overlapping_max_pool_grad_on_random_shapes(
    shape: tuple[int, int, int, int],
    ksize: tuple[int, int],
    strides: tuple[int, int],
    padding: str,
    seed: int,
) -> None:
    assume(any(k > s for k, s in zip(ksize, strides, strict=True)))
    assume(padding == "SAME" or (ksize[0] <= shape[1] and ksize[1] <= shape[2]))
    rng = np.random.default_rng(seed)
    x = special_inputs(shape, rng)
    graph = max_pool_grad_graph(ksize, strides, padding)
    pool = run(graph, ["pool"], {"x": x, "g": np.zeros(1, np.float32)})[0]
    max_pool_grad_runs(graph, x, special_inputs(pool.shape, rng))

"""CPU forms for nodes TF's CPU has no kernel for: fused ops expanded, other ops run in float32.

Each case is a literal graph; the rewritten graph must keep the node's name and outputs, pass
lint against the graph before, import into a fresh ``tf.Graph`` and compute what a float32
reference computes (float16 tolerance).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tf2npu.graph.decisions import (
    CLUSTER,
    DEVICE_FORM,
    PRECISION,
    DeviceForm,
    Diagnostics,
    PrecisionDecision,
)
from tf2npu.graph.ir import Graph
from tf2npu.graph.lint import Signature
from tf2npu.graph.passes.cpu_runnable import CPU_FORM, make_cpu_runnable

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
from tensorflow.core.framework.attr_value_pb2 import AttrValue  # noqa: E402

HALF, FLOAT, DOUBLE = 19, 1, 2
NP_TYPES = {HALF: np.float16, FLOAT: np.float32, DOUBLE: np.float64}
RNG = np.random.default_rng(7)


def typ(dtype: int) -> Any:
    return AttrValue(type=dtype)


def strings(*values: str) -> Any:
    return AttrValue(list=AttrValue.ListValue(s=[v.encode() for v in values]))


def ints(*values: int) -> Any:
    return AttrValue(list=AttrValue.ListValue(i=list(values)))


def placeholders(graph: Graph, dtype: int, *names: str) -> None:
    for name in names:
        graph.add_node(name, "Placeholder", attrs={"dtype": typ(dtype)})


def run(graph: Graph, fetches: list[str], feeds: dict[str, np.ndarray[Any, Any]]) -> list[Any]:
    """Import ``graph`` into a fresh tf.Graph and run it (feeds cast to each placeholder)."""
    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(graph.to_graph_def(), name="")
    typed = {
        f"{name}:0": value.astype(NP_TYPES[graph[name].attrs["dtype"].type])
        for name, value in feeds.items()
    }
    with tf.compat.v1.Session(graph=tf_graph) as session:
        return list(session.run(fetches, typed))


def rewrite(graph: Graph, diagnostics: Diagnostics | None = None) -> dict[str, int]:
    baseline = Signature.of(graph)
    stats = make_cpu_runnable(graph, diagnostics)
    graph.lint(baseline)
    return stats


# -- _FusedConv2D ------------------------------------------------------------------------------


def fused_conv(dtype: int, ops: tuple[str, ...]) -> Graph:
    """x, filter, args → ``fused`` (_FusedConv2D, NHWC, SAME) → ``out``; ``fused`` is in a GeOp."""
    graph = Graph()
    args = ["bias"] if ops[0] == "BiasAdd" else ["scale", "offset", "mean", "variance"]
    placeholders(graph, dtype, "x", "filter", *args)
    attrs = {
        "T": typ(dtype),
        "TArgs": AttrValue(list=AttrValue.ListValue(type=[dtype] * len(args))),
        "num_args": AttrValue(i=len(args)),
        "fused_ops": strings(*ops),
        "strides": ints(1, 1, 1, 1),
        "dilations": ints(1, 1, 1, 1),
        "padding": AttrValue(s=b"SAME"),
        "data_format": AttrValue(s=b"NHWC"),
        "epsilon": AttrValue(f=0.001),
    }
    inputs = [graph[n].output() for n in ("x", "filter", *args)]
    fused = graph.add_node("fused", "_FusedConv2D", inputs, attrs=attrs, device="/device:CPU:0")
    fused.meta[CLUSTER] = "GeOp1_0"
    fused.meta[PRECISION] = PrecisionDecision("float32", "float16", "allow_list: test")
    graph.add_node("out", "Identity", [fused.output()], attrs={"T": typ(dtype)})
    return graph


CONV_FEEDS = {
    "x": RNG.normal(size=(1, 5, 5, 3)),
    "filter": RNG.normal(size=(3, 3, 3, 4)) * 0.5,
    "bias": RNG.normal(size=4),
    "scale": RNG.uniform(0.5, 1.5, size=4),
    "offset": RNG.normal(size=4),
    "mean": RNG.normal(size=4) * 0.1,
    "variance": RNG.uniform(0.5, 2.0, size=4),
}


@pytest.mark.parametrize(
    ("ops", "chain"),
    [
        (("BiasAdd",), ["Conv2D", "BiasAdd"]),
        (("BiasAdd", "Relu6"), ["Conv2D", "BiasAdd", "Relu6"]),
        (("FusedBatchNorm",), ["Conv2D", "Cast", "FusedBatchNormV3", "Identity"]),
        (("FusedBatchNorm", "Relu"), ["Conv2D", "Cast", "FusedBatchNormV3", "Relu"]),
    ],
)
def test_half_fused_conv2d_is_expanded_into_its_chain(
    ops: tuple[str, ...], chain: list[str]
) -> None:
    graph = fused_conv(HALF, ops)
    stats = rewrite(graph)
    assert stats == {
        "fused_ops_expanded": 1,
        "ops_computed_in_fp32": 0,
        "matmuls_accumulated_in_fp32": 1,
        "ops_without_cpu_kernel": 0,
    }
    fused = graph["fused"]
    assert fused.op == chain[-1] and fused.attrs["T"].type == HALF
    formed = [n for n in graph if n.meta.get(CPU_FORM) == "expanded _FusedConv2D"]
    # The chain's float16 Conv2D then accumulates in float32, as on the device.
    assert sorted({n.op for n in formed}) == sorted(set(chain) - {"Conv2D"})
    assert any(n.meta.get(CPU_FORM) == "fp32 Conv2D" and n.op == "Conv2D" for n in graph)
    # what the device runs under the name, kept through the float32 form of the chain's Conv2D
    args = ("bias",) if ops[0] == "BiasAdd" else ("scale", "offset", "mean", "variance")
    inputs = tuple(graph[n].output() for n in ("x", "filter", *args))
    assert fused.meta[DEVICE_FORM] == DeviceForm("_FusedConv2D", inputs)
    assert all(n.meta[DEVICE_FORM] == fused.meta[DEVICE_FORM] for n in graph if CPU_FORM in n.meta)
    for node in formed:  # device and decisions carried; intermediates named and traced
        assert node.device == "/device:CPU:0" and node.meta[CLUSTER] == "GeOp1_0"
        assert node.meta[PRECISION].after == "float16"
        if node is not fused:
            assert node.name.startswith("fused/_tf2npu_") and node.origin == ("fused",)
    feeds = {k: v for k, v in CONV_FEEDS.items() if k in graph}
    (got,) = run(graph, ["out:0"], feeds)
    (want,) = run(fused_conv(FLOAT, ops), ["out:0"], feeds)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * np.abs(want).max())


def test_float32_fused_conv2d_is_left_alone() -> None:
    graph = fused_conv(FLOAT, ("BiasAdd", "Relu"))
    before = graph.to_graph_def().SerializeToString(deterministic=True)
    assert rewrite(graph) == dict.fromkeys(
        (
            "fused_ops_expanded",
            "ops_computed_in_fp32",
            "matmuls_accumulated_in_fp32",
            "ops_without_cpu_kernel",
        ),
        0,
    )
    assert graph.to_graph_def().SerializeToString(deterministic=True) == before


def test_unknown_fused_ops_fall_back_to_float32() -> None:
    graph = fused_conv(HALF, ("BiasAdd", "Sigmoid", "Tanh"))  # no single-activation chain
    stats = rewrite(graph)
    assert stats["fused_ops_expanded"] == 0 and stats["ops_computed_in_fp32"] == 1
    assert graph["fused"].op == "Cast"
    assert graph["fused/_tf2npu_f32"].op == "_FusedConv2D"
    assert graph["fused/_tf2npu_f32"].attrs["TArgs"].list.type == [FLOAT]


# -- other ops computed in float32 -------------------------------------------------------------


def test_half_mod_runs_in_float32_under_its_name() -> None:
    def build(dtype: int) -> Graph:
        graph = Graph()
        placeholders(graph, dtype, "x", "y")
        graph.add_node(
            "mod", "Mod", [graph["x"].output(), graph["y"].output()], attrs={"T": typ(dtype)}
        )
        graph.add_node("out", "Identity", [graph["mod"].output()], attrs={"T": typ(dtype)})
        return graph

    graph = build(HALF)
    diagnostics = Diagnostics()
    stats = rewrite(graph, diagnostics)
    assert stats == {
        "fused_ops_expanded": 0,
        "ops_computed_in_fp32": 1,
        "matmuls_accumulated_in_fp32": 0,
        "ops_without_cpu_kernel": 0,
    }
    assert [(n.name, n.op) for n in graph if n.meta.get(CPU_FORM)] == [
        ("mod/_tf2npu_in_f32", "Cast"),
        ("mod/_tf2npu_in_f32_1", "Cast"),
        ("mod/_tf2npu_f32", "Mod"),
        ("mod", "Cast"),
    ]
    assert graph["mod"].attrs["DstT"].type == HALF and graph["mod"].origin == ()
    device = DeviceForm("Mod", (graph["x"].output(), graph["y"].output()))
    assert graph["mod"].meta[DEVICE_FORM] == device
    assert [d.code for d in diagnostics.items] == ["cpu_fp32_fallback"]
    assert diagnostics.items[0].node == "mod"
    feeds = {"x": RNG.uniform(-9, 9, size=6), "y": RNG.uniform(1, 3, size=6)}
    (got,) = run(graph, ["out:0"], feeds)
    (want,) = run(build(FLOAT), ["out:0"], feeds)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


def batch_norm(dtype: int, param_dtype: int) -> Graph:
    graph = Graph()
    placeholders(graph, dtype, "x")
    placeholders(graph, param_dtype, "scale", "offset", "mean", "variance")
    attrs = {
        "T": typ(dtype),
        "U": typ(param_dtype),
        "is_training": AttrValue(b=False),
        "epsilon": AttrValue(f=0.001),
        "data_format": AttrValue(s=b"NHWC"),
    }
    inputs = [graph[n].output() for n in ("x", "scale", "offset", "mean", "variance")]
    graph.add_node("bn", "FusedBatchNormV3", inputs, attrs=attrs)
    return graph


def test_a_multi_output_op_is_gathered_by_identity_n_under_its_name() -> None:
    graph = batch_norm(HALF, HALF)  # the CPU runs T=half only with U=float
    assert rewrite(graph)["ops_computed_in_fp32"] == 1
    assert graph["bn"].op == "IdentityN"
    assert list(graph["bn"].attrs["T"].list.type) == [HALF] * 6
    feeds = {k: v for k, v in CONV_FEEDS.items() if k in graph}
    feeds["x"] = RNG.normal(size=(2, 3, 3, 4))
    got = run(graph, ["bn:0", "bn:1"], feeds)
    want = run(batch_norm(FLOAT, FLOAT), ["bn:0", "bn:1"], feeds)
    assert got[0].dtype == np.float16
    np.testing.assert_allclose(got[0], want[0], rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-2, atol=1e-2)


def test_an_op_without_any_cpu_kernel_is_left_and_warned_about() -> None:
    graph = batch_norm(HALF, DOUBLE)  # T=float, U=double has no kernel either
    diagnostics = Diagnostics()
    stats = rewrite(graph, diagnostics)
    assert stats == {
        "fused_ops_expanded": 0,
        "ops_computed_in_fp32": 0,
        "matmuls_accumulated_in_fp32": 0,
        "ops_without_cpu_kernel": 1,
    }
    assert graph["bn"].op == "FusedBatchNormV3" and CPU_FORM not in graph["bn"].meta
    (warning,) = diagnostics.of("warning")
    assert warning.code == "no_cpu_kernel" and warning.node == "bn"
    assert "FusedBatchNormV3" in warning.message and "keep_dtype_scope" in warning.fix


def test_a_bool_output_needs_no_cast_back() -> None:
    graph = Graph()
    placeholders(graph, HALF, "x", "y")
    graph.add_node(
        "eq",
        "ApproximateEqual",
        [graph["x"].output(), graph["y"].output()],
        attrs={"T": typ(HALF), "tolerance": AttrValue(f=0.5)},
    )
    assert rewrite(graph)["ops_computed_in_fp32"] == 1
    assert graph["eq"].op == "ApproximateEqual" and graph["eq"].attrs["T"].type == FLOAT
    (got,) = run(graph, ["eq:0"], {"x": np.array([1.0, 2.0]), "y": np.array([1.2, 3.0])})
    assert got.tolist() == [True, False]


# -- function bodies ---------------------------------------------------------------------------


def test_fused_matmul_in_a_function_body_is_expanded_and_its_readers_rewired() -> None:
    from tensorflow.core.framework.function_pb2 import FunctionDef

    from tf2npu.graph._proto import function_from_proto

    fd = FunctionDef()
    fd.signature.name = "dense"
    for name in ("a", "w", "b"):
        fd.signature.input_arg.add(name=name, type=HALF)
    fd.signature.output_arg.add(name="y", type=HALF)
    fused = fd.node_def.add(name="fused", op="_FusedMatMul", input=["a", "w", "b"])
    fused.attr["T"].type = HALF
    fused.attr["num_args"].i = 1
    fused.attr["fused_ops"].CopyFrom(strings("BiasAdd", "Relu"))
    fd.ret["y"] = "fused:product:0"
    graph = Graph()
    placeholders(graph, HALF, "a", "w", "b")
    body = graph.functions["dense"] = function_from_proto(fd, graph)
    graph.add_node("call", "dense", [graph[n].output() for n in ("a", "w", "b")])
    assert rewrite(graph)["fused_ops_expanded"] == 1
    assert body["fused"].op == "Relu"
    assert str(body.ret["y"]) == "fused:activations:0"
    a, w, b = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2)), RNG.normal(size=2)
    (got,) = run(graph, ["call:0"], {"a": a, "w": w, "b": b})
    want = np.maximum(a.astype(np.float16) @ w.astype(np.float16) + b.astype(np.float16), 0)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


def test_six_thousand_nodes_needing_forms_get_them_in_one_pass() -> None:
    """2,000 dense steps of float16 ``_FusedMatMul`` → ``Mod`` → ``Identity``: one pass.

    Speed is measured by benchmarks, not here."""
    from tf2npu.gcpause import gc_paused

    graph = Graph()
    placeholders(graph, HALF, "x", "w", "b")
    previous = graph["x"].output()
    for i in range(2000):
        fused = graph.add_node(
            f"d{i}",
            "_FusedMatMul",
            [previous, graph["w"].output(), graph["b"].output()],
            attrs={"T": typ(HALF), "num_args": AttrValue(i=1), "fused_ops": strings("BiasAdd")},
        )
        mod = graph.add_node(
            f"m{i}", "Mod", [fused.output(), graph["w"].output()], attrs={"T": typ(HALF)}
        )
        previous = graph.add_node(
            f"k{i}", "Identity", [mod.output()], attrs={"T": typ(HALF)}
        ).output()
    with gc_paused():  # as in run_engine
        stats = make_cpu_runnable(graph)
    assert stats == {
        "fused_ops_expanded": 2000,
        "ops_computed_in_fp32": 2000,
        "matmuls_accumulated_in_fp32": 2000,
        "ops_without_cpu_kernel": 0,
    }


@pytest.mark.tf
def test_a_float16_matmul_accumulates_in_float32_as_the_device_does() -> None:
    """CPU float16 MatMul sums in float16 (3,001 ones give 2048); the device sums in float32."""
    import tensorflow as tf

    graph = Graph()
    placeholders(graph, HALF, "a", "b")
    graph.add_node(
        "p", "MatMul", [graph["a"].output(), graph["b"].output()], attrs={"T": typ(HALF)}
    )
    stats = make_cpu_runnable(graph)
    assert stats["matmuls_accumulated_in_fp32"] == 1
    assert graph["p"].op == "Cast"
    with tf.Graph().as_default() as tf_graph:
        tf.graph_util.import_graph_def(graph.to_graph_def(), name="")
        with tf.compat.v1.Session(graph=tf_graph) as sess:
            ones = np.ones((1, 3001), np.float16)
            got = sess.run("p:0", {"a:0": ones, "b:0": ones.T})
    assert got[0, 0] == np.float16(3001)

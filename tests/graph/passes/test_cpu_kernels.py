"""The CPU kernel registry query, and decided graphs that must really run on TF's CPU kernels.

The end-to-end cases run ``run_engine`` under ``allow_mix_precision``: the precision pass puts
MatMul/Conv2D into float16 and fusion turns them into ``_FusedMatMul``/``_FusedConv2D``, for
which TF 2.15's CPU has no float16 kernel. The lowered graph must import into a fresh graph and
run in a session, matching the float32 graph within float16 tolerance.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tf2npu.config.options import NpuOptions
from tf2npu.graph.decisions import SUPERSEDED
from tf2npu.graph.engine import EngineRun, run_engine
from tf2npu.graph.ir import Graph
from tf2npu.graph.passes.cpu_kernels import CpuKernels, cpu_constraints, has_low_float
from tf2npu.graph.passes.cpu_runnable import CPU_FORM
from tf2npu.graph.passes.lowering import GEOP_ATTR

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
from tensorflow.core.framework.attr_value_pb2 import AttrValue  # noqa: E402

HALF, FLOAT, BFLOAT16 = 19, 1, 14
RNG = np.random.default_rng(3)


# -- the registry query ------------------------------------------------------------------------


def node(op: str, **attrs: Any) -> Any:
    return Graph().add_node("n", op, attrs=attrs)


@pytest.mark.parametrize(
    ("op", "dtype", "runs"),
    [
        ("MatMul", HALF, True),
        ("MatMul", FLOAT, True),
        ("_FusedMatMul", HALF, False),
        ("_FusedMatMul", FLOAT, True),
        ("_FusedMatMul", BFLOAT16, True),
        ("_FusedConv2D", HALF, False),
        ("Conv2D", HALF, True),
        ("Mod", HALF, False),
        ("Mod", FLOAT, True),
    ],
)
def test_cpu_kernels_match_the_registry(op: str, dtype: int, runs: bool) -> None:
    assert CpuKernels().runs(node(op, T=AttrValue(type=dtype))) is runs


def test_constraints_read_defaults_and_every_constrained_attr() -> None:
    kernels = CpuKernels()
    # FusedBatchNormV3's U has no default; T=half runs only with U=float.
    half = AttrValue(type=HALF)
    assert not kernels.runs(node("FusedBatchNormV3", T=half))
    assert kernels.runs(node("FusedBatchNormV3", T=half, U=AttrValue(type=FLOAT)))
    assert not kernels.runs(node("FusedBatchNormV3", T=half, U=half))
    # Sum's Tidx defaults to int32, which the kernels admit.
    assert kernels.runs(node("Sum", T=half))
    # ``attrs`` replaces the node's own: the float32 form of a half Mod runs.
    assert kernels.runs(node("Mod", T=half), {"T": AttrValue(type=FLOAT)})


def test_ops_without_registered_kernels_are_not_judged() -> None:
    assert cpu_constraints("NoSuchOp") is None
    assert cpu_constraints("AccumulateNV2") is None  # rewritten by grappler, never a kernel
    assert CpuKernels().runs(node("NoSuchOp", T=AttrValue(type=HALF)))
    assert cpu_constraints("_FusedMatMul") is not None


def test_has_low_float_sees_scalars_and_lists() -> None:
    assert has_low_float([AttrValue(type=HALF)])
    assert has_low_float([AttrValue(list=AttrValue.ListValue(type=[FLOAT, BFLOAT16]))])
    assert not has_low_float([AttrValue(type=FLOAT), AttrValue(i=3), AttrValue(s=b"x")])


# -- decided graphs that run -------------------------------------------------------------------


def engine(graph_def: Any, precision_mode: str) -> EngineRun:
    options = NpuOptions.from_values({"precision_mode": precision_mode})
    return run_engine(Graph.from_graph_def(graph_def), options, verify=True)


def execute(graph_def: Any, fetch: str, feeds: dict[str, Any]) -> Any:
    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=tf_graph) as session:
        return session.run(fetch, feeds)


def dense_graph() -> Any:
    """x → MatMul → BiasAdd → Relu → out (float32), as a GraphDef."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
        w = tf.constant(RNG.normal(size=(8, 5)).astype(np.float32), name="w")
        b = tf.constant(RNG.normal(size=5).astype(np.float32), name="b")
        y = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w, name="mm"), b, name="ba"), name="act")
        tf.identity(y, name="out")
    return graph.as_graph_def()


def conv_graph() -> Any:
    """x → Conv2D → BiasAdd → out (float32, NHWC), as a GraphDef."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 6, 6, 3], name="x")
        f = tf.constant(RNG.normal(size=(3, 3, 3, 4)).astype(np.float32) * 0.5, name="f")
        b = tf.constant(RNG.normal(size=4).astype(np.float32), name="b")
        conv = tf.nn.conv2d(x, f, strides=1, padding="SAME", name="conv")
        tf.identity(tf.nn.bias_add(conv, b, name="ba"), name="out")
    return graph.as_graph_def()


def fused_nodes(run: EngineRun, *, live: bool = False) -> list[Any]:
    return [
        n for n in run.graph if n.op.startswith("_Fused") and not (live and SUPERSEDED in n.meta)
    ]


@pytest.mark.parametrize(
    ("build", "shape", "fused"),
    [(dense_graph, (4, 8), "_FusedMatMul"), (conv_graph, (2, 6, 6, 3), "_FusedConv2D")],
)
def test_mixed_precision_graph_runs_with_fused_ops_expanded(
    build: Any, shape: tuple[int, ...], fused: str
) -> None:
    graph_def = build()
    run = engine(graph_def, "allow_mix_precision")
    stats = dict(run.pipeline.results[-1][1].stats)
    assert stats["fused_ops_expanded"] >= 1 and stats["ops_without_cpu_kernel"] == 0
    assert fused_nodes(run) == []  # none left: float16 fused ops have no CPU kernel
    expanded = [n for n in run.graph if n.meta.get(CPU_FORM) == f"expanded {fused}"]
    # The chain's BiasAdd / Relu then run as float32 op + rounding (half_via_fp32): the
    # tensors the chain names stay float16, a Cast to float16 where the op was.
    formed = [
        n
        for n in run.graph
        if n.meta.get(CPU_FORM) in ("half via fp32 BiasAdd", "half via fp32 Relu")
    ]
    named = [n for n in [*expanded, *formed] if not n.name.endswith("/_tf2npu_f32")]
    live = [n for n in named if GEOP_ATTR in n.attrs]
    assert live and all(n.attrs["DstT" if n.op == "Cast" else "T"].type == HALF for n in live)
    x = RNG.normal(size=shape).astype(np.float32)
    got = execute(run.graph.to_graph_def(), "out:0", {"x:0": x})
    want = execute(graph_def, "out:0", {"x:0": x})
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * np.abs(want).max())


@pytest.mark.parametrize("build", [dense_graph, conv_graph])
def test_float32_fused_ops_stay_fused_and_run(build: Any) -> None:
    graph_def = build()
    run = engine(graph_def, "must_keep_origin_dtype")
    assert dict(run.pipeline.results[-1][1].stats)["fused_ops_expanded"] == 0
    (fused,) = fused_nodes(run, live=True)
    assert fused.attrs["T"].type == FLOAT and CPU_FORM not in fused.meta
    shape = (4, 8) if build is dense_graph else (2, 6, 6, 3)
    x = RNG.normal(size=shape).astype(np.float32)
    got = execute(run.graph.to_graph_def(), "out:0", {"x:0": x})
    np.testing.assert_allclose(got, execute(graph_def, "out:0", {"x:0": x}), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_bert_training_step_runs_in_mixed_precision() -> None:
    from tf2npu.testing.bert_graph import build_bert_graph, feed_for

    built = build_bert_graph(layers=1, hidden=32, heads=2, seq=8)
    run = engine(built.graph_def, "allow_mix_precision")
    stats = dict(run.pipeline.results[-1][1].stats)
    assert stats["fused_ops_expanded"] >= 1 and stats["ops_without_cpu_kernel"] == 0
    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(run.graph.to_graph_def(), name="")
    with tf.compat.v1.Session(graph=tf_graph) as session:
        session.run(list(built.init_ops))
        losses = [session.run([built.train_op, built.loss], feed_for(built))[1] for _ in range(2)]
    assert all(np.isfinite(loss) for loss in losses)


def test_the_survey_script_lists_the_cpu_gaps() -> None:
    """``tools/cpu_half_kernels.py``: what the lowering pass has to handle, per source."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[3] / "tools" / "cpu_half_kernels.py"
    spec = importlib.util.spec_from_file_location("cpu_half_kernels", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = module.survey(HALF)
    assert found["fusion"] == ["_FusedMatMul", "_FusedConv2D"]
    assert {"Mod", "Rint", "TruncateMod"} <= set(found["precision"])
    assert not {"MatMul", "Conv2D", "BiasAdd", "AccumulateNV2"} & set(found["precision"])

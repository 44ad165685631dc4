"""The inject_faults pass: one fusion rule, one instance or one op corrupted, nothing else."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from tf2npu.config.faults import parse_faults
from tf2npu.config.options import NpuOptions
from tf2npu.config.overrides import EngineOverrides
from tf2npu.graph.decisions import DEVICE_FORM, FUSION_INSTANCES, SUPERSEDED, replacement_of
from tf2npu.graph.engine import EngineRun, run_engine
from tf2npu.graph.fusion import known_rules
from tf2npu.graph.ir import Graph, TensorRef
from tf2npu.graph.passes import PASSES
from tf2npu.graph.passes.inject_faults import INJECTED_FAULTS, InjectedFault, InjectFaultsPass

pytestmark = pytest.mark.tf

RULE = "matmul_biasadd"
FEED = np.arange(6, dtype=np.float32).reshape(2, 3) / 10


def three_dense_layers() -> Any:
    """x -> dense_0 -> dense_1 -> dense_2 -> out: three MatMul + BiasAdd instances."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        y = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        for i in range(3):
            w = tf.constant(np.eye(3, dtype=np.float32) + i, name=f"dense_{i}/w")
            b = tf.constant([1.0, -1.0, 0.5], name=f"dense_{i}/b")
            y = tf.nn.bias_add(tf.matmul(y, w, name=f"dense_{i}/MatMul"), b, name=f"dense_{i}/add")
        tf.identity(y, name="out")
    return graph.as_graph_def()


def engine(graph_def: Any, *specs: str, **options: Any) -> EngineRun:
    faults = parse_faults(specs, known_rules(), "test")
    return run_engine(
        Graph.from_graph_def(graph_def),
        NpuOptions.from_values(options),
        overrides=EngineOverrides(faults=faults),
        verify=True,
    )


def values(run: EngineRun, names: list[str]) -> dict[str, np.ndarray]:
    """The tensors that carry each client tensor (or an IR tensor) after the engine."""
    import tensorflow as tf

    fetches = [str(replacement_of(run.graph, TensorRef.parse(n))) for n in names]
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(run.graph.to_graph_def(), name="")
    with tf.compat.v1.Session(graph=graph) as session:
        got = session.run([f if ":" in f else f"{f}:0" for f in fetches], {"x:0": FEED})
    return dict(zip(names, got, strict=True))


ROOTS = ["dense_0/add", "dense_1/add", "dense_2/add"]


def fused_names(run: EngineRun) -> list[str]:
    return [i.fused for i in run.graph.meta[FUSION_INSTANCES]]


def test_registered_after_fusion_and_a_no_op_without_faults() -> None:
    assert PASSES["inject_faults"] is InjectFaultsPass
    run = engine(three_dense_layers())
    assert INJECTED_FAULTS not in run.graph.meta
    assert run.pipeline.stats.get("inject_faults", {}) == {}


def test_one_instance_scaled_changes_exactly_that_fused_node_s_output() -> None:
    clean = engine(three_dense_layers())
    faulty = engine(three_dense_layers(), f"fusion:{RULE}@dense_1/add=scale:2")
    assert faulty.graph.meta[INJECTED_FAULTS] == [
        InjectedFault(f"fusion:{RULE}@dense_1/add=scale:2", (fused_names(faulty)[1],))
    ]
    before, after = values(clean, ROOTS), values(faulty, ROOTS)
    np.testing.assert_array_equal(after["dense_0/add"], before["dense_0/add"])
    np.testing.assert_array_equal(after["dense_1/add"], 2 * before["dense_1/add"])
    assert not np.allclose(after["dense_2/add"], before["dense_2/add"])  # it reads dense_1
    # The fused nodes themselves compute what they did; the fault sits after dense_1's.
    raw = fused_names(faulty)[:2]
    np.testing.assert_array_equal(
        list(values(faulty, raw).values()), list(values(clean, fused_names(clean)[:2]).values())
    )
    fault = faulty.graph["dense_1/add/_tf2npu_fault"]
    assert (fault.op, fault.origin) == ("Mul", ("dense_1/add", "dense_1/MatMul"))
    assert [r.node for r in fault.inputs] == [raw[1], "dense_1/add/_tf2npu_fault_value"]


def test_a_whole_rule_with_nan_hits_every_instance() -> None:
    faulty = engine(three_dense_layers(), f"fusion:{RULE}=nan")
    assert faulty.graph.meta[INJECTED_FAULTS][0].applied_to == tuple(fused_names(faulty))
    assert all(np.isnan(v).all() for v in values(faulty, ROOTS).values())


def test_an_op_replaced_by_a_fused_node_is_hit_through_its_replacement() -> None:
    clean = engine(three_dense_layers())
    faulty = engine(three_dense_layers(), "op:dense_0/add=bias:0.5")
    before, after = values(clean, ["dense_0/add"]), values(faulty, ["dense_0/add"])
    np.testing.assert_allclose(after["dense_0/add"], before["dense_0/add"] + 0.5)


def test_an_op_no_pass_replaced_corrupts_what_its_readers_receive() -> None:
    clean = engine(three_dense_layers())
    faulty = engine(three_dense_layers(), "op:x=scale:0")
    (fault,) = faulty.graph.meta[INJECTED_FAULTS]
    assert fault.applied_to == ("x",)
    assert SUPERSEDED not in faulty.graph["x"].meta
    after = values(faulty, ["x", "dense_0/add"])
    np.testing.assert_array_equal(after["x"], FEED)  # a fetch of x itself is its own value
    bias = np.array([1.0, -1.0, 0.5], np.float32)
    np.testing.assert_allclose(after["dense_0/add"], np.broadcast_to(bias, (2, 3)))
    assert not np.allclose(values(clean, ["dense_0/add"])["dense_0/add"], bias)


def test_a_float16_fused_node_gets_a_float16_fault() -> None:
    faulty = engine(three_dense_layers(), f"fusion:{RULE}@dense_2/add=nan",
                    precision_mode="allow_mix_precision")  # fmt: skip
    fault = faulty.graph["dense_2/add/_tf2npu_fault"]
    assert fault.meta[DEVICE_FORM].op == "Add"  # lowering gave the float16 Add a CPU form
    assert faulty.graph["dense_2/add/_tf2npu_fault_value"].attrs["dtype"].type == 19  # DT_HALF
    assert math.isnan(values(faulty, ["dense_2/add"])["dense_2/add"][0, 0])


def test_specs_that_hit_nothing_are_recorded_and_explained() -> None:
    run = engine(
        three_dense_layers(), "fusion:layer_norm=nan", f"fusion:{RULE}@nowhere=nan",
        "op:missing=nan", "op:dense_1/MatMul=nan", "op:out=nan",
    )  # fmt: skip
    assert [f.applied_to for f in run.graph.meta[INJECTED_FAULTS]] == [()] * 5
    codes = {d.code: d.node for d in run.config.diagnostics.items if d.code.startswith("fault")}
    assert codes == {"fault_target_fused": "dense_1/MatMul", "fault_target_unread": "out"}

"""v1 control flow on the device in a dynamic-shape graph (seed 000 case 03), on literal graphs."""

from __future__ import annotations

from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")


from tests.graph.literal import add, attr  # noqa: E402

from tf2npu.config.options import EnvSettings, NpuOptions  # noqa: E402
from tf2npu.graph.context import EngineConfig  # noqa: E402
from tf2npu.graph.decisions import Diagnostic  # noqa: E402
from tf2npu.graph.ir import Graph  # noqa: E402
from tf2npu.graph.passes.device_strings import DeviceStrings  # noqa: E402
from tf2npu.graph.passes.infra import PassContext  # noqa: E402
from tf2npu.graph.passes.placement import PlacementPass  # noqa: E402

pytestmark = pytest.mark.tf

F32, I32, BOOL = tf.float32, tf.int32, tf.bool
FIX = (
    "convert the graph to v2 control flow: add tf.enable_control_flow_v2() and "
    "tf.enable_resource_variables() right after `import tensorflow as tf`, or export "
    "ENABLE_FORCE_V2_CONTROL=1"
)


def loop(next_value: str, *, grow: bool = True) -> Graph:
    """x -> v1 while loop over ``acc`` -> out; the body's concat is ``next_value``'s producer."""
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    add(g, "axis", "Const", dtype=I32)
    add(g, "limit", "Const", dtype=F32)
    add(g, "while/Enter", "Enter", "x", T=F32, frame_name="while/ctx")
    add(g, "while/Merge", "Merge", "while/Enter", "while/NextIteration", T=F32, N=2)
    add(g, "while/Sum", "Sum", "while/Merge", "axis", T=F32, Tidx=I32)
    add(g, "while/Less", "Less", "while/Sum", "limit", T=F32)
    add(g, "while/LoopCond", "LoopCond", "while/Less")
    add(g, "while/Switch", "Switch", "while/Merge", "while/LoopCond", T=F32)
    add(g, "while/Identity", "Identity", "while/Switch:1", T=F32)
    add(g, "while/Slice", "StridedSlice", "while/Identity", "axis", "axis", "axis", T=F32,
        Index=I32)  # fmt: skip
    first = "while/Identity" if grow else "while/Slice"
    add(g, "while/concat", "ConcatV2", first, "while/Slice", "axis", T=F32, N=2, Tidx=I32)
    add(g, "while/Next", "Identity", next_value, T=F32)
    add(g, "while/NextIteration", "NextIteration", "while/Next", T=F32)
    add(g, "while/Exit", "Exit", "while/Switch", T=F32)
    add(g, "out", "Relu", "while/Exit", T=F32)
    return g


def diagnostics(g: Graph, env: EnvSettings | None = None, **options: Any) -> list[Diagnostic]:
    cfg = EngineConfig.build(NpuOptions.from_values(options, env=env))
    ctx = PassContext(config=cfg)
    DeviceStrings().run(g, ctx)
    PlacementPass().run(g, ctx)
    return [d for d in cfg.diagnostics.items if d.code == "v1_control_dynamic_shape"]


def test_a_loop_variable_concatenated_with_more_is_rejected() -> None:
    [diag] = diagnostics(loop("while/concat"))
    assert (diag.severity, diag.node, diag.fix) == ("error", "while/Merge", FIX)
    assert diag.message == (
        "'while/Merge' (Merge) is TF v1 control flow (one of 6 v1 control nodes on the device) "
        "in a dynamic-shape device graph: loop variable 'while/Merge' grows every iteration "
        "(ConcatV2 'while/concat' concatenates it with more), so the loop has no static shape; "
        "the device runs dynamic-shape graphs without v1 control operators and fails with "
        "'node while/Merge(Merge) is v1 control operator, which is not supported, please "
        "convert to v2 control operator'"
    )


def test_a_sliding_window_keeps_the_shape() -> None:
    assert diagnostics(loop("while/concat", grow=False)) == []


def test_a_loop_of_static_shape_runs() -> None:
    assert diagnostics(loop("while/Slice")) == []


def test_force_v2_control_converts_the_loop() -> None:
    assert diagnostics(loop("while/concat"), env=EnvSettings(force_v2_control=True)) == []


def test_the_loop_on_the_host_runs() -> None:
    g = loop("while/concat")
    add(g, "while/py", "PyFunc", "while/Identity", token="f", Tin=[F32], Tout=[F32])
    assert diagnostics(g, mix_compile_mode=True) == []  # the frame goes to the host whole


def test_dynamic_input_rejects_any_v1_control_node() -> None:
    [diag] = diagnostics(loop("while/Slice"), dynamic_input=True)
    assert diag.node == "while/Enter"
    assert "dynamic_input=True compiles it as a dynamic-shape graph" in diag.message


@pytest.mark.parametrize("body", ["while/Slice", "while/concat"])
def test_lazy_recompile_compiles_each_shape_on_its_own(body: str) -> None:
    g = loop(body)
    assert diagnostics(g, dynamic_input=True, dynamic_graph_execute_mode="lazy_recompile") == []


def test_the_graph_exec_config_attr_counts_as_dynamic_input() -> None:
    g = loop("while/Slice")
    g["x"].attrs["_graph_dynamic_input"] = attr(True)
    assert [d.node for d in diagnostics(g)] == ["while/Enter"]
    g["x"].attrs["_graph_dynamic_graph_execute_mode"] = attr("lazy_recompile")
    assert diagnostics(g) == []
    assert diagnostics(loop("while/concat"), dynamic_input=False) != []


def test_dynamic_input_without_v1_control_flow_is_fine() -> None:
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    add(g, "y", "Relu", "x", T=F32)
    assert diagnostics(g, dynamic_input=True) == []

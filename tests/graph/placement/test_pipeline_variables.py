"""Variables the input pipeline reads but the device initialises (seed 000 case 02)."""

from __future__ import annotations

from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")


from tests.graph.literal import add  # noqa: E402

from tf2npu.config.options import NpuOptions  # noqa: E402
from tf2npu.graph.context import EngineConfig  # noqa: E402
from tf2npu.graph.decisions import Diagnostic  # noqa: E402
from tf2npu.graph.ir import Graph  # noqa: E402
from tf2npu.graph.passes.device_strings import DeviceStrings  # noqa: E402
from tf2npu.graph.passes.infra import PassContext  # noqa: E402
from tf2npu.graph.passes.placement import PlacementPass  # noqa: E402

pytestmark = pytest.mark.tf

F32, I64, VARIANT, RESOURCE = tf.float32, tf.int64, tf.variant, tf.resource


def pipeline(batch_size: str, *, after: tuple[str, ...] = ()) -> Graph:
    """slices -> batch(``batch_size``) -> iterator, initialised by MakeIterator (run after
    ``after``)."""
    g = Graph()
    add(g, "data", "Const", dtype=F32)
    add(g, "drop", "Const", dtype=tf.bool)
    add(g, "slices", "TensorSliceDataset", "data", Toutput_types=[F32])
    add(g, "batch", "BatchDatasetV2", "slices", batch_size, "drop", output_types=[F32])
    add(g, "it", "IteratorV2", output_types=[F32], shared_name="it", container="")
    add(g, "init", "MakeIterator", "batch", "it", ctrl=after)
    return g


def ref_variable(g: Graph) -> None:
    """``batch_size = tf.Variable(tf.placeholder(tf.int64))`` (a ref variable)."""
    add(g, "value", "Placeholder", dtype=I64)
    add(g, "Variable", "VariableV2", dtype=I64, container="", shared_name="")
    add(g, "Variable/Assign", "Assign", "Variable", "value", T=I64)
    add(g, "Variable/read", "Identity", "Variable", T=I64)


def diagnostics(g: Graph, **options: Any) -> list[Diagnostic]:
    cfg = EngineConfig.build(NpuOptions.from_values(options))
    ctx = PassContext(config=cfg)
    DeviceStrings().run(g, ctx)
    PlacementPass().run(g, ctx)
    return [d for d in cfg.diagnostics.items if d.code == "variable_in_preprocessing"]


def test_a_ref_variable_the_batch_reads_is_initialised_on_the_device() -> None:
    g = pipeline("Variable/read")
    ref_variable(g)
    [diag] = diagnostics(g)
    assert (diag.severity, diag.node) == ("error", "Variable")
    assert diag.message == (
        "variable 'Variable' (VariableV2) is initialised on the device (its initialiser "
        "'Variable/Assign' runs there in its own session.run) but 'Variable/read' (Identity) "
        "reads it in the input pipeline on the host, whose copy of the variable was never "
        "initialised, so the iterator initialisation fails with 'Error while reading resource "
        "variable Variable'"
    )
    assert diag.fix == (
        "replace the variable 'Variable' the input pipeline reads by a constant: a Python "
        "value or tf.constant, e.g. `batch_size = 64` then "
        "`dataset.batch(batch_size, drop_remainder=True)`"
    )


def test_a_resource_variable_is_reported_in_mixed_compute_too() -> None:
    g = pipeline("read")
    add(g, "value", "Placeholder", dtype=I64)
    add(g, "v", "VarHandleOp", dtype=I64, shared_name="v", container="")
    add(g, "v/Assign", "AssignVariableOp", "v", "value", dtype=I64)
    add(g, "read", "ReadVariableOp", "v", dtype=I64)
    assert [(d.node, d.severity) for d in diagnostics(g, mix_compile_mode=True)] == [("v", "error")]


def test_a_constant_batch_size_is_fine() -> None:
    g = pipeline("size")
    add(g, "size", "Const", dtype=I64)
    assert diagnostics(g) == []


def test_a_variable_kept_on_the_host_is_fine() -> None:
    g = pipeline("Variable/read")
    ref_variable(g)
    assert diagnostics(g, mix_compile_mode=True, variable_placement="Host") == []


def test_an_initialiser_run_with_the_iterator_sets_the_host_copy() -> None:
    g = pipeline("Variable/read", after=("Variable/Assign",))
    ref_variable(g)
    assert diagnostics(g) == []


def test_a_variable_without_initialiser_is_not_judged() -> None:
    g = pipeline("Variable/read")
    add(g, "Variable", "VariableV2", dtype=I64, container="", shared_name="")
    add(g, "Variable/read", "Identity", "Variable", T=I64)
    assert diagnostics(g) == []


def test_a_training_variable_outside_the_pipeline_is_fine() -> None:
    g = pipeline("size")
    add(g, "size", "Const", dtype=I64)
    ref_variable(g)
    add(g, "twice", "Add", "Variable/read", "Variable/read", T=I64)
    assert diagnostics(g) == []

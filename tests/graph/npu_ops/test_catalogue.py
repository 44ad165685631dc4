"""The NPU-op catalogue and the op-info library agree: every op the engine can put into a graph
has an op-info row, so placement and precision judge it as a device op, never as unlisted."""

from __future__ import annotations

from tf2npu.graph.npu_ops import NPU_OPS
from tf2npu.graph.opinfo import load_default


def test_every_catalogue_op_has_an_op_info_row() -> None:
    library = load_default()
    assert sorted(op for op in NPU_OPS if op not in library) == []


def test_every_catalogue_op_is_a_device_op_in_the_op_info() -> None:
    library = load_default()
    assert sorted(op for op in NPU_OPS if not library.get(op).device_supported) == []


def test_an_op_the_library_lacks_is_reported_as_unlisted() -> None:
    info = load_default().get("NoSuchNpuOp")
    assert (info.device_supported, info.precision_from) == (False, "host")
    assert info.note == "NoSuchNpuOp: not in the device op library"

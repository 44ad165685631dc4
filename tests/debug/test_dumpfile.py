"""Dump file names: the other forms a real device dump and ``msaccucmp.py convert`` give."""

from __future__ import annotations

import pytest

from tf2npu.debug.dumpfile import NpuFileName, parse_golden, parse_npu


@pytest.mark.parametrize(
    ("filename", "name", "kind", "index", "ext"),
    [
        # ours, msaccucmp convert's plain name
        (
            "MatMul.dense_MatMul.3.0.1700000000000000.output.0.npy",
            NpuFileName("MatMul", "dense_MatMul", 3, 0, 1700000000000000),
            "output", 0, "npy",
        ),
        # older CANN: no stream id (reference §2.4's example)
        (
            "TransData.trans_TransData_1170.327.1619347786532995.input.0.npy",
            NpuFileName("TransData", "trans_TransData_1170", 327, 0, 1619347786532995),
            "input", 0, "npy",
        ),
        # convert -f: the shape after the index
        (
            "Add.add_1.4.2.1673383728093446.output.1.2x3.npy",
            NpuFileName("Add", "add_1", 4, 2, 1673383728093446),
            "output", 1, "npy",
        ),
        (
            "Add.add_1.4.2.1673383728093446.output.0.7.npy",
            NpuFileName("Add", "add_1", 4, 2, 1673383728093446),
            "output", 0, "npy",
        ),
        # newer CANN: .task_type.context_id.thread_id.device_id after the timestamp
        (
            "Add.partition0_Add.0.3.1673383728093446.4.1.0.0.output.0.npy",
            NpuFileName("Add", "partition0_Add", 0, 3, 1673383728093446),
            "output", 0, "npy",
        ),
        # not converted yet
        (
            "Add.partition0_Add.0.3.1673383728093446.4.1.0.0",
            NpuFileName("Add", "partition0_Add", 0, 3, 1673383728093446),
            None, None, "raw",
        ),
        (
            "Conv2D.conv1.12.1619347786532995",
            NpuFileName("Conv2D", "conv1", 12, 0, 1619347786532995),
            None, None, "raw",
        ),
    ],
)  # fmt: skip
def test_vendor_dump_names_are_read(filename, name, kind, index, ext) -> None:
    parsed = parse_npu(filename)
    assert parsed is not None
    assert (parsed.name, parsed.kind, parsed.index, parsed.ext) == (name, kind, index, ext)


@pytest.mark.parametrize(
    "filename", ["dense_MatMul.0.1700000000000000.npy", "scope.op.0.1700000000000000.npy"]
)
def test_golden_names_stay_golden(filename) -> None:
    assert parse_npu(filename) is None
    assert parse_golden(filename) is not None

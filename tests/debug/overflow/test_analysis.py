"""Finding the first overflows of a dump tree: order, data files, graph mapping, broken input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tf2npu.artifacts import gegraph
from tf2npu.artifacts.dump import NpuFileName, opdebug_name
from tf2npu.artifacts.gegraph import GeGraph, GeOp, TensorDesc
from tf2npu.debug.overflow.analysis import (
    DataFile,
    analyse,
    consumers_of,
    op_files,
    parse_data_file,
    scan,
    summarize_tensor,
)
from tf2npu.errors import UsageError

F16 = np.float16
INF = float("inf")


def step_dir(root: Path, step: int = 0, model: str = "GeOp1_0", model_id: int = 1) -> Path:
    folder = root / "20240101000000" / "0" / model / str(model_id) / str(step)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_record(folder: Path, task: int, ts: int, body: object, stream: int = 0) -> Path:
    path = folder / opdebug_name(task, stream, ts)
    path.write_text(json.dumps(body))
    return path


def ai_core(task: int, status: int = 32, **fields: object) -> dict[str, object]:
    return {"AI Core": {"status": status, "task_id": task, "stream_id": 0, **fields}}


def save(
    folder: Path, base: NpuFileName, kind: str, index: int, values: object, dtype: object = F16
) -> None:
    np.save(folder / base.tensor(kind, index), np.asarray(values, dtype=dtype))  # type: ignore[arg-type]


def matmul_model(folder: Path) -> None:
    """x, w -> dense/MatMul (task 2) -> Cast (task 3) -> loss (task 4, Exp)."""
    ops = (
        GeOp("x", "Data", 0, output_desc=(TensorDesc("DT_FLOAT16", (2,)),)),
        GeOp("w", "Const", 1, output_desc=(TensorDesc("DT_FLOAT16", (2,)),)),
        GeOp("dense/MatMul", "MatMul", 2, ("x:0", "w:0"),
             output_desc=(TensorDesc("DT_FLOAT16", (2,), "dense/MatMul", 0),)),
        GeOp("dense/MatMul_cast", "Cast", 3, ("dense/MatMul:0",),
             output_desc=(TensorDesc("DT_FLOAT", (2,), "dense/MatMul", 0),)),
        GeOp("loss/Exp", "Exp", 4, ("dense/MatMul_cast:0", "x:-1")),
    )  # fmt: skip
    gegraph.dump(GeGraph("GeOp1_0", ops), folder.parent / "ge_proto_00000001_Build.json")


# -- scanning ---------------------------------------------------------------------------------


def test_records_are_ordered_by_the_timestamp_in_their_names(tmp_path: Path) -> None:
    late = write_record(step_dir(tmp_path, 0), 1, 1700000000000900, ai_core(1))
    first = write_record(step_dir(tmp_path, 1), 4, 1700000000000100, ai_core(4))
    middle = write_record(step_dir(tmp_path, 0), 2, 1700000000000500, ai_core(2))
    (tmp_path / "notes.txt").write_text("not a dump file")
    found = scan(tmp_path)
    assert [path for path, _ in found.records] == [first, middle, late]
    assert (found.raw_records, found.tensor_files) == (0, 0)


def test_records_at_any_depth_and_other_files_counted(tmp_path: Path) -> None:
    deep = (
        tmp_path / "precision_data" / "overflow" / "dump" / "20240101000000" / "0" / "g" / "1" / "0"
    )
    deep.mkdir(parents=True)
    record = write_record(deep, 0, 1700000000000000, ai_core(0))
    raw = deep / "Opdebug.Node_OpDebug.0.3.1673383728094391.4.1.0.0"
    raw.write_bytes(b"raw")
    save(deep, NpuFileName("Add", "add", 0, 0, 1700000000000000), "output", 0, [1.0])
    (deep / "dense_MatMul.0.1700000000000000.npy").write_bytes(b"")  # golden name
    found = scan(tmp_path)
    assert [path for path, _ in found.records] == [raw, record]  # by timestamp
    assert (found.raw_records, found.tensor_files) == (1, 2)


def test_a_record_both_raw_and_converted_is_read_once_raw(tmp_path: Path) -> None:
    """msaccucmp convert's output in the same tree (precision_tool's temp/decode) is the same
    overflow event: listed once, as the raw file beside the op's data."""
    raw = step_dir(tmp_path, 0) / "Opdebug.Node_OpDebug.3.0.1700000000000100"
    raw.write_bytes(b"raw")
    converted = tmp_path / "decode"
    converted.mkdir()
    write_record(converted, 3, 1700000000000100, ai_core(3))
    write_record(converted, 4, 1700000000000200, ai_core(4))
    found = scan(tmp_path)
    assert [path.name for path, _ in found.records] == [
        raw.name, "Opdebug.Node_OpDebug.4.0.1700000000000200.output.0.json",
    ]  # fmt: skip
    assert found.raw_records == 1


# -- data files -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("MatMul.dense_MatMul.3.0.1700000000000123.input.1.npy",
         DataFile("MatMul.dense_MatMul.3.0.1700000000000123.input.1.npy", "MatMul", "dense_MatMul", 3, 0, 1700000000000123, "input", 1)),
        # msaccucmp convert: no stream id (old); four ids after the timestamp (new); -f shape
        # no stream id in the name: stream 0, as tf2npu.artifacts.dump reads it
        ("TransData.trans_TransData_1170.327.1619347786532995.input.0.npy",
         DataFile("TransData.trans_TransData_1170.327.1619347786532995.input.0.npy", "TransData", "trans_TransData_1170", 327, 0, 1619347786532995, "input", 0)),
        ("Add.add_1.0.3.1673383728093446.4.1.0.0.output.0.npy",
         DataFile("Add.add_1.0.3.1673383728093446.4.1.0.0.output.0.npy", "Add", "add_1", 0, 3, 1673383728093446, "output", 0)),
        ("Conv2D.c.5.0.1673383728093446.output.0.1x3x4x4.npy",
         DataFile("Conv2D.c.5.0.1673383728093446.output.0.1x3x4x4.npy", "Conv2D", "c", 5, 0, 1673383728093446, "output", 0)),
        ("MatMul.dense_MatMul.3.0.1700000000000123.csv", None),
        ("Opdebug.Node_OpDebug.3.0.1700000000000123.output.0.json", None),
        ("dense_MatMul.0.1700000000000123.npy", None),
    ],
)  # fmt: skip
def test_data_file_names(filename: str, expected: DataFile | None) -> None:
    assert parse_data_file(filename) == expected


def test_op_files_take_the_earliest_dump_of_the_task_inputs_first() -> None:
    names = [
        "MatMul.mm.3.0.1700000000000200.output.0.npy",
        "MatMul.mm.3.0.1700000000000100.output.0.npy",
        "MatMul.mm.3.0.1700000000000100.input.1.npy",
        "MatMul.mm.3.0.1700000000000100.input.0.npy",
        "Add.add.4.0.1700000000000050.output.0.npy",
        "MatMul.mm.3.1.1700000000000010.output.0.npy",  # another stream
    ]
    files = [f for f in map(parse_data_file, names) if f is not None]
    chosen = [f.filename for f in op_files(files, 3, 0)]
    assert chosen == [
        "MatMul.mm.3.0.1700000000000100.input.0.npy",
        "MatMul.mm.3.0.1700000000000100.input.1.npy",
        "MatMul.mm.3.0.1700000000000100.output.0.npy",
    ]
    # a record without a stream id matches any stream
    assert [f.filename for f in op_files(files, 3, None)] == [
        "MatMul.mm.3.1.1700000000000010.output.0.npy"
    ]
    assert op_files(files, 9, 0) == []


# -- tensor statistics ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "dtype", "expected"),
    [
        ([1.0, -3.0, 5.0], F16, (5.0, -3.0, 1.0, 0, 0, 0, 0)),
        ([1.0, INF, 65504.0], F16, (INF, 1.0, INF, 0, 1, 0, 1)),
        ([1.0, INF, -INF], F16, (INF, -INF, math.nan, 0, 1, 1, 0)),
        ([-INF, -INF], F16, (-INF, -INF, -INF, 0, 0, 2, 0)),
        ([1.0, math.nan, -65504.0], F16, (math.nan, math.nan, math.nan, 1, 0, 0, 1)),
        ([70000.0, 2.0], np.float32, (70000.0, 2.0, 35001.0, 0, 0, 0, 0)),  # no saturation count in float32
        ([], F16, (math.nan, math.nan, math.nan, 0, 0, 0, 0)),
    ],
)  # fmt: skip
def test_tensor_statistics_over_all_elements(
    tmp_path: Path, values: list[float], dtype: object, expected: tuple[float, ...]
) -> None:
    path = tmp_path / "Add.add.0.0.1700000000000000.output.0.npy"
    np.save(path, np.asarray(values, dtype=dtype))  # type: ignore[call-overload]
    t = summarize_tensor(path, "output", 0)
    got = (t.max, t.min, t.mean, t.nan, t.pos_inf, t.neg_inf, t.saturated)
    assert np.allclose(got, expected, equal_nan=True), got
    assert (t.shape, t.dtype) == ((len(values),), np.dtype(dtype).name)  # type: ignore[call-overload]
    assert t.finite is (expected[3:6] == (0, 0, 0))


# -- whole trees ------------------------------------------------------------------------------


def test_first_overflow_mapped_to_the_users_graph(tmp_path: Path) -> None:
    folder = step_dir(tmp_path)
    matmul_model(folder)
    base = NpuFileName("MatMul", "dense_MatMul", 2, 0, 1700000000000100)
    save(folder, base, "input", 0, [300.0, 2.0])
    save(folder, base, "input", 1, [400.0, 1.0])
    save(folder, base, "output", 0, [INF, 65504.0])
    record = write_record(folder, 2, 1700000000000150, ai_core(
        2, model_id=1, step=0, op_name="dense/MatMul", op_type="MatMul",
        origin=["dense/MatMul"], created_at="train.py:12", kind="inf_nan", dtype="DT_FLOAT16",
    ))  # fmt: skip
    write_record(folder, 4, 1700000000000300, ai_core(4, op_name="loss/Exp", op_type="Exp"))
    report = analyse(tmp_path)
    assert (report.records, report.skipped, len(report.overflows)) == (2, 0, 1)
    overflow = report.overflows[0]
    assert overflow.record.path == record
    assert (overflow.op_type, overflow.op_name, overflow.dtype) == (
        "MatMul",
        "dense/MatMul",
        "DT_FLOAT16",
    )
    assert [(t.kind, t.index, t.max) for t in overflow.tensors] == [
        ("input", 0, 300.0),
        ("input", 1, 400.0),
        ("output", 0, INF),
    ]
    assert overflow.node is not None
    assert (overflow.node.model, overflow.node.op.id, overflow.node.output_origins) == (
        "GeOp1_0",
        2,
        ("dense/MatMul:0",),
    )
    assert [c.name for c in overflow.node.consumers] == ["dense/MatMul_cast"]
    assert (overflow.user_ops, overflow.created_at) == (("dense/MatMul",), "train.py:12")
    assert (overflow.fix.black_list, overflow.fix.keep_dtype_ops) == (
        ("MatMul",),
        ("dense/MatMul",),
    )
    assert overflow.notes == ()
    assert report.black_list == ("MatMul",)


def test_n_takes_the_first_overflows_and_skips_records_that_show_none(tmp_path: Path) -> None:
    folder = step_dir(tmp_path)
    write_record(folder, 4, 1700000000000300, ai_core(4, op_type="Exp"))
    write_record(folder, 1, 1700000000000100, ai_core(1, status=0, op_type="Add"))
    write_record(folder, 2, 1700000000000200, ai_core(2, op_type="MatMul"))
    write_record(folder, 3, 1700000000000900, ai_core(3, op_type="Log"))
    report = analyse(tmp_path, limit=2)
    assert [o.op_type for o in report.overflows] == ["MatMul", "Exp"]
    assert (report.records, report.skipped) == (4, 1)
    assert report.black_list == ("MatMul", "Exp")
    assert [o.op_type for o in analyse(tmp_path, limit=10).overflows] == ["MatMul", "Exp", "Log"]


def test_a_record_without_its_data_files(tmp_path: Path) -> None:
    folder = step_dir(tmp_path)
    write_record(
        folder, 7, 1700000000000100, ai_core(7, op_name="a/Exp", op_type="Exp", dtype="DT_FLOAT16")
    )
    overflow = analyse(tmp_path).overflows[0]
    assert overflow.tensors == ()
    assert overflow.notes == (
        f"no dump files of task 7 stream 0 in {folder}: only the record was kept",
        f"no graph JSON (ge_proto_*_Build.json) beside {folder}",
    )
    assert (overflow.op_type, overflow.fix.black_list, overflow.user_ops) == ("Exp", ("Exp",), ())


def test_vendor_old_dump_named_by_msaccucmp(tmp_path: Path) -> None:
    folder = tmp_path / "20200808163566" / "0" / "npu_cluster_0" / "11" / "0"
    folder.mkdir(parents=True)
    (folder / "Opdebug.Node_OpDebug.327.1619347786533000.output.0.json").write_text(json.dumps({
        "AI Core": {"status": 32, "task_id": 327, "stream_id": 65535},
        "DHA Atomic Add": {"status": 0}, "L2 Atomic Add": {"status": 0},
    }))  # fmt: skip
    np.save(folder / "MatMulV2.bert_dense_MatMul.327.1619347786532995.input.0.npy", np.ones(4, F16))
    np.save(
        folder / "MatMulV2.bert_dense_MatMul.327.1619347786532995.output.0.npy",
        np.full(4, 65504, F16),
    )
    overflow = analyse(tmp_path).overflows[0]
    assert (overflow.record.task_id, overflow.record.stream_id) == (327, None)
    assert (overflow.op_type, overflow.op_name, overflow.dtype) == (
        "MatMulV2",
        "bert_dense_MatMul",
        "DT_FLOAT16",
    )
    assert [t.saturated for t in overflow.tensors] == [0, 4]
    assert overflow.fix.black_list == ("MatMulV2",)  # a GE type: modify_mixlist takes those
    assert overflow.notes == (f"no graph JSON (ge_proto_*_Build.json) beside {folder}",)


def test_vendor_new_dump(tmp_path: Path) -> None:
    folder = tmp_path / "dump"
    folder.mkdir()
    (folder / "Opdebug.Node_OpDebug.5.1.1673383728094391.4.1.0.0.output.0.json").write_text(json.dumps(
        {"magic": 0x5A5A5A5A, "version": 1, "acc_list": {"acc_type": "AIV", "data": {"status": 256, "task_id": 5, "stream_id": 1}}}
    ))  # fmt: skip
    np.save(
        folder / "Cast.cast_1.5.1.1673383728094000.4.1.0.0.input.0.npy", np.array([1e6], np.float32)
    )
    np.save(folder / "Cast.cast_1.5.1.1673383728094000.4.1.0.0.output.0.npy", np.array([INF], F16))
    overflow = analyse(tmp_path).overflows[0]
    assert overflow.record.overflowed[0].meanings == ("FP32 or INT32 to FP16 conversion overflow",)
    assert [t.dtype for t in overflow.tensors] == ["float32", "float16"]
    assert overflow.fix.black_list == ()  # a Cast: its reader is unknown without a graph
    assert overflow.fix.reason.startswith("a Cast the precision mode inserted")


def test_an_overflowing_cast_moves_its_readers_to_float32(tmp_path: Path) -> None:
    folder = step_dir(tmp_path)
    ops = (
        GeOp("big", "Exp", 0, output_desc=(TensorDesc("DT_FLOAT"),)),
        GeOp("big_cast", "Cast", 1, ("big:0",), output_desc=(TensorDesc("DT_FLOAT16", (), "big", 0),)),
        GeOp("dense/MatMul", "MatMul", 2, ("big_cast:0", "w:0")),
        GeOp("fused", "_FusedMatMul", 3, ("big_cast:0", "w:0"), original_op_names=("d2/MatMul", "d2/BiasAdd")),
        GeOp("after", "Relu", 4, ("big_cast:-1",)),  # a control edge is not a reader
    )  # fmt: skip
    gegraph.dump(GeGraph("GeOp1_0", ops), folder.parent / "ge_proto_00000001_Build.json")
    write_record(
        folder,
        1,
        1700000000000100,
        ai_core(
            1,
            op_name="big_cast",
            op_type="Cast",
            dtype="DT_FLOAT16",
            origin=["big"],
            created_at="t.py:3",
        ),
    )
    overflow = analyse(tmp_path).overflows[0]
    assert overflow.fix.black_list == ("MatMul",)
    assert overflow.fix.keep_dtype_ops == ("dense/MatMul", "d2/MatMul", "d2/BiasAdd")
    assert overflow.fix.created_at == ""  # t.py:3 made `big`, not the readers
    assert overflow.created_at == "t.py:3"


def test_the_graph_op_is_found_by_name_else_by_task_id(tmp_path: Path) -> None:
    folder = step_dir(tmp_path)
    matmul_model(folder)
    write_record(folder, 4, 1700000000000100, ai_core(4))  # vendor-like: no op name
    overflow = analyse(tmp_path).overflows[0]
    assert overflow.node is not None
    assert (overflow.node.op.name, overflow.op_type, overflow.user_ops) == (
        "loss/Exp",
        "Exp",
        ("loss/Exp",),
    )
    assert consumers_of(GeGraph("g", (overflow.node.op,)), overflow.node.op) == ()


def test_a_float32_overflow_gets_no_mixlist_fix(tmp_path: Path) -> None:
    folder = step_dir(tmp_path)
    base = NpuFileName("Exp", "e", 0, 0, 1700000000000000)
    save(folder, base, "input", 0, [100.0], np.float32)
    save(folder, base, "output", 0, [INF], np.float32)
    write_record(folder, 0, 1700000000000001, ai_core(0))
    overflow = analyse(tmp_path).overflows[0]
    assert overflow.dtype == "DT_FLOAT"
    assert overflow.fix.black_list == ()
    assert overflow.fix.reason.startswith("its output is DT_FLOAT, not float16")


def test_unreadable_graph_json_and_data_file_are_notes(tmp_path: Path) -> None:
    folder = step_dir(tmp_path)
    (folder.parent / "ge_proto_00000001_Build.json").write_text("{not json")
    (folder / "Exp.e.0.0.1700000000000000.output.0.npy").write_bytes(b"not npy")
    write_record(folder, 0, 1700000000000001, ai_core(0, op_type="Exp", dtype="DT_FLOAT16"))
    notes = analyse(tmp_path).overflows[0].notes
    assert len(notes) == 2
    assert notes[0].startswith("Exp.e.0.0.1700000000000000.output.0.npy cannot be read as .npy: ")
    assert notes[1].startswith(
        f"graph JSON unreadable: {folder.parent / 'ge_proto_00000001_Build.json'}: "
    )


def test_a_broken_record_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    path = write_record(step_dir(tmp_path), 0, 1700000000000001, {"unexpected": 1})
    with pytest.raises(UsageError, match=f"overflow record {str(path)!r} is not an Opdebug record"):
        analyse(tmp_path)


def test_limit_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="limit must be >= 1, got 0"):
        analyse(tmp_path, limit=0)


def test_the_model_is_picked_by_its_folder_name_and_a_name_is_not_guessed(tmp_path: Path) -> None:
    folder = step_dir(tmp_path, model="GeOp2_0")
    graphs = [
        GeGraph("GeOp1_0", (GeOp("a/Exp", "Exp", 0),)),
        GeGraph("GeOp2_0", (GeOp("b/Log", "Log", 0), GeOp("b/Exp", "Exp", 1))),
    ]
    gegraph.dump(graphs, folder.parent / "ge_proto_00000001_Build.json")
    write_record(folder, 1, 1700000000000100, ai_core(1, op_name="b/Exp", op_type="Exp"))
    write_record(folder, 0, 1700000000000200, ai_core(0, op_name="b/Renamed", op_type="Exp"))
    first, second = analyse(tmp_path, limit=2).overflows
    assert first.node is not None and first.node.model == "GeOp2_0"
    assert (first.node.op.name, first.user_ops) == ("b/Exp", ("b/Exp",))
    assert second.node is None  # task 0 is b/Log: a different name is not taken for it
    assert second.notes[-1] == (
        f"no op 'b/Renamed' in model 'GeOp2_0' of {folder.parent / 'ge_proto_00000001_Build.json'}"
    )


def test_raw_device_files_give_one_data_file_per_tensor(tmp_path: Path) -> None:
    from tf2npu.artifacts.dump import write_nano
    from tf2npu.debug.overflow.analysis import data_files, summarize_tensor

    write_nano(tmp_path / "Mul.big.3.0.1700000000000003", [np.ones(2, np.float16), None],
               [np.array([np.inf, 1.0], np.float16)])  # fmt: skip
    (tmp_path / "Add.pb.4.0.1700000000000004").write_bytes(b"\x00" * 20)  # protobuf layout
    files = data_files(tmp_path, sorted(p.name for p in tmp_path.iterdir()))
    assert [(f.op_name, f.task_id, f.kind, f.index, f.raw) for f in files] == [
        ("big", 3, "input", 0, True), ("big", 3, "output", 0, True),
    ]  # fmt: skip
    summary = summarize_tensor(tmp_path / files[1].filename, "output", 0, raw=True)
    assert (summary.shape, summary.dtype, summary.pos_inf, summary.finite) == (
        (2,), "float16", 1, False,
    )  # fmt: skip

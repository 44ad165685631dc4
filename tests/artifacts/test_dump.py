"""Dump file names (ours, and the other forms real device dumps and ``msaccucmp.py convert``
give), step folders and statistics files (tf2npu.artifacts.dump)."""

from __future__ import annotations

import csv
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tf2npu.artifacts import dump as dumpfile
from tf2npu.artifacts.dump import NpuFileName, parse_golden, parse_npu


def test_npu_names_round_trip() -> None:
    name = NpuFileName("MatMul", dumpfile.sanitize("dense/MatMul"), 3, 0, 1700000000000000)
    assert name.tensor("input", 1) == "MatMul.dense_MatMul.3.0.1700000000000000.input.1.npy"
    assert name.stats() == "MatMul.dense_MatMul.3.0.1700000000000000.csv"
    parsed = dumpfile.parse_npu(name.tensor("input", 1))
    assert parsed is not None
    assert (parsed.name, parsed.kind, parsed.index, parsed.ext) == (name, "input", 1, "npy")
    stats = dumpfile.parse_npu(name.stats())
    assert stats is not None and (stats.kind, stats.ext) == (None, "csv")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a/b.c d\\e", "a_b_c_d_e"),
        ("plain_name-1", "plain_name-1"),
        ("a:b(c)", "a_b_c_"),  # outside msaccucmp's [A-Za-z0-9_-]: its pattern would not match
    ],
)
def test_sanitize(text: str, expected: str) -> None:
    assert dumpfile.sanitize(text) == expected


def test_a_raw_device_file_is_recognised_as_not_converted() -> None:
    parsed = dumpfile.parse_npu("Add.partition0_Add.0.3.1673383728093446")
    assert parsed is not None and parsed.ext == "raw" and parsed.kind is None


def test_opdebug_names() -> None:
    name = dumpfile.opdebug_name(4, 0, 1673383728094391)
    assert name == "Opdebug.Node_OpDebug.4.0.1673383728094391.output.0.json"
    parsed = dumpfile.parse_npu(name)
    assert parsed is not None and parsed.ext == "json" and parsed.name.task_id == 4


def test_golden_names() -> None:
    assert dumpfile.golden_name("dense/MatMul", 0, 1) == "dense_MatMul.0.1.npy"
    parsed = dumpfile.parse_golden("dense_MatMul.0.1619492699305998.npy")
    assert parsed == dumpfile.GoldenFile("dense_MatMul", 0, 1619492699305998)
    # an NPU tensor file is never read as golden, nor a stray .npy
    assert dumpfile.parse_golden("MatMul.dense_MatMul.3.0.17.output.0.npy") is None
    assert dumpfile.parse_golden("weights.npy") is None


def test_find_step_dirs_reads_the_device_layout(tmp_path: Path) -> None:
    model = tmp_path / "20240125153144" / "0" / "GeOp1_0" / "7"
    step = model / "2"
    step.mkdir(parents=True)
    name = NpuFileName("Relu", "relu", 0, 0, 1)
    np.save(step / name.tensor("output", 0), np.zeros(2))
    (model / "ge_proto_00000007_Build.json").write_text('{"graph": []}')  # an older dump's
    (tmp_path / "notes.txt").write_text("not a dump")
    [found] = dumpfile.find_step_dirs(tmp_path)
    assert found == dumpfile.StepDir(
        path=step,
        kind="npu",
        step=2,
        model_name="GeOp1_0",
        model_id=7,
        device_id=0,
        time="20240125153144",
        graph_json=model / "ge_proto_00000007_Build.json",
    )
    assert found.files() == [name.tensor("output", 0)]


def test_find_step_dirs_reads_golden_folders(tmp_path: Path) -> None:
    (tmp_path / "0").mkdir()
    np.save(tmp_path / "0" / "dense_MatMul.0.5.npy", np.zeros(1))
    np.save(tmp_path / "x.0.5.npy", np.zeros(1))
    found = dumpfile.find_step_dirs(tmp_path)
    assert [(d.path, d.kind, d.step) for d in found] == [
        (tmp_path, "golden", None),
        (tmp_path / "0", "golden", 0),
    ]


def test_tensor_stats_counts_non_finite_values_apart() -> None:
    row = dumpfile.tensor_stats(
        "output", 1, np.array([[1.0, -3.0], [np.nan, np.inf]], dtype=np.float16)
    )
    assert row == dumpfile.TensorStats(
        kind="output", index=1, size=8, dtype="DT_FLOAT16", shape=(2, 2), max=1.0, min=-3.0,
        mean=-1.0, count=4, nan=1, neg_inf=0, pos_inf=1, zero=0, l2norm=float(np.sqrt(10.0)),
    )  # fmt: skip


def test_tensor_stats_of_an_empty_or_all_nan_tensor_has_nan_figures() -> None:
    row = dumpfile.tensor_stats("input", 0, np.array([np.nan]))
    assert row.nan == 1 and np.isnan(row.max) and np.isnan(row.mean)
    empty = dumpfile.tensor_stats("input", 0, np.zeros((0, 3), dtype=np.int32))
    assert empty.count == 0 and empty.shape == (0, 3) and np.isnan(empty.l2norm)


def _reference_stats(kind: dumpfile.Kind, index: int, array: Any) -> dumpfile.TensorStats:
    """The statistics as their definition reads: every figure on a float64 copy."""
    flat = np.asarray(array).reshape(-1)
    values = flat.astype(np.float64)
    nan = int(np.count_nonzero(np.isnan(values)))
    finite = values[np.isfinite(values)]
    empty = finite.size == 0
    return dumpfile.TensorStats(
        kind, index, flat.nbytes, dumpfile.ge_dtype(flat.dtype), tuple(np.shape(array)),
        float("nan") if empty else float(finite.max()),
        float("nan") if empty else float(finite.min()),
        float("nan") if empty else float(finite.mean()),
        flat.size, nan, int(np.count_nonzero(values == -np.inf)),
        int(np.count_nonzero(values == np.inf)), int(flat.size - np.count_nonzero(values)),
        float("nan") if empty else float(np.sqrt(np.dot(finite, finite))),
    )  # fmt: skip


def _tensors() -> dict[str, Any]:
    rng = np.random.default_rng(7)
    big = rng.standard_normal(100_003).astype(np.float32) * 1e3  # > numpy's 8192 buffer
    holes = big.copy()
    holes[[5, 70_000]] = np.nan
    holes[9] = np.inf
    holes[[10, 90_000]] = -np.inf
    zeros = big.copy()
    zeros[::7] = 0.0
    zeros[1] = -0.0
    return {
        "float32 finite": big,
        "float32 with NaN and Inf": holes,
        "float32 with zeros and -0.0": zeros,
        "float32 strided": big[:99_990].reshape(10, 9_999)[:, ::2],
        "float64": big.astype(np.float64),
        "float16 saturated to Inf": big.astype(np.float16),
        "int64 large": rng.integers(-(2**40), 2**40, 50_000),
        "uint8": rng.integers(0, 255, (3, 5), dtype=np.uint8),
        "bool": rng.random(1000) > 0.5,
        "scalar": np.float32(2.5),
        "empty": np.zeros((4, 0), dtype=np.float32),
        "all NaN": np.full(10, np.nan, dtype=np.float32),
        "only one finite": np.array([np.inf, -np.inf, 1.0], dtype=np.float32),
    }


TENSORS = _tensors()


@pytest.mark.parametrize("name", TENSORS)
def test_tensor_stats_equal_the_float64_definition_bit_for_bit(name: str) -> None:
    array = TENSORS[name]
    got = dumpfile.tensor_stats("output", 2, array)
    assert got.row() == _reference_stats("output", 2, array).row()


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype=np.float32).reshape(3, 4),
        np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4)),
        np.arange(24, dtype=np.int64).reshape(4, 6)[::2, 1::2],
        np.asarray(np.float16(1.5)),
        np.zeros((2, 0), dtype=np.int32),
        np.array([True, False]),
        np.array([1 + 2j], dtype=np.complex64),
        np.arange(3, dtype=">i4"),
    ],
    ids=["C", "Fortran", "strided", "0-d", "empty", "bool", "complex", "big-endian"],
)
def test_save_npy_writes_what_np_save_writes(tmp_path: Path, array: Any) -> None:
    dumpfile.save_npy(tmp_path / "ours.npy", array)
    np.save(tmp_path / "numpy.npy", array, allow_pickle=False)
    assert (tmp_path / "ours.npy").read_bytes() == (tmp_path / "numpy.npy").read_bytes()


def test_stats_csv_round_trip(tmp_path: Path) -> None:
    rows = [
        dumpfile.tensor_stats("input", 0, np.arange(6, dtype=np.int32).reshape(2, 3)),
        dumpfile.tensor_stats("output", 0, np.array([0.5, 0.0], dtype=np.float32)),
    ]
    path = tmp_path / "Relu.relu.0.0.1.csv"
    dumpfile.write_stats_csv(path, rows)
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(dumpfile.STATS_HEADER)
    assert lines[1] == "Input,0,24,DT_INT32,ND,2x3,5.0,0.0,2.5,6,0,0,0,1,7.416198487095663"
    assert dumpfile.read_stats_csv(path) == rows


def test_stats_csv_bytes_are_what_the_csv_module_writes(tmp_path: Path) -> None:
    rows = [
        dumpfile.tensor_stats("output", 1, np.array([[1.0, np.nan], [-np.inf, 0.0]])),
        dumpfile.tensor_stats("input", 0, np.zeros((0, 2), dtype=np.float16)),
        dumpfile.TensorStats("output", 2, 4, 'DT_"odd,"', (1,), 1.0, 1.0, 1.0, 1, 0, 0, 0, 0, 1.0),
    ]
    path = tmp_path / "ours.csv"
    dumpfile.write_stats_csv(path, rows)
    with open(tmp_path / "csv.csv", "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(dumpfile.STATS_HEADER)
        writer.writerows(row.row() for row in rows)
    assert path.read_bytes() == (tmp_path / "csv.csv").read_bytes()
    assert b'"DT_""odd,"""' in path.read_bytes()  # quoted as the csv module quotes


def test_read_stats_csv_refuses_another_csv(tmp_path: Path) -> None:
    path = tmp_path / "result.csv"
    path.write_text("Index,OpType\n1,Add\n")
    with pytest.raises(ValueError, match="not a statistics dump"):
        dumpfile.read_stats_csv(path)


@pytest.mark.parametrize(
    ("dtype", "ge"),
    [
        ("float16", "DT_FLOAT16"),
        (np.float32, "DT_FLOAT"),
        ("bool", "DT_BOOL"),
        ("<U3", "DT_UNDEFINED"),
    ],
)
def test_ge_dtype(dtype: object, ge: str) -> None:
    assert dumpfile.ge_dtype(dtype) == ge


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


# -- raw device files (the TLV "nano" layout msaccucmp parses in pure Python) ----------------


def test_a_raw_file_holds_the_header_then_inputs_then_outputs(tmp_path: Path) -> None:
    path = tmp_path / "Add.add_1.0.0.1700000000000000"
    data = dumpfile.write_nano(
        path, [np.array([1, 2], np.int32)], [np.array(3.5, np.float16)], [("add/1", 0)]
    )
    raw = path.read_bytes()
    (length,) = struct.unpack_from("<Q", raw)
    assert data == 10 and len(raw) == 8 + length + 10
    # magic, version; TLV 4: one input: int32 (3), ND (2), address type 0, address 0,
    # offset 0, size 8, 32 bytes of TLNVs: shape [2], original shape [2]
    assert raw[8:16] == struct.pack("<II", 0x5A5A5A5A, 1)
    assert raw[16:24] == struct.pack("<II", 4, 4 + 40 + 32)
    assert raw[24:68] == struct.pack("<IiiiQQQI", 1, 3, 2, 0, 0, 0, 8, 32)
    assert raw[68:100] == struct.pack("<IIQIIQ", 0, 8, 2, 1, 8, 2)
    # the data: the input's bytes, then the output's
    assert raw[-10:] == np.array([1, 2], np.int32).tobytes() + np.float16(3.5).tobytes()
    header = dumpfile.read_nano(path)
    assert header.outputs[0] == dumpfile.NanoTensor("float16", (), 8 + length + 8, 2, "add/1", 0)
    assert dumpfile.load_nano_tensor(path, "output", 0).tolist() == 3.5
    assert dumpfile.load_nano_tensor(path, "input", 0).tolist() == [1, 2]


def test_a_raw_file_keeps_positions_of_tensors_not_taken(tmp_path: Path) -> None:
    path = tmp_path / "MatMul.mm.3.0.1700000000000000"
    dumpfile.write_nano(path, [np.ones((2, 2), np.float32), None], [np.zeros((0, 3), np.float32)])
    header = dumpfile.read_nano(path)
    assert [t.absent for t in header.inputs] == [False, True]
    assert list(header.present()) == [("input", 0), ("output", 0)]
    assert dumpfile.load_nano_tensor(path, "output", 0).shape == (0, 3)
    with pytest.raises(KeyError, match=r"input 1 \(not dumped"):
        header.tensor("input", 1)
    with pytest.raises(KeyError, match=r"output 1 \(the file holds 1 outputs\)"):
        header.tensor("output", 1)


def test_bfloat16_is_read_as_float32_exactly(tmp_path: Path) -> None:
    path = tmp_path / "Cast.c.0.0.1700000000000000"
    bits = np.array([0x3F80, 0xC040], np.uint16)  # 1.0, -3.0
    dumpfile.write_nano(path, [], [bits])
    raw = bytearray(path.read_bytes())
    header_end = 8 + struct.unpack_from("<Q", raw)[0]
    at = raw.index(struct.pack("<iii", 7, 2, 0), 16)  # uint16's code, patched to bfloat16's
    raw[at : at + 4] = struct.pack("<i", 27)
    path.write_bytes(bytes(raw))
    assert header_end == len(raw) - 4
    assert dumpfile.load_nano_tensor(path, "output", 0).tolist() == [1.0, -3.0]


def test_a_damaged_raw_file_says_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "Add.a.0.0.1700000000000000"
    dumpfile.write_nano(path, [], [np.ones(4, np.float32)])
    whole = path.read_bytes()
    path.write_bytes(whole[:-1])
    with pytest.raises(ValueError, match=r"31 bytes, but its header describes 32|truncated"):
        dumpfile.read_nano(path)
    path.write_bytes(whole[:8] + b"\x00" * 4 + whole[12:])
    with pytest.raises(ValueError, match=r"magic 0x0, expected 0x5a5a5a5a \(not a raw dump\)"):
        dumpfile.read_nano(path)
    path.write_bytes(b"\x01" * 4)
    with pytest.raises(ValueError, match="4 bytes, too short for a raw dump file"):
        dumpfile.read_nano(path)
    with pytest.raises(ValueError, match=r"dtype 'str32' has no code in the raw dump layout"):
        dumpfile.write_nano(path, [np.array(["a"])], [])


def test_npu_tensors_of_a_step_are_read_from_raw_and_converted_files(tmp_path: Path) -> None:
    step = tmp_path / "20260101120000" / "0" / "GeOp1_0_1" / "1" / "0"
    step.mkdir(parents=True)
    dumpfile.write_nano(step / "Relu.y.1.0.1700000000000001", [np.ones(2)], [np.ones(2)])
    name = NpuFileName("MatMul", "mm", 0, 0, 1700000000000000).tensor("output", 0)
    np.save(step / name, np.full(2, 3.0))
    (step / "Add.pb.2.0.1700000000000002").write_bytes(b"\x00" * 32)  # protobuf layout
    [found] = dumpfile.find_step_dirs(tmp_path)
    tensors = {
        (t.name.op_name, t.kind, t.index, t.raw): t for t in dumpfile.iter_npu_tensors(found)
    }
    assert sorted(tensors) == [
        ("mm", "output", 0, False), ("y", "input", 0, True), ("y", "output", 0, True),
    ]  # fmt: skip
    assert tensors[("mm", "output", 0, False)].load().tolist() == [3.0, 3.0]
    assert tensors[("y", "input", 0, True)].load().tolist() == [1.0, 1.0]


def test_the_graph_json_of_a_model_lives_outside_the_time_folder(tmp_path: Path) -> None:
    step = tmp_path / "20260101120000" / "0" / "GeOp1_0_2" / "2" / "0"
    step.mkdir(parents=True)
    dumpfile.write_nano(step / "Relu.y.1.0.1700000000000001", [], [np.ones(2)])
    json_path = dumpfile.model_graph_json(tmp_path, "20260101120000", "GeOp1_0_2")
    assert json_path == tmp_path / "graph" / "20260101120000" / "GeOp1_0_2.json"
    json_path.parent.mkdir(parents=True)
    json_path.write_text('{"graph": []}')
    [found] = dumpfile.find_step_dirs(tmp_path)
    assert found.graph_json == json_path and found.model_name == "GeOp1_0_2"
    assert dumpfile.model_name("GeOp1/0", 2) == "GeOp1_0_2"


def test_a_graph_json_beside_the_step_folders_may_have_precision_tools_name(tmp_path: Path) -> None:
    """A device's model: atc's JSON copied from precision_data/npu/debug_0/graph as it is."""
    model = tmp_path / "20240125153144" / "0" / "ge_default_1" / "1"
    step = model / "0"
    step.mkdir(parents=True)
    np.save(step / NpuFileName("Relu", "relu", 0, 0, 1).tensor("output", 0), np.zeros(2))
    (model / "ge_proto_00000005_Build.txt").write_text("graph {\n}\n")  # GE's: not a JSON
    (model / "ge_proto_00000005_Build.txt.json").write_text('{"graph": []}')
    [found] = dumpfile.find_step_dirs(tmp_path)
    assert found.graph_json == model / "ge_proto_00000005_Build.txt.json"

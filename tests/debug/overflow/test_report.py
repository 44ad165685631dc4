"""Views of an overflow report: panel lines, the summary file, the mixlist (read back by our
modify_mixlist reader) and JSON."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np

from tf2npu.artifacts.dump import NpuFileName, opdebug_name
from tf2npu.config.mixlist import Mixlist
from tf2npu.config.precision import PrecisionClass
from tf2npu.debug.overflow.analysis import OverflowReport, analyse
from tf2npu.debug.overflow.report import (
    Outputs,
    detail_lines,
    mixlist_json,
    status_lines,
    summary_text,
    tensor_line,
    title,
    to_json,
    write_outputs,
)
from tf2npu.graph.opinfo import load_default
from tf2npu.graph.opinfo.mixlist import resolve

NOW = datetime(2024, 5, 6, 7, 8, 9)


def two_overflows(root: Path) -> OverflowReport:
    """dense/MatMul (float16, saturated) at task 2, then loss/Exp (float16, Inf) at task 4."""
    folder = root / "0"
    folder.mkdir(parents=True)
    base = NpuFileName("MatMul", "dense_MatMul", 2, 0, 1700000000000100)
    np.save(folder / base.tensor("input", 0), np.array([[300.0, 2.0]], np.float16))
    np.save(folder / base.tensor("output", 0), np.array([[65504.0, -1.0]], np.float16))
    (folder / opdebug_name(2, 0, 1700000000000150)).write_text(json.dumps({"AI Core": {
        "status": 32, "task_id": 2, "stream_id": 0, "op_name": "dense/MatMul", "op_type": "MatMul",
        "origin": ["dense/MatMul"], "created_at": "train.py:12", "kind": "saturation",
        "dtype": "DT_FLOAT16", "step": 0,
    }}))  # fmt: skip
    (folder / opdebug_name(4, 0, 1700000000000300)).write_text(json.dumps({
        "AI Core": {"status": 288, "task_id": 4, "stream_id": 0, "op_type": "Exp", "dtype": "DT_FLOAT16"},
        "DHA Atomic Add": {"status": 0},
    }))  # fmt: skip
    return analyse(root, limit=2)


def test_panel_lines(tmp_path: Path) -> None:
    report = two_overflows(tmp_path)
    first, second = report.overflows
    assert title(first) == "[MatMul][2] dense/MatMul"
    assert status_lines(first) == [
        " - [AI Core][Status:32][TaskId:2] ['floating-point compute overflow']"
    ]
    assert status_lines(second) == [
        " - [AI Core][Status:288][TaskId:4] ['floating-point compute overflow', "
        "'FP32 or INT32 to FP16 conversion overflow']"
    ]
    assert detail_lines(first, report.root, tmp_path / "overflow_mixlist.json") == [
        " - First overflow file timestamp [1700000000000150] -",
        " - Record: 0/Opdebug.Node_OpDebug.2.0.1700000000000150.output.0.json (step 0)",
        " - Kind: saturation (a float16 result reached ±65504)",
        " Input 0 [Shape: (1, 2)] [Dtype: float16] [Max: 300] [Min: 2] [Mean: 151]",
        " Output 0 [Shape: (1, 2)] [Dtype: float16] [Max: 65504] [Min: -1] [Mean: 32751.5] [±65504: 1]",
        f" Note: no graph JSON (ge_proto_*_Build.json) beside {tmp_path / '0'}",
        " Your graph: dense/MatMul",
        " Created at: train.py:12",
        f' Fix: move MatMul to float32 with modify_mixlist {{"black-list": {{"to-add": ["MatMul"]}}}} ({tmp_path / "overflow_mixlist.json"})',
        "  or: create dense/MatMul at train.py:12 under `with npu_scope.keep_dtype_scope():`",
    ]
    assert detail_lines(second, report.root, None)[-3:] == [
        " Your graph: unknown (no graph JSON and no origin in the record)",
        " Created at: not recorded",
        ' Fix: move Exp to float32 with modify_mixlist {"black-list": {"to-add": ["Exp"]}}',
    ]


def test_tensor_line_counts_only_what_is_there(tmp_path: Path) -> None:
    path = tmp_path / "Exp.e.0.0.1700000000000000.output.0.npy"
    np.save(path, np.array([np.inf, -np.inf, np.nan, 1.0], np.float32))
    from tf2npu.debug.overflow.analysis import summarize_tensor

    assert tensor_line(summarize_tensor(path, "output", 0)) == (
        "Output 0 [Shape: (4,)] [Dtype: float32] [Max: nan] [Min: nan] [Mean: nan] "
        "[NaN: 1] [+Inf: 1] [-Inf: 1]"
    )


def test_summary_file_in_the_vendors_block_layout(tmp_path: Path) -> None:
    report = two_overflows(tmp_path / "dump")
    text = summary_text(report)
    blocks = text.split("==============================[2]==============================\n")
    assert len(blocks) == 2
    assert blocks[0].splitlines()[:4] == [
        "==============================[1]==============================",
        " [AI Core][TaskId:2][StreamId:0][Status:32]",
        " [MatMul][2] dense/MatMul",
        " Status: floating-point compute overflow",
    ]
    assert blocks[1].splitlines()[:3] == [
        " [AI Core][TaskId:4][StreamId:0][Status:288]",
        " [Exp][4] (op name not recorded)",
        " Status: floating-point compute overflow; FP32 or INT32 to FP16 conversion overflow",
    ]
    assert text.endswith(
        " Created at: not recorded\n"
        + ' Fix: move Exp to float32 with modify_mixlist {"black-list": {"to-add": ["Exp"]}}\n'
    )


def test_written_mixlist_is_what_modify_mixlist_accepts(tmp_path: Path) -> None:
    report = two_overflows(tmp_path / "dump")
    out = tmp_path / "out"
    out.mkdir()
    outputs = write_outputs(report, out, NOW)
    assert outputs == Outputs(
        out / "overflow_summary_20240506070809.txt", out / "overflow_mixlist.json"
    )
    assert json.loads((out / "overflow_mixlist.json").read_text()) == {
        "black-list": {"to-add": ["MatMul", "Exp"]}
    }
    edits = Mixlist.load(out / "overflow_mixlist.json")
    assert edits == Mixlist(added=(("MatMul", PrecisionClass.DENY), ("Exp", PrecisionClass.DENY)))
    # the engine's reading: both are op types the op library knows, so neither is ignored
    assert resolve(edits, load_default()).unmatched == ()
    assert edits.apply({"MatMul": PrecisionClass.ALLOW, "Exp": PrecisionClass.GRAY}) == {
        "MatMul": PrecisionClass.DENY, "Exp": PrecisionClass.DENY,
    }  # fmt: skip
    assert (out / "overflow_summary_20240506070809.txt").read_text() == summary_text(
        report, outputs.mixlist
    )


def test_nothing_written_without_an_overflow_and_no_mixlist_without_a_type(tmp_path: Path) -> None:
    assert write_outputs(OverflowReport(tmp_path, 0, ()), tmp_path, NOW) == Outputs(None, None)
    assert list(tmp_path.iterdir()) == []
    folder = tmp_path / "0"
    folder.mkdir()
    (folder / opdebug_name(0, 0, 1700000000000000)).write_text(
        json.dumps({"AI Core": {"status": 32, "op_type": "Exp", "dtype": "DT_FLOAT"}})
    )
    report = analyse(tmp_path)
    assert mixlist_json(report) is None
    assert write_outputs(report, tmp_path, NOW) == Outputs(
        tmp_path / "overflow_summary_20240506070809.txt", None
    )
    assert " Fix: none proposed (see why)" in summary_text(report)


def test_json_view(tmp_path: Path) -> None:
    report = two_overflows(tmp_path)
    data = to_json(report, Outputs(tmp_path / "s.txt", None))
    assert (data["records"], data["skipped"], data["mixlist"]) == (
        2,
        0,
        {"black-list": {"to-add": ["MatMul", "Exp"]}},
    )
    assert data["files"] == {"summary": str(tmp_path / "s.txt"), "mixlist": None}
    first = data["overflows"][0]
    assert {k: first[k] for k in ("op_type", "op_name", "task_id", "stream_id", "timestamp", "format", "kind", "dtype", "step", "node", "created_at")} == {
        "op_type": "MatMul", "op_name": "dense/MatMul", "task_id": 2, "stream_id": 0,
        "timestamp": 1700000000000150, "format": "old", "kind": "saturation",
        "dtype": "DT_FLOAT16", "step": 0, "node": None, "created_at": "train.py:12",
    }  # fmt: skip
    assert first["tensors"][1] == {
        "kind": "output", "index": 0, "file": "MatMul.dense_MatMul.2.0.1700000000000100.output.0.npy",
        "shape": [1, 2], "dtype": "float16", "max": 65504.0, "min": -1.0, "mean": 32751.5,
        "nan": 0, "pos_inf": 0, "neg_inf": 0, "saturated": 1,
    }  # fmt: skip
    assert first["fix"] == {
        "black_list": ["MatMul"],
        "keep_dtype_ops": ["dense/MatMul"],
        "created_at": "train.py:12",
        "reason": None,
    }
    json.dumps(data, allow_nan=False)  # strict JSON: no Infinity or NaN tokens

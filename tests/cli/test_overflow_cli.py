"""``tf2npu overflow`` end to end: panels, files, --json, exit codes and usage errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tf2npu.artifacts import gegraph
from tf2npu.artifacts.dump import NpuFileName, opdebug_name
from tf2npu.artifacts.gegraph import GeGraph, GeOp, TensorDesc
from tf2npu.cli.main import main
from tf2npu.config.mixlist import Mixlist
from tf2npu.config.precision import PrecisionClass
from tf2npu.testing.hostile import as_nobody, run_tf2npu

STEP = Path("20240101000000", "0", "GeOp1_0", "1", "0")


def overflow(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["overflow", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def record(folder: Path, task: int, ts: int, **fields: object) -> None:
    body = {"AI Core": {"status": 32, "task_id": task, "stream_id": 0, **fields}}
    (folder / opdebug_name(task, 0, ts)).write_text(json.dumps(body))


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    """A fused dense layer that saturates at step 0 (task 1), then an Exp at task 2."""
    return _make_dump(tmp_path / "ovf")


def _make_dump(root: Path) -> Path:
    folder = root / STEP
    folder.mkdir(parents=True)
    fused = GeOp(
        "dense/fused", "_FusedMatMul", 1, ("x:0", "w:0", "b:0"),
        output_desc=(TensorDesc("DT_FLOAT16", (2,), "dense/BiasAdd", 0),),
        original_op_names=("dense/MatMul", "dense/BiasAdd"), pass_name="matmul_biasadd",
    )  # fmt: skip
    gegraph.dump(GeGraph("GeOp1_0", (fused,)), folder.parent / "ge_proto_00000001_Build.json")
    base = NpuFileName("_FusedMatMul", "dense_fused", 1, 0, 1700000000000100)
    np.save(folder / base.tensor("input", 0), np.array([300.0, 400.0], np.float16))
    np.save(folder / base.tensor("output", 0), np.array([np.inf, 65504.0], np.float16))
    record(folder, 2, 1700000000000900, op_name="loss/Exp", op_type="Exp", dtype="DT_FLOAT16")
    record(
        folder, 1, 1700000000000200, op_name="dense/fused", op_type="_FusedMatMul",
        origin=["dense/MatMul", "dense/BiasAdd"], created_at="train.py:12", kind="inf_nan",
        dtype="DT_FLOAT16", model_id=1, step=0,
    )  # fmt: skip
    return root


def test_lists_the_first_overflow_and_writes_the_fix_beside_the_dump(
    capsys: pytest.CaptureFixture[str], dump: Path
) -> None:
    code, out, err = overflow(capsys, str(dump))
    assert (code, err) == (0, "")
    for line in (
        "[_FusedMatMul][1] dense/fused",
        " - [AI Core][Status:32][TaskId:1] ['floating-point compute overflow']",
        " - First overflow file timestamp [1700000000000200] -",
        " Input 0 [Shape: (2,)] [Dtype: float16] [Max: 400] [Min: 300] [Mean: 350]",
        " Output 0 [Shape: (2,)] [Dtype: float16] [Max: inf] [Min: 65504] [Mean: inf] [+Inf: 1] [±65504: 1]",
        " Your graph: dense/MatMul, dense/BiasAdd [node dense/fused (_FusedMatMul); made by matmul_biasadd; outputs carry dense/BiasAdd:0]",
        " Created at: train.py:12",
        "  or: create dense/MatMul, dense/BiasAdd at train.py:12 under `with npu_scope.keep_dtype_scope():`",
        "Shown 1 of 2 overflow record(s), earliest first: fix the first, later ones usually follow from it; -n 2 lists all.",
        f"Mixlist: {dump / 'overflow_mixlist.json'} (use it: modify_mixlist=",
    ):
        assert line in out, line
    assert "loss/Exp" not in out
    summaries = sorted(p.name for p in dump.glob("overflow_summary_*.txt"))
    assert len(summaries) == 1 and len(summaries[0]) == len("overflow_summary_20240101000000.txt")
    assert f"Summary: {dump / summaries[0]}" in out
    edits = Mixlist.load(dump / "overflow_mixlist.json")
    assert edits.added == (("MatMul", PrecisionClass.DENY),)


def test_n_and_out(capsys: pytest.CaptureFixture[str], dump: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "report" / "new"
    code, out, _ = overflow(capsys, str(dump), "-n", "5", "--out", str(out_dir))
    assert code == 0
    assert out.index("[_FusedMatMul][1] dense/fused") < out.index("[Exp][2] loss/Exp")
    assert "Shown 2 of 2 overflow record(s)" in out and "lists all" not in out
    assert json.loads((out_dir / "overflow_mixlist.json").read_text()) == {
        "black-list": {"to-add": ["MatMul", "Exp"]}
    }
    summary = next(out_dir.glob("overflow_summary_*.txt")).read_text()
    assert summary.startswith(
        "==============================[1]==============================\n [AI Core][TaskId:1][StreamId:0][Status:32]\n"
    )
    assert (
        "==============================[2]==============================\n [AI Core][TaskId:2][StreamId:0][Status:32]\n"
        in summary
    )
    assert not list(dump.glob("overflow_*"))


def test_json(capsys: pytest.CaptureFixture[str], dump: Path) -> None:
    code, out, _ = overflow(capsys, str(dump), "--json")
    assert code == 0
    data = json.loads(out)
    assert [o["op_name"] for o in data["overflows"]] == ["dense/fused"]
    assert data["overflows"][0]["node"]["original_op_names"] == ["dense/MatMul", "dense/BiasAdd"]
    assert data["overflows"][0]["tensors"][1]["max"] == "inf"
    assert data["mixlist"] == {"black-list": {"to-add": ["MatMul"]}}
    assert data["files"]["mixlist"] == str(dump / "overflow_mixlist.json")


def test_no_overflow_found_is_exit_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = overflow(capsys, str(tmp_path))
    assert (code, err) == (0, "")
    assert (
        out
        == f"no overflow found in {tmp_path}: no Opdebug record (the device writes none when nothing overflowed)\n"
    )
    code, out, _ = overflow(capsys, str(tmp_path), "--json")
    assert code == 0
    assert json.loads(out)["overflows"] == [] and json.loads(out)["files"] == {
        "summary": None,
        "mixlist": None,
    }
    assert list(tmp_path.iterdir()) == []


def test_records_with_status_0_are_no_overflow(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record(tmp_path, 0, 1700000000000000, status=0)
    code, out, _ = overflow(capsys, str(tmp_path))
    assert code == 0
    assert (
        out == f"no overflow found in {tmp_path}: 1 Opdebug record(s), none with a status above 0\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-n", "0"], "-n 0: give how many overflowing ops to list, a number >= 1 (default 1: the first in execution order)"),
        (["-n", "-3"], "-n -3: give how many overflowing ops to list, a number >= 1 (default 1: the first in execution order)"),
    ],
)  # fmt: skip
def test_bad_n(
    capsys: pytest.CaptureFixture[str], dump: Path, argv: list[str], message: str
) -> None:
    code, out, err = overflow(capsys, str(dump), *argv)
    assert (code, out) == (2, "")
    assert err == f"tf2npu overflow: error: {message}\n"


def test_missing_dump_dir(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = overflow(capsys, str(tmp_path / "nope"))
    assert (code, out) == (2, "")
    assert err == (
        f"tf2npu overflow: error: DUMP_DIR {str(tmp_path / 'nope')!r} does not exist; give the "
        "dump_path of a run with enable_dump_debug=True (or precision_data/overflow/dump)\n"
    )


def test_a_file_instead_of_the_dump_dir(capsys: pytest.CaptureFixture[str], dump: Path) -> None:
    path = next((dump / STEP).glob("Opdebug*"))
    code, _, err = overflow(capsys, str(path))
    assert code == 2
    assert err == (
        f"tf2npu overflow: error: DUMP_DIR {str(path)!r} is a file, not a folder; give the "
        f"folder that holds it: {str(path.parent)!r}\n"
    )


def test_a_tensor_dump_is_not_an_overflow_dump(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    np.save(
        tmp_path / NpuFileName("Add", "add", 0, 0, 1700000000000000).tensor("output", 0), np.ones(2)
    )
    code, _, err = overflow(capsys, str(tmp_path))
    assert code == 2
    assert (
        f"DUMP_DIR {str(tmp_path)!r} holds 1 tensor dump file(s) but no Opdebug record: it is a tensor dump (enable_dump)"
        in err
    )


def test_a_raw_record_tf2npu_cannot_parse_is_named_with_the_way_out(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A device record in the protobuf layout (here: bytes of no TLV layout) needs CANN."""
    path = tmp_path / "Opdebug.Node_OpDebug.0.3.1673383728094391.4.1.0.0"
    path.write_bytes(b"\x00")
    code, _, err = overflow(capsys, str(tmp_path))
    assert code == 2
    assert " ".join(err.split()) == (
        f"tf2npu overflow: error: overflow record {str(path)!r} is not a raw Opdebug record "
        f"tf2npu can read ({path}: 1 bytes, too short for a raw dump file); a device record in "
        "the protobuf layout needs CANN to parse: convert it with `msaccucmp.py convert -d FILE "
        "-out DIR` where CANN is installed and give DIR, or remove the broken file"
    )


def test_a_broken_record(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / opdebug_name(0, 0, 1700000000000000)).write_text("[]")
    code, _, err = overflow(capsys, str(tmp_path))
    assert code == 2
    assert "is not an Opdebug record" in err and "Traceback" not in err


def test_out_that_is_a_file(capsys: pytest.CaptureFixture[str], dump: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("")
    code, out, err = overflow(capsys, str(dump), "--out", str(blocker))
    assert (code, out) == (2, "")
    assert err == f"tf2npu overflow: error: --out {str(blocker)!r} is a file; give a folder\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_dump_dir_asks_for_out(capsys: pytest.CaptureFixture[str], dump: Path) -> None:
    dump.chmod(0o555)
    try:
        code, _, err = overflow(capsys, str(dump))
    finally:
        dump.chmod(0o755)
    assert code == 2
    assert "DUMP_DIR (no --out given)" in err and "give a folder you can write to" in err


def test_help_teaches(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["overflow", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tf2npu overflow [-h] [-n N] [--out DIR] [--json] DUMP_DIR\n")
    for text in (
        "enable_dump_debug=True",
        "keep_dtype_scope",
        "overflow_mixlist.json",
        "exit codes: 0",
        "docs/overflow.md",
    ):
        assert text in out
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "tf2npu overflow DUMP" in capsys.readouterr().out


# -- hostile input: no hang, no wrong "first", nothing of the user's replaced ----------------

OUTPUT = NpuFileName("_FusedMatMul", "dense_fused", 1, 0, 1700000000000100).tensor("output", 0)
FIRST = opdebug_name(1, 0, 1700000000000200)
RAW_FIRST = FIRST.removesuffix(".output.0.json")
"""The same record as the device's raw file: read instead of the converted one."""


def _swap(path: Path, make: Any) -> None:
    path.unlink()
    make(path)


@pytest.mark.parametrize(
    ("damage", "code", "message"),
    [
        (lambda d: _swap(d / STEP / OUTPUT, os.mkfifo), 0, f"{OUTPUT} cannot be read as .npy: a FIFO, not a regular file"),
        (lambda d: _swap(d / STEP / OUTPUT, lambda p: p.symlink_to("/dev/zero")), 0, f"{OUTPUT} cannot be read as .npy: a character device, not a regular file"),
        (lambda d: _swap(d / STEP / FIRST, os.mkfifo), 2, f"tf2npu overflow: error: overflow record '{{dump}}/{STEP}/{FIRST}' cannot be read (a FIFO, not a regular file); make it a readable file"),
        (lambda d: os.mkfifo(d / STEP / RAW_FIRST), 2, f"tf2npu overflow: error: overflow record '{{dump}}/{STEP}/{RAW_FIRST}' cannot be read (a FIFO, not a regular file); make it a readable file"),
        (lambda d: (d / STEP / FIRST).write_text("[" * 100_000), 2, f"tf2npu overflow: error: overflow record '{{dump}}/{STEP}/{FIRST}' cannot be read as JSON (overflow record '{{dump}}/{STEP}/{FIRST}': the JSON nests too deep"),
    ],
    ids=["fifo-tensor", "dev-zero-tensor", "fifo-record", "fifo-raw-record", "deep-record"],
)  # fmt: skip
def test_hostile_dumps(dump: Path, damage: Any, code: int, message: str) -> None:
    damage(dump)
    ended = run_tf2npu(["overflow", str(dump)], dump.parent, timeout=60)
    assert (ended.code, ended.left, ended.traceback) == (code, (), False), ended.err
    assert message.format(dump=dump) in " ".join((ended.out + ended.err).split())


def test_a_hand_merged_mixlist_is_never_replaced(
    capsys: pytest.CaptureFixture[str], dump: Path
) -> None:
    mine = '{"black-list": {"to-add": ["Exp", "MatMul"]}}\n'
    (dump / "overflow_mixlist.json").write_text(mine)
    code, out, _ = overflow(capsys, str(dump))
    assert code == 0
    assert (dump / "overflow_mixlist.json").read_text() == mine
    assert f"Mixlist: {dump / 'overflow_mixlist_1.json'}" in out
    assert Mixlist.load(dump / "overflow_mixlist_1.json").added == (
        ("MatMul", PrecisionClass.DENY),
    )
    code, out, _ = overflow(capsys, str(dump))  # the same analysis again: the same file
    assert f"Mixlist: {dump / 'overflow_mixlist_1.json'}" in out
    assert sorted(p.name for p in dump.glob("overflow_mixlist*")) == [
        "overflow_mixlist.json",
        "overflow_mixlist_1.json",
    ]


@pytest.mark.parametrize(
    ("hide", "message"),
    [
        (STEP, "tf2npu overflow: error: DUMP_DIR 'ovf': cannot read the folder '{step}' (Permission denied); make it readable (chmod u+rx) or give a folder without it: its files would be left out\n"),
        (STEP / FIRST, "tf2npu overflow: error: overflow record '{step}/" + FIRST + "' cannot be read (Permission denied); make it a readable file (chmod a+r, or copy the record out of the FIFO/device it is), then run tf2npu overflow again: skipping it could name a later overflow as the first\n"),
    ],
    ids=["step-folder", "record"],
)  # fmt: skip
def test_what_nobody_can_read_is_named_not_skipped(hide: Path, message: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to run the case as nobody (root reads a mode-000 file)")
    root = Path(tempfile.mkdtemp(prefix="tf2npu-sweep-"))
    try:
        _make_dump(root / "ovf")
        subprocess.run(["chmod", "-R", "a+rwX", str(root)], check=True)
        (root / "ovf" / hide).chmod(0)
        code, err = as_nobody(root, ["overflow", "ovf"])
        assert (code, err) == (2, message.format(step=Path("ovf", STEP)))
        assert not list(root.glob("ovf/overflow_*"))
    finally:
        subprocess.run(["chmod", "-R", "u+rwX", str(root)], check=True)
        shutil.rmtree(root)

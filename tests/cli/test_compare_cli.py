"""``tf2npu compare`` end to end: outputs, the summary, exit codes, usage errors."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tf2npu.cli import compare as compare_cli
from tf2npu.cli.main import main
from tf2npu.debug.compare.metrics import ALGORITHMS
from tf2npu.debug.compare.tolerance import DEFAULTS
from tf2npu.testing.dumptrees import (
    graph_json_path,
    write_dense_golden,
    write_fused_npu,
    write_golden,
    write_unfused_npu,
)
from tf2npu.testing.hostile import as_nobody, run_tf2npu

BROKEN = [[4.0, -0.5]]


def compare(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["compare", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def trees(tmp_path: Path) -> Path:
    """``npu`` (fusion on, float16, the fused op wrong), ``ok`` (fusion on, right), ``swapped``
    (the fused op's outputs swapped: cosine far below 0.99), ``off`` (fusion off), ``golden``
    (float32)."""
    write_fused_npu(tmp_path / "npu", fused=BROKEN)
    write_fused_npu(tmp_path / "ok")
    write_fused_npu(tmp_path / "swapped", fused=[[-0.5, 3.5]])
    write_unfused_npu(tmp_path / "off")
    write_dense_golden(tmp_path / "golden")
    return tmp_path


def test_a_failing_tensor_exits_1_and_the_summary_names_the_first_divergent_op(
    capsys: pytest.CaptureFixture[str], trees: Path
) -> None:
    code, out, err = compare(
        capsys, str(trees / "npu"), str(trees / "golden"), "--out", str(trees / "out")
    )
    assert (code, err) == (1, "")
    [csv_path] = (trees / "out").glob("result_*.csv")
    assert re.fullmatch(r"result_\d{14}\.csv", csv_path.name)
    lines = out.splitlines()
    assert lines[0] == "tf2npu compare npu-vs-golden, 1 unit, step 0"
    assert lines[3].startswith("7 rows: 7 compared (4 pass, 3 fail), 0 unmatched, 0 unreadable; ")
    assert lines[4] == (
        "First divergent op: Index 2 dense/fused (FusedMatMul), user ops dense/MatMul, "
        "dense/BiasAdd, made by fusion pass MatMulBiasAddFusionPass"
    )
    assert lines[5] == (
        "  fail dense/fused:output:0: 1 of 2 elements outside 0.01 + 0.01·|truth| (float16 "
        "default); worst at [0, 0]: 4 vs 3.5"
    )
    assert lines[6] == "  inputs: 1 agree"
    assert "Failed tensors" in out and "dense/Relu:output:0" in out
    assert lines[-1] == f"CSV: {csv_path}"


def test_html_writes_the_page_and_the_summary_names_it(
    capsys: pytest.CaptureFixture[str], trees: Path
) -> None:
    page = trees / "pages" / "compare.html"
    code, out, _ = compare(
        capsys, str(trees / "npu"), str(trees / "golden"), "--out", str(trees / "out"),
        "--html", str(page),
    )  # fmt: skip
    assert code == 1
    assert out.splitlines()[-1] == f"HTML: {page}"
    text = page.read_text(encoding="utf-8")
    assert "<title>tf2npu compare: 3 fail</title>" in text and "MatMulBiasAddFusionPass" in text


def test_an_html_that_cannot_be_written_is_a_usage_error_before_any_work(
    capsys: pytest.CaptureFixture[str], trees: Path
) -> None:
    code, out, err = compare(
        capsys, str(trees / "npu"), str(trees / "golden"), "--out", str(trees / "out"),
        "--html", str(trees),
    )  # fmt: skip
    assert (code, out) == (2, "")
    assert f"--html {str(trees)!r} is a folder; give a file name, e.g. compare.html" in err
    assert not list((trees / "out").glob("result_*.csv"))


def test_all_passing_exits_0(capsys: pytest.CaptureFixture[str], trees: Path) -> None:
    code, out, _ = compare(capsys, str(trees / "ok"), str(trees / "golden"), "--out", str(trees))
    assert code == 0
    assert "First divergent op: none: no tensor fails" in out
    assert "Failed tensors" not in out


def test_seed_001_fusion_on_against_off(capsys: pytest.CaptureFixture[str], trees: Path) -> None:
    code, out, _ = compare(capsys, str(trees / "npu"), str(trees / "off"), "--out", str(trees))
    assert code == 1
    assert "tf2npu compare npu-vs-npu" in out
    assert "First divergent op: Index 2 dense/fused (FusedMatMul)" in out


def test_csv_columns_and_algorithm_choice(capsys: pytest.CaptureFixture[str], trees: Path) -> None:
    code, _, _ = compare(
        capsys, str(trees / "npu"), str(trees / "golden"), "--out", str(trees / "o"),
        "--alg", "MaxAbsoluteError,0", "--overflow-detection",
    )  # fmt: skip
    assert code == 1
    [path] = (trees / "o").iterdir()
    header = next(csv.reader(path.open(newline="", encoding="utf-8")))
    assert header == [
        "Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType",
        "TensorIndex", "Shape", "OverFlow", "MaxAbsoluteError", "CosineSimilarity",
        "CompareFailReason", "Verdict", "Reason", "RequiredTolerance",
    ]  # fmt: skip


def test_tolerance_flags_can_let_a_tensor_pass(
    capsys: pytest.CaptureFixture[str], trees: Path
) -> None:
    argv = [str(trees / "npu"), str(trees / "golden"), "--out", str(trees), "--json"]
    code, out, _ = compare(capsys, *argv, "--tolerance", "dense/*=0.5,0")
    assert code == 0
    data = json.loads(out)
    assert data["totals"]["fail"] == 0
    fused = [
        t
        for u in data["units"]
        for t in u["tensors"]
        if t["tensor_index"] == "dense/fused:output:0"
    ]
    assert fused[0]["tolerance"]["source"] == "--tolerance 'dense/*=0.5,0'"
    # the later rule wins
    code, _, _ = compare(capsys, *argv, "--tolerance", "dense/*=0.5,0", "--tolerance", "*=0,0")
    assert code == 1


def test_json_replaces_the_summary(capsys: pytest.CaptureFixture[str], trees: Path) -> None:
    code, out, err = compare(
        capsys, str(trees / "npu"), str(trees / "golden"), "--json", "--out", str(trees / "j")
    )
    assert (code, err) == (1, "")
    data = json.loads(out)
    assert data["schema"] == "tf2npu.compare/1"
    assert data["first_divergence"]["op"] == "dense/fused"
    assert data["csv"] == [str(p) for p in (trees / "j").glob("result_*.csv")]


@pytest.mark.parametrize(
    ("tree", "exit_code", "detection", "index"),
    [
        ("swapped", 1, "Global Consistency", "2"),
        ("ok", 0, "Global Consistency", "NA"),
        # one element 14% off still has a cosine of 0.9998: the vendor's check passes it
        ("npu", 1, "Global Consistency", "NA"),
    ],
)
def test_advisor_writes_its_summary(
    capsys: pytest.CaptureFixture[str],
    trees: Path,
    tree: str,
    exit_code: int,
    detection: str,
    index: str,
) -> None:
    out_dir = trees / f"adv_{tree}"
    code, out, _ = compare(
        capsys, str(trees / tree), str(trees / "golden"), "--advisor", "--out", str(out_dir)
    )
    assert code == exit_code
    summary = (out_dir / "advisor_summary.txt").read_text().splitlines()
    assert summary[:2] == [f"Detection Type: {detection}", f"Operator Index: {index}"]
    assert f"Advisor: {detection}, Operator Index {index}: " in out
    [path] = out_dir.glob("result_*.csv")
    assert "OverFlow" in next(csv.reader(path.open(newline="", encoding="utf-8")))


def test_advisor_reports_an_fp16_overflow_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write_fused_npu(tmp_path / "npu", fused=[[65504.0, -0.5]])
    write_dense_golden(tmp_path / "golden")
    compare(
        capsys, str(tmp_path / "npu"), str(tmp_path / "golden"), "--advisor", "--out", str(tmp_path)
    )
    assert (tmp_path / "advisor_summary.txt").read_text() == (
        "Detection Type: FP16 Overflow\nOperator Index: 2\nExpert Advice: Float16 data overflow "
        "occurs. Rectify the fault and perform comparison again.\n"
    )


def test_advisor_finds_an_inconsistent_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write_fused_npu(tmp_path / "npu")
    golden = write_dense_golden(tmp_path / "golden")
    [x] = golden.glob("x.0.*.npy")
    np.save(x, np.array([[2.0, -1.0]], np.float32))
    compare(
        capsys, str(tmp_path / "npu"), str(tmp_path / "golden"), "--advisor", "--out", str(tmp_path)
    )
    lines = (tmp_path / "advisor_summary.txt").read_text().splitlines()
    assert lines[:2] == ["Detection Type: Input Inconsistent", "Operator Index: 0"]


# -- usage errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing", "golden"], "tf2npu compare: error: NPU_DUMP '{root}/missing' does not exist; give the folder"),
        (["npu", "empty"], "tf2npu compare: error: GOLDEN_DUMP '{root}/empty': no dump files found; expected"),
        (["npu", "golden", "--alg", "0,cos"], "tf2npu compare: error: --alg '0,cos': 'cos' is no algorithm; give all"),
        (["npu", "golden", "--tolerance", "dense"], "tf2npu compare: error: --tolerance 'dense': give PATTERN=ATOL,RTOL"),
        (["npu", "other"], "tf2npu compare: error: no tensor of NPU_DUMP '{root}/npu' (7 tensors) has a counterpart"),
        (["npu", "golden", "-f", "nope.json"], "tf2npu compare: error: -f '{root}/nope.json' is not a file; give a graph JSON file"),
        (["npu", "golden", "--out", "blocker/out"], "tf2npu compare: error: --out '{root}/blocker/out' cannot be created"),
    ],
)  # fmt: skip
def test_usage_errors_exit_2_with_one_message(
    capsys: pytest.CaptureFixture[str], trees: Path, argv: list[str], message: str
) -> None:
    (trees / "empty").mkdir()
    (trees / "blocker").write_text("a file")
    write_golden(trees / "other", "unrelated", 0, np.ones(2))
    paths = [
        str(trees / a) if i < 2 or argv[i - 1] in ("-f", "--out") else a for i, a in enumerate(argv)
    ]
    code, out, err = compare(capsys, *paths)
    assert (code, out) == (2, "")
    assert err.startswith(message.format(root=trees))
    assert len(err.strip().splitlines()) == 1
    assert not list(trees.glob("**/result_*.csv"))


def test_help_teaches_with_the_seed_001_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["compare", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: tf2npu compare [-h] [-f GRAPH_JSON]")
    assert "tf2npu compare dump_on dump_off" in text
    assert "--fusion-switch-file fusion_off.cfg" in text
    for i, name in enumerate(ALGORITHMS):
        assert f"{i} {name}" in " ".join(compare_cli.EPILOG.split())
    assert (
        "exit codes: 0 every tensor read and none fails its tolerance; 1 some tensor fails or cannot be read"
        in " ".join(text.split())
    )


def test_the_tolerances_in_the_help_are_the_defaults() -> None:
    listed = re.findall(r"(b?float\d+) ([0-9.e-]+) \+ ([0-9.e-]+)", compare_cli.EPILOG)
    assert {dtype: (float(a), float(r)) for dtype, a, r in listed} == {
        dtype: (t.atol, t.rtol) for dtype, t in DEFAULTS.items()
    }


@pytest.mark.slow
def test_the_command_line_does_not_import_numpy_until_compare_runs() -> None:
    code = "import sys, tf2npu.cli.main; print('numpy' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(Path(compare_cli.__file__).parents[2])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout == "False\n"


# -- hostile input: exit 0 only for "compared and agreed", no hang, nothing replaced ----------

NPU_STEP = "npu/20260101120000/0/GeOp1_0_1/1/0"
RELU = "Relu.dense_Relu.3.0.1700000000000000"
"""The ReLU's raw file in the NPU step folder (``write_fused_npu``)."""


def _all_npu_tensors_damaged(root: Path) -> None:
    for path in (root / NPU_STEP).iterdir():
        path.write_bytes(b"not a raw dump file")


def _fifo_as_tensor(root: Path) -> None:
    """The ReLU's output as a converted .npy that is a FIFO."""
    (root / NPU_STEP / RELU).unlink()
    os.mkfifo(root / NPU_STEP / f"{RELU}.output.0.npy")


def _dev_zero_as_tensor(root: Path) -> None:
    (root / NPU_STEP / RELU).unlink()
    (root / NPU_STEP / f"{RELU}.output.0.npy").symlink_to("/dev/zero")


def _fifo_as_raw_file(root: Path) -> None:
    """A raw device file (one op's tensors, no extension) that is a FIFO: not "unmatched"."""
    (root / NPU_STEP / RELU).unlink()
    os.mkfifo(root / NPU_STEP / RELU)


def _deep_graph_json(root: Path) -> None:
    graph_json_path(root / NPU_STEP).write_text("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize(
    ("damage", "code", "message"),
    [
        (_all_npu_tensors_damaged, 2, "tf2npu compare: error: NPU_DUMP 'npu': its device dump files are not in the TLV layout tf2npu reads (e.g. 'Cast.x_cast.1.0.1700000000000000': the protobuf layout, or no tensor in it)"),
        (_fifo_as_tensor, 1, "First divergent op: none found, but 1 tensor could not be read"),
        (_dev_zero_as_tensor, 1, "First divergent op: none found, but 1 tensor could not be read"),
        (_fifo_as_raw_file, 1, "First divergent op: none found, but 1 tensor could not be read"),
        (_deep_graph_json, 2, "tf2npu compare: error: graph JSON '{graph}' cannot be read as a graph JSON ({graph}: the JSON nests too deep"),
    ],
    ids=["all-unreadable", "fifo", "dev-zero", "fifo-raw", "deep-graph-json"],
)  # fmt: skip
def test_hostile_dumps_never_pass(tmp_path: Path, damage: Any, code: int, message: str) -> None:
    write_fused_npu(tmp_path / "npu")
    write_dense_golden(tmp_path / "golden")
    damage(tmp_path)
    ended = run_tf2npu(["compare", "npu", "golden", "--out", "cmp"], tmp_path, timeout=60)
    assert (ended.code, ended.left, ended.traceback) == (code, (), False), ended.err
    text = " ".join((ended.out + ended.err).split())
    assert message.format(graph=graph_json_path(tmp_path / NPU_STEP)) in text
    assert len(list(tmp_path.glob("cmp/result_*.csv"))) == (1 if code == 1 else 0)


def test_an_unreadable_dump_folder_is_named_not_skipped(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to run the case as nobody (root reads a mode-000 folder)")
    root = Path(tempfile.mkdtemp(prefix="tf2npu-sweep-"))
    try:
        write_fused_npu(root / "npu")
        write_fused_npu(root / "npu" / "second", step=1)
        write_dense_golden(root / "golden")
        subprocess.run(["chmod", "-R", "a+rwX", str(root)], check=True)
        hidden = root / "npu" / "second"
        hidden.chmod(0)
        code, err = as_nobody(root, ["compare", "npu", "golden", "--out", "cmp"])
        assert code == 2, err
        assert err == (
            "tf2npu compare: error: NPU_DUMP 'npu': cannot read the folder "
            f"'{hidden}' (Permission denied); make it readable (chmod u+rx) or give a folder "
            "without it: its files would be left out\n"
        )
        assert not list(root.glob("cmp/result_*.csv"))
    finally:
        subprocess.run(["chmod", "-R", "u+rwX", str(root)], check=True)
        shutil.rmtree(root)


def test_two_compares_in_one_second_keep_both_csvs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, trees: Path
) -> None:
    monkeypatch.setattr(time, "strftime", lambda _format: "20261202060000")
    (trees / "cmp").mkdir()
    (trees / "cmp" / "result_20261202060000.csv").write_text("an earlier compare")
    for _ in range(2):
        code, _out, _err = compare(
            capsys, str(trees / "npu"), str(trees / "golden"), "--out", str(trees / "cmp")
        )
        assert code == 1
    names = sorted(p.name for p in (trees / "cmp").iterdir())
    assert names == [
        "result_20261202060000.csv",
        "result_20261202060000_1.csv",
        "result_20261202060000_2.csv",
    ]
    assert (trees / "cmp" / "result_20261202060000.csv").read_text() == "an earlier compare"
    assert (trees / "cmp" / "result_20261202060000_2.csv").read_text().startswith("Index,")

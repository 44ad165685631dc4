"""msaccucmp (mindstudio-probe 26.2.0, the vendor's own ``msaccucmp.py``) reads what
``tf2npu run`` dumps, and its numbers agree with ``tf2npu compare`` on every tensor both compute.

Tolerance: msaccucmp computes in float32 and prints 6 decimals, we compute in float64; a value
agrees when ``|vendor - ours| <= 2e-6 + 1e-4 * |vendor|``.
"""

from __future__ import annotations

import csv
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tf2npu.artifacts import dump as dumpfile
from tf2npu.testing.scripts import DENSE_TRAINING

EXE = Path(sys.executable).with_name("tf2npu")
METRICS = (
    "CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError",
    "RelativeEuclideanDistance", "KullbackLeiblerDivergence", "MeanAbsoluteError",
    "RootMeanSquareError", "MaxRelativeError", "MeanRelativeError",
)  # fmt: skip
ABS, REL = 2e-6, 1e-4


def tf2npu(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, cwd=cwd, timeout=600, env=env
    )


def rows(folder: Path) -> dict[str, dict[str, str]]:
    """The CSV rows of the one result file in ``folder``, by ``TensorIndex`` (op name for an
    op without a dump file). Both tools write two ``DataType`` columns: the first is kept."""
    [path] = sorted(folder.glob("*.csv"))
    with path.open(newline="", encoding="utf-8") as stream:
        reader = csv.reader(stream)
        header = next(reader)
        found = {}
        for cells in reader:
            row = {}
            for name, cell in zip(header, cells, strict=False):
                row.setdefault(name, cell)
            key = row["TensorIndex"] if row["TensorIndex"] != "NaN" else row["NPUDump"]
            found[key] = row
    return found


def number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mixed-precision NPU dump (inputs and outputs, step 1) and a golden dump of one script."""
    root = tmp_path_factory.mktemp("interop")
    (root / "train.py").write_text(DENSE_TRAINING)
    npu = tf2npu(
        "run", "--dump", "npu", "--dump-step", "1", "--dump-mode", "all",
        "--option", "precision_mode=allow_mix_precision", "--report-dir", "r1", "train.py",
        cwd=root,
    )  # fmt: skip
    assert npu.returncode == 0, npu.stderr
    golden = tf2npu(
        "run", "--no-npu", "--dump", "golden", "--report-dir", "r2", "train.py", cwd=root
    )
    assert golden.returncode == 0, golden.stderr
    return root


@pytest.mark.tf
@pytest.mark.slow
def test_msaccucmp_reads_every_raw_file_and_agrees_with_tf2npu_compare(vendor, dumps) -> None:
    [step] = [d for d in dumpfile.find_step_dirs(dumps / "npu") if d.step == 1]
    assert step.graph_json is not None
    golden = dumps / "golden" / str(step.model_id) / "1"
    args = ("-m", str(step.path), "-g", str(golden), "-f", str(step.graph_json))
    done = vendor.msaccucmp_run("compare", *args, "-out", str(dumps / "vendor"), cwd=dumps)
    # 2: msaccucmp's MSACCUCMP_NO_DUMP_FILE_ERROR, for the graph's ops that have no dump file
    # (variables, NoOps), as on the device
    assert done.returncode in (0, 2), done.stdout[-3000:]
    log = done.stdout + done.stderr
    assert "is invalid, only supports" not in log and "Failed to parse" not in log
    read = {
        line.split("['", 1)[1].split("'")[0] for line in log.splitlines() if "[Offline] ['" in line
    }
    assert {Path(p).name for p in read} == set(step.files())  # every raw file, parsed
    ours = tf2npu(
        "compare", str(step.path), str(golden), "-f", str(step.graph_json), "--out", "ours",
        cwd=dumps,
    )  # fmt: skip
    assert ours.returncode in (0, 1), ours.stderr
    theirs, mine = rows(dumps / "vendor"), rows(dumps / "ours")
    common = sorted(set(theirs) & set(mine))
    compared = 0
    disagree = []
    for key in common:
        for metric in METRICS:
            a, b = number(theirs[key][metric]), number(mine[key][metric])
            if a is None or b is None or math.isnan(a) or math.isnan(b):
                if (a is None or math.isnan(a)) != (b is None or math.isnan(b)):
                    disagree.append((key, metric, theirs[key][metric], mine[key][metric]))
                continue
            compared += 1
            if abs(a - b) > ABS + REL * abs(a):
                disagree.append((key, metric, theirs[key][metric], mine[key][metric]))
        for column in ("Index", "OpType", "DataType"):
            # without a ground truth msaccucmp writes DataType NaN; we keep the NPU tensor's
            # (on purpose: docs/dumps.md)
            if column == "DataType" and theirs[key][column] == "NaN":
                continue
            if theirs[key][column] != mine[key][column]:
                disagree.append((key, column, theirs[key][column], mine[key][column]))
    # msaccucmp 26.2.0 types an empty tensor float64 (its np.array([])), whatever it held
    disagree = [d for d in disagree if d[1:] != ("DataType", "float64", "int32")]
    assert disagree == []
    # every tensor of the model is in both CSVs, fused and float16 ones included (measured:
    # 52 tensors, 429 values, 2026-12-02)
    assert len(common) >= 50 and compared >= 400, (len(common), compared)
    assert theirs["gradients/Shape:output:0"]["CosineSimilarity"] == "1.0"  # an empty tensor
    assert mine["gradients/Shape:output:0"]["CosineSimilarity"] == "1.0"


@pytest.mark.tf
@pytest.mark.slow
def test_msaccucmp_batch_mode_takes_the_time_folder_and_the_graph_folder(vendor, dumps) -> None:
    [time_dir] = [p for p in (dumps / "npu").iterdir() if p.name != dumpfile.GRAPH_DIR]
    graphs = dumps / "npu" / dumpfile.GRAPH_DIR / time_dir.name
    [step] = [d for d in dumpfile.find_step_dirs(dumps / "npu") if d.step == 1]
    golden = dumps / "golden" / str(step.model_id) / "1"
    out = dumps / "batch"
    args = ("-m", str(time_dir), "-g", str(golden), "-f", str(graphs), "-out", str(out))
    done = vendor.msaccucmp_run("compare", *args, cwd=dumps)
    assert done.returncode in (0, 2), done.stdout[-3000:]
    # one CSV per model: <device>_<model_name>_<step>_result_<time>.csv, the step the largest
    [result] = [p.name for p in out.glob("*.csv")]
    assert result.startswith(f"0_{step.model_name}_1_result_")


def test_bool_rows_are_msaccucmps(vendor, tmp_path: Path) -> None:
    """A hand-made raw dump (no TF): msaccucmp's and our rows of a bool tensor are the same,
    column for column (values, messages, Index, DataType)."""
    import numpy as np

    from tf2npu.artifacts import gegraph
    from tf2npu.artifacts.gegraph import GeGraph, GeOp, TensorDesc

    step = tmp_path / "npu" / "20260101120000" / "0" / "GeOp1_0_1" / "1" / "0"
    step.mkdir(parents=True)
    f32, b = TensorDesc("DT_FLOAT", (3,)), TensorDesc("DT_BOOL", (3,))
    ops = [
        GeOp("x", "Data", 0, output_desc=(f32,)),
        GeOp("gt", "Greater", 1, ("x:0", "x:0"), (f32, f32), (b,)),
        GeOp("all", "All", 2, ("gt:0",), (b,), (b,)),
    ]
    graph = dumpfile.model_graph_json(tmp_path / "npu", "20260101120000", "GeOp1_0_1")
    graph.parent.mkdir(parents=True)
    gegraph.dump(GeGraph("GeOp1_0_1", tuple(ops)), graph)
    x = np.array([1.0, -2.0, 3.0], np.float32)
    mask = np.array([True, False, True])
    dumpfile.write_nano(step / "Greater.gt.1.0.1700000000000001", [x, x], [mask])
    dumpfile.write_nano(step / "All.all.2.0.1700000000000002", [mask], [mask])
    golden = tmp_path / "golden"
    golden.mkdir()
    np.save(golden / "gt.0.1700000000000000.npy", np.array([True, True, True]))
    np.save(golden / "all.0.1700000000000000.npy", np.array([True, True, False]))
    args = ("-m", str(step), "-g", str(golden), "-f", str(graph))
    done = vendor.msaccucmp_run("compare", *args, "-out", str(tmp_path / "vendor"), cwd=tmp_path)
    assert done.returncode in (0, 2), done.stdout[-3000:]
    ours = tf2npu(
        "compare", str(step), str(golden), "-f", str(graph), "--out", "ours", cwd=tmp_path
    )
    assert ours.returncode in (0, 1), ours.stderr
    theirs, mine = rows(tmp_path / "vendor"), rows(tmp_path / "ours")
    columns = ("Index", "DataType", "Shape", *METRICS, "StandardDeviation", "CompareFailReason")
    for key in ("gt:output:0", "all:input:0", "all:output:0"):
        assert [mine[key][c] for c in columns] == [theirs[key][c] for c in columns], key
    assert theirs["gt:output:0"]["CosineSimilarity"] == "0.816497"


@pytest.mark.tf
@pytest.mark.slow
def test_the_advisor_and_overflow_column_agree_with_msaccucmps(vendor, dumps) -> None:
    """``-advisor`` (which turns on ``-overflow_detection``): the same advice, word for word,
    and the same ``OverFlow`` on every row both write."""
    [step] = [d for d in dumpfile.find_step_dirs(dumps / "npu") if d.step == 1]
    assert step.graph_json is not None
    golden = dumps / "golden" / str(step.model_id) / "1"
    args = (str(step.path), str(golden))
    out = dumps / "vendor_advisor"
    done = vendor.msaccucmp_run(
        "compare", "-m", args[0], "-g", args[1], "-f", str(step.graph_json), "-out", str(out),
        "-advisor", cwd=dumps,
    )  # fmt: skip
    assert done.returncode in (0, 2), done.stdout[-3000:]
    ours = tf2npu(
        "compare", *args, "-f", str(step.graph_json), "--out", "ours_advisor", "--advisor",
        cwd=dumps,
    )  # fmt: skip
    assert ours.returncode in (0, 1), ours.stderr
    advice = (out / "advisor_summary.txt").read_text()
    assert (dumps / "ours_advisor" / "advisor_summary.txt").read_text() == advice
    assert "Detection Type: Global Consistency" in advice
    theirs, mine = rows(out), rows(dumps / "ours_advisor")
    common = sorted(set(theirs) & set(mine))
    assert len(common) >= 50
    assert [mine[k]["OverFlow"] for k in common] == [theirs[k]["OverFlow"] for k in common]

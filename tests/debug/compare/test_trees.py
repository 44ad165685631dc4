"""Comparing trees: verdicts, float16 bounds, tolerances, the first divergent op, streaming."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tf2npu.artifacts.gegraph import GeOp, TensorDesc
from tf2npu.debug.compare.matching import TensorFile, TensorPair
from tf2npu.debug.compare.metrics import ALGORITHMS, CHUNK
from tf2npu.debug.compare.tolerance import Tolerances
from tf2npu.debug.compare.trees import (
    ERROR,
    FAIL,
    MMAP_MIN_BYTES,
    PASS,
    UNMATCHED,
    CompareReport,
    TensorDiff,
    compare_trees,
    diff_pair,
    read_npy,
)
from tf2npu.testing.dumptrees import (
    npu_step_dir,
    write_dense_golden,
    write_fused_npu,
    write_golden,
    write_graph,
    write_npu,
    write_unfused_npu,
)

BROKEN = [[4.0, -0.5]]
"""The fused op adds the bias twice to the first element: 3.0 + 0.5 + 0.5."""


def verdicts(report: CompareReport) -> list[tuple[str, str]]:
    return [(d.pair.tensor_index, d.verdict) for d in report.diffs()]


def by_index(report: CompareReport) -> dict[str, TensorDiff]:
    return {d.pair.tensor_index: d for d in report.diffs()}


def test_a_broken_fusion_is_the_first_divergent_op(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "npu", fused=BROKEN)
    write_dense_golden(tmp_path / "golden")
    report = compare_trees(tmp_path / "npu", tmp_path / "golden")
    assert verdicts(report) == [
        ("x:output:0", PASS),
        ("x_cast:input:0", PASS),
        ("x_cast:output:0", PASS),
        ("dense/fused:input:0", PASS),
        ("dense/fused:output:0", FAIL),
        ("dense/Relu:input:0", FAIL),
        ("dense/Relu:output:0", FAIL),
    ]
    assert not report
    assert report.counts() == {"pass": 4, "fail": 3, "unmatched": 0, "error": 0, "compared": 7}
    first = report.first_divergence()
    assert first is not None
    assert (first.op.name, first.inputs_agree, first.inputs_unknown) == ("dense/fused", 1, 0)
    assert [d.pair.tensor_index for d in first.failed] == ["dense/fused:output:0"]
    # the ReLU fails because its input does: it inherits the difference, it does not start one
    assert [d.op.name for d in report.divergences()] == ["dense/fused"]
    fused = by_index(report)["dense/fused:output:0"]
    assert fused.reason == (
        "1 of 2 elements outside 0.01 + 0.01·|truth| (float16 default); worst at [0, 0]: 4 vs 3.5"
    )
    assert fused.required == pytest.approx(0.5 - 0.01 * 3.5)
    assert fused.judged_as == "float16"
    assert (fused.left_dtype, fused.right_dtype, fused.shape) == ("float16", "float32", (1, 2))
    assert [m.name for m in fused.metrics] == list(ALGORITHMS)
    assert fused.metric("MaxAbsoluteError").text == "0.500000"
    assert not fused and by_index(report)["x:output:0"]


def test_a_correct_fusion_passes(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "npu")
    write_dense_golden(tmp_path / "golden")
    report = compare_trees(tmp_path / "npu", tmp_path / "golden")
    assert report and report.first_divergence() is None
    assert {d.verdict for d in report.diffs()} == {PASS}
    assert (
        by_index(report)["x:output:0"].reason == "within 1e-05 + 0.0001·|truth| (float32 default)"
    )


def test_with_outputs_only_inputs_are_judged_by_the_outputs_feeding_them(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "npu", fused=BROKEN, mode="output")
    write_dense_golden(tmp_path / "golden")
    first = compare_trees(tmp_path / "npu", tmp_path / "golden").first_divergence()
    assert first is not None
    assert (first.op.name, first.inputs_agree, first.inputs_unknown) == ("dense/fused", 1, 0)


def test_an_op_whose_own_input_dump_fails_is_not_where_the_difference_starts(tmp_path) -> None:
    folder = npu_step_dir(tmp_path / "npu")
    op = GeOp("relu", "Relu", 0, output_desc=(TensorDesc("DT_FLOAT"),))
    write_graph(folder, [op])
    write_npu(folder, op, {("input", 0): [5.0, -1.0], ("output", 0): [5.0, 0.0]})
    write_golden(tmp_path / "golden", "relu", 0, [1.0, 0.0])
    report = compare_trees(tmp_path / "npu", tmp_path / "golden")
    # the input has no golden counterpart (no producer in the graph): not judged
    assert verdicts(report) == [("relu:input:0", UNMATCHED), ("relu:output:0", FAIL)]
    first = report.first_divergence()
    assert first is not None and (first.inputs_agree, first.inputs_unknown) == (0, 1)


def test_npu_against_npu_finds_the_fused_op(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "on", fused=BROKEN, mode="output")
    write_unfused_npu(tmp_path / "off")
    report = compare_trees(tmp_path / "on", tmp_path / "off")
    first = report.first_divergence()
    assert first is not None and first.op.name == "dense/fused"
    assert by_index(report)["dense/fused:output:0"].judged_as == "float16"


# -- float16 bounds and tolerances ------------------------------------------------------------


def cast_back_tree(root: Path, *, graph: bool) -> None:
    """An NPU op computed in float16 whose output is cast back to float32, against float32."""
    folder = npu_step_dir(root / "npu")
    f16 = TensorDesc("DT_FLOAT16", (2,))
    ops = [
        GeOp("mul", "Mul", 0, (), (), (f16,)),
        GeOp("mul_cast", "Cast", 1, ("mul:0",), (f16,), (TensorDesc("DT_FLOAT", (2,), "mul", 0),)),
    ]
    if graph:
        write_graph(folder, ops)
    golden = np.array([0.1, 0.3], np.float32)
    write_npu(folder, ops[1], {("output", 0): golden.astype(np.float16).astype(np.float32)})
    write_golden(root / "golden", "mul" if graph else "mul_cast", 0, golden)


def test_a_float32_cast_of_a_float16_result_is_judged_as_float16(tmp_path: Path) -> None:
    cast_back_tree(tmp_path, graph=True)
    report = compare_trees(tmp_path / "npu", tmp_path / "golden")
    assert verdicts(report) == [("NaN", UNMATCHED), ("mul_cast:output:0", PASS)]
    diff = by_index(report)["mul_cast:output:0"]
    assert (diff.left_dtype, diff.judged_as) == ("float32", "float16")


def test_a_cast_back_whose_float16_producer_is_not_in_the_graph_is_judged_as_float16(
    tmp_path: Path,
) -> None:
    """The producer missing from the graph JSON (not dumped, e.g. a float16 op the CPU runs
    under another name): the Cast's own input_desc says float16."""
    folder = npu_step_dir(tmp_path / "npu")
    f16 = TensorDesc("DT_FLOAT16", (2,))
    cast = GeOp(
        "mul_cast", "Cast", 0, ("mul:0",), (f16,), (TensorDesc("DT_FLOAT", (2,), "mul", 0),)
    )
    write_graph(folder, [cast])
    golden = np.array([0.1, 0.3], np.float32)
    write_npu(folder, cast, {("output", 0): golden.astype(np.float16).astype(np.float32)})
    write_golden(tmp_path / "golden", "mul", 0, golden)
    diff = by_index(compare_trees(tmp_path / "npu", tmp_path / "golden"))["mul_cast:output:0"]
    assert (diff.judged_as, diff.verdict) == ("float16", PASS)


def test_without_the_graph_the_same_data_is_judged_by_float32_bounds(tmp_path: Path) -> None:
    cast_back_tree(tmp_path, graph=False)
    diff = next(compare_trees(tmp_path / "npu", tmp_path / "golden").diffs())
    assert (diff.judged_as, diff.verdict) == ("float32", FAIL)
    # fp16(0.3) = 0.2998046875: |diff| 1.95e-4 against 1e-5 + 1e-4 * 0.3
    assert diff.required == pytest.approx(
        abs(np.float32(0.3) - np.float16(0.3)) - 1e-4 * 0.3, rel=1e-6
    )
    tolerances = Tolerances.parse(["mul*=1e-3,0"])
    diff = next(compare_trees(tmp_path / "npu", tmp_path / "golden", tolerances=tolerances).diffs())
    assert diff.verdict == PASS
    assert diff.reason == "within 0.001 + 0·|truth| (--tolerance 'mul*=1e-3,0')"


def pair_of(tmp_path: Path, x, y, *, name: str = "op") -> TensorPair:
    files = []
    for side, value in (("x", x), ("y", y)):
        path = tmp_path / f"{side}.npy"
        np.save(path, np.asarray(value))
        files.append(TensorFile(path, (name,)))
    return TensorPair(0, "Add", name, f"{name}:output:0", "output", 0, (name,), *files)


def test_nan_on_one_side_fails_with_an_infinite_required_tolerance(tmp_path: Path) -> None:
    diff = diff_pair(pair_of(tmp_path, [[1.0, np.nan]], [[1.0, 2.0]]))
    assert (diff.verdict, diff.required) == (FAIL, math.inf)
    assert diff.reason == "1 of 2 elements NaN/Inf on one side only; first at [0, 1]: nan vs 2"
    diff = diff_pair(pair_of(tmp_path, [np.nan, np.inf], [np.nan, np.inf]))
    assert (diff.verdict, diff.required) == (PASS, 0.0)
    assert diff.reason.endswith("; NaN/Inf at the same places on both sides")


def test_different_sizes_fail_with_msaccucmps_message(tmp_path: Path) -> None:
    pair = pair_of(tmp_path, np.zeros((2, 3)), np.zeros(4))
    diff = diff_pair(pair)
    assert (diff.verdict, diff.reason) == (
        FAIL,
        "sizes differ: [2,3] has 6 elements, truth [4] 4",
    )
    assert diff.messages == (
        f"The my output dump data size (6) in {str(pair.left.path)!r} does not match the "
        f"ground truth dump data size (4) in {str(pair.right.path)!r}.",
    )
    assert all(m.text == "NaN" for m in diff.metrics)


def test_same_size_different_shapes_are_compared_in_order(tmp_path: Path) -> None:
    diff = diff_pair(pair_of(tmp_path, np.ones((2, 3)), np.ones((3, 2))))
    assert diff.verdict == PASS
    assert diff.reason.startswith("shapes differ ([2,3] vs [3,2]), compared element by element")


def test_integers_must_be_equal(tmp_path: Path) -> None:
    diff = diff_pair(pair_of(tmp_path, np.array([1, 2]), np.array([1, 3])))
    assert (diff.verdict, diff.judged_as, diff.tolerance.source) == (
        FAIL, None, "exact (not a float dtype)",
    )  # fmt: skip


def test_unreadable_files_are_errors_not_failures(tmp_path: Path) -> None:
    pair = pair_of(tmp_path, [1.0], [1.0])
    pair.left.path.write_bytes(b"garbage")
    diff = diff_pair(pair)
    assert (diff.verdict, bool(diff)) == (ERROR, True)
    assert diff.reason == f"cannot read {str(pair.left.path)!r}: not a .npy file (no NUMPY magic)"
    np.save(pair.left.path, np.array(["a", "b"]))
    assert diff_pair(pair).reason == "dtypes <U1 and float64: only numbers are compared"
    np.save(pair.left.path, np.array([{}], dtype=object))
    assert "Object arrays cannot be loaded" in diff_pair(pair).reason


def test_a_missing_counterpart_is_unmatched_with_nan_values(tmp_path: Path) -> None:
    pair = pair_of(tmp_path, [1.0], [1.0])
    unmatched = TensorPair(
        0, "Add", "op", "op:output:0", "output", 0, ("op",), pair.left, None, "why"
    )
    diff = diff_pair(unmatched, ("CosineSimilarity",))
    assert (diff.verdict, diff.reason, diff.messages) == (
        UNMATCHED,
        "no counterpart in the second tree",
        ("why",),
    )
    assert [m.text for m in diff.metrics] == ["NaN"]
    assert math.isnan(diff.required) and diff.bytes_read == 0


def test_overflow_detection_looks_at_float16_npu_tensors_only(tmp_path: Path) -> None:
    big = diff_pair(
        pair_of(tmp_path, np.array([1, 65504], np.float16), [1.0, 7e4]), overflow_detection=True
    )
    assert big.overflow == "YES"
    small = diff_pair(
        pair_of(tmp_path, np.array([1, 6e4], np.float16), [1.0, 6e4]), overflow_detection=True
    )
    assert small.overflow == "NO"
    wide = diff_pair(
        pair_of(tmp_path, np.array([1, 7e4], np.float32), [1.0, 7e4]), overflow_detection=True
    )
    assert wide.overflow == "NaN"
    assert diff_pair(pair_of(tmp_path, [1.0], [1.0])).overflow == ""
    late = np.zeros(3 * CHUNK, np.float16)
    late[-1] = -np.inf
    late[0] = np.nan
    diff = diff_pair(pair_of(tmp_path, late, late.astype(np.float32)), overflow_detection=True)
    assert diff.overflow == "YES"


# -- reading -------------------------------------------------------------------------------


def test_large_files_are_memory_mapped_and_compared_in_chunks(tmp_path: Path, monkeypatch) -> None:
    modes = []
    load = np.load

    def spy(*args, **kwargs):
        modes.append(kwargs.get("mmap_mode"))
        return load(*args, **kwargs)

    monkeypatch.setattr(np, "load", spy)
    values = np.linspace(-1, 1, MMAP_MIN_BYTES // 4 + 3, dtype=np.float32)
    other = values.copy()
    other[-1] += 1.0
    pair = pair_of(tmp_path, values, other)
    diff = diff_pair(pair, ("MaxAbsoluteError",))
    assert diff.metric("MaxAbsoluteError").text == "1.000000"
    assert diff.reason.endswith(
        f"worst at [{values.size - 1}]: {values[-1]:.6g} vs {other[-1]:.6g}"
    )
    assert diff.bytes_read == 2 * values.nbytes
    assert modes == ["r", "r"]


@pytest.mark.parametrize(
    "array",
    [
        np.arange(6, dtype=np.float16).reshape(2, 3),
        np.float32(3.5),
        np.zeros((0, 3)),
        np.arange(5, dtype=">i8"),
        np.array([True, False]),
        np.asfortranarray(np.arange(6.0).reshape(2, 3)),
    ],
)
def test_read_npy_reads_what_numpy_saves(tmp_path: Path, array) -> None:
    np.save(tmp_path / "a.npy", array)
    read = read_npy((tmp_path / "a.npy").read_bytes())
    assert (read.dtype, read.shape) == (array.dtype, array.shape)
    assert np.array_equal(read, array)


def test_read_npy_refuses_a_truncated_file(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(100.0))
    data = (tmp_path / "a.npy").read_bytes()[:-8]
    with pytest.raises(ValueError):
        read_npy(data)

"""run_summary.json's loss_scale object: one writer (the tracker), readers that never raise."""

from __future__ import annotations

import json

import pytest

from tf2npu.artifacts.run_summary import LossScale, Warmup, WarmupTracker


def track(*steps: tuple[float, bool]) -> Warmup | None:
    tracker = WarmupTracker()
    for scale, skipped in steps:
        tracker.step(scale, skipped=skipped)
    return tracker.warmup


def test_leading_skips_while_the_scale_comes_down_then_an_applied_step() -> None:
    warmup = track((2**31, True), (2**30, True), (2**30, True), (2**29, True), (2**29, False))
    assert warmup == Warmup(4, 2.0**31, 2.0**29)
    assert warmup.to_json() == {
        "skipped_steps": 4,
        "first_scale": 2147483648.0,
        "last_scale": 536870912.0,
    }


@pytest.mark.parametrize(
    "steps",
    [
        [(1024.0, False), (512.0, True), (512.0, False)],  # the first step was applied
        [(512.0, True), (256.0, True)],  # never ended: no step was applied
        [(512.0, True), (1024.0, True), (1024.0, False)],  # the scale rose while skipping
        [],
    ],
    ids=["applied_first", "never_ended", "rising", "no_steps"],
)
def test_no_warm_up(steps: list[tuple[float, bool]]) -> None:
    assert track(*steps) is None


def test_the_object_round_trips_through_json() -> None:
    written = LossScale(256.0, 6, Warmup(5, 16384.0, 512.0))
    text = json.dumps(written.to_json())
    assert text == (
        '{"scale": 256.0, "skipped_steps": 6, "warmup": '
        '{"skipped_steps": 5, "first_scale": 16384.0, "last_scale": 512.0}}'
    )
    read = LossScale.from_json(json.loads(text))
    assert read == written
    assert read is not None and read.skipped_after_warmup == 1
    assert LossScale(8.0, 0).to_json() == {"scale": 8.0, "skipped_steps": 0, "warmup": None}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ([], None),
        ({"scale": "1e3", "skipped_steps": True}, LossScale(None, 0)),
        ({"scale": 1e999, "skipped_steps": -4}, LossScale(None, 0)),
        ({"scale": 4, "skipped_steps": 2, "warmup": {"skipped_steps": 3, "first_scale": 8,
          "last_scale": 4}}, LossScale(4.0, 2)),
        ({"scale": 4, "skipped_steps": 2, "warmup": {"skipped_steps": 2, "first_scale": 8,
          "last_scale": "4"}}, LossScale(4.0, 2)),
    ],
    ids=["null", "list", "wrong_types", "out_of_range", "more_warmup_than_skips", "bad_field"],
)  # fmt: skip
def test_damaged_objects_read_as_absent_fields(value: object, expected: LossScale | None) -> None:
    assert LossScale.from_json(value) == expected


# -- precision ------------------------------------------------------------------------------------

ROW = {
    "op": "bert/l0/MatMul",
    "op_type": "MatMulV2",
    "tf_type": "MatMul",
    "dtype": "float16",
    "reason": "allow_list",
    "detail": "MatMul is in the allow list",
    "where": "train.py:41 in layer",
    "graph": 1,
}


def test_precision_row_round_trips_through_json() -> None:
    from tf2npu.artifacts.run_summary import PrecisionRow

    row = PrecisionRow.from_json(json.loads(json.dumps(ROW)))
    assert row == PrecisionRow(
        "bert/l0/MatMul", "MatMulV2", "MatMul", "float16", "allow_list",
        "MatMul is in the allow list", "train.py:41 in layer", 1,
    )  # fmt: skip
    assert row.to_json() == ROW
    assert row.lowered and row.reason_text == "allow list"


def test_precision_rows_skip_what_is_not_a_row() -> None:
    from tf2npu.artifacts.run_summary import PrecisionRow, precision_rows

    damaged = [ROW, {"dtype": "float16"}, {"op": "x", "dtype": 3}, "row", None]
    assert [r.op for r in precision_rows({"precision": damaged})] == ["bert/l0/MatMul"]
    assert precision_rows({}) == []  # a summary written before the key existed
    assert precision_rows({"precision": {"op": "x"}}) == []
    assert precision_rows([ROW]) == []
    # missing fields read as empty; a missing GE type falls back to the TF type
    row = PrecisionRow.from_json({"op": "a", "dtype": "float32", "tf_type": "Exp", "graph": -1})
    assert row == PrecisionRow("a", "Exp", "Exp", "float32", "", "", "", 0)
    assert not row.lowered
    assert PrecisionRow.from_json({"op": "a", "dtype": "float32", "reason": "new"}).reason_text == (
        "new"
    )


def test_read_summary_is_empty_without_a_summary_object(tmp_path) -> None:
    from tf2npu.artifacts.run_summary import SUMMARY_FILE, read_summary

    assert read_summary(tmp_path) == {}
    (tmp_path / SUMMARY_FILE).write_text("[1, 2]")
    assert read_summary(tmp_path) == {}
    (tmp_path / SUMMARY_FILE).write_text('{"exit_status": 3')
    assert read_summary(tmp_path) == {}
    (tmp_path / SUMMARY_FILE).write_text('{"exit_status": 3}')
    assert read_summary(tmp_path) == {"exit_status": 3}

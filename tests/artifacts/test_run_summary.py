"""run_summary.json's loss_scale object: one writer (the tracker), readers that never raise."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_read_summary_is_none_without_a_summary_object(tmp_path) -> None:
    from tf2npu.artifacts.run_summary import SUMMARY_FILE, RunSummary, read_summary

    assert read_summary(tmp_path) is None
    (tmp_path / SUMMARY_FILE).write_text("[1, 2]")
    assert read_summary(tmp_path) is None
    (tmp_path / SUMMARY_FILE).write_text('{"exit_status": 3')
    assert read_summary(tmp_path) is None
    (tmp_path / SUMMARY_FILE).write_text('{"exit_status": 3}')
    assert read_summary(tmp_path) == RunSummary(exit_status=3)


# -- the whole file ------------------------------------------------------------------------------

FULL = {
    "schema_version": 1,
    "sessions": 1,
    "stock_sessions": 0,
    "graphs_compiled": 1,
    "geops": 1,
    "host_ops": 1,
    "casts_inserted": 5,
    "fusions": {"gelu": 2},
    "steps": 3,
    "nonfinite": {"first_step": 2, "fetches": ["loss:0"]},
    "loss_scale": {
        "scale": 1024.0,
        "skipped_steps": 6,
        "warmup": {"skipped_steps": 5, "first_scale": 16384.0, "last_scale": 1024.0},
    },
    "precision": [
        {
            "op": "dense/MatMul",
            "op_type": "MatMulV2",
            "tf_type": "MatMul",
            "dtype": "float16",
            "reason": "allow_list",
            "detail": "MatMul is in the allow list",
            "where": "train.py:12 in model",
            "graph": 1,
        }
    ],
    "wall_seconds": 0.134,
    "options": {"precision_mode": "allow_mix_precision", "x": True, "n": 3},
    "options_without_effect": ["graph_memory_max_size"],
    "options_unknown": [],
    "exit_status": 0,
    "error": {"kind": "exception", "type": "ValueError", "message": "m", "where": None},
    "job_environment": {"RANK_SIZE": "1"},
    "dumps": [
        {"path": "/d", "files": 3, "bytes": 10, "statistics": "op", "complete": True},
        {"path": "/e", "files": 1, "bytes": 2, "complete": False, "error": "disk"},
    ],
    "profiles": [{"path": "/p", "traced_runs": 2, "findings": {"warning": 1}, "complete": True}],
    "deterministic": {
        "requested_by": "--deterministic",
        "reproducible": True,
        "op_determinism": True,
        "schedule": None,
        "problems": [],
    },
    "fusion_instances_unmatched": [{"rule": "a"}, {"rule": "b", "root": "r"}],
    "injected_faults": [{"spec": "op:x=nan", "applied_to": ["x"]}],
    "races": [
        {
            "variable": "v",
            "read": "r",
            "read_op": "ReadVariableOp",
            "read_at": "a.py:1 in f",
            "write": "w",
            "write_op": "Assign",
            "write_at": "",
            "message": "m",
            "fix": "f",
        }
    ],
    "write_errors": [],
    "record": {"steps": "/s", "page": "/p", "variables": None, "stopped_at_step": 3},
    "distributed": {"rank": 0, "size": 2, "loss": 1.0, "collectives": {}},
}


def test_a_full_summary_reads_back_as_written_key_for_key() -> None:
    from tf2npu.artifacts.run_summary import RunSummary

    summary = RunSummary.from_json(FULL)
    assert summary.to_json() == FULL
    assert list(summary.to_json()) == list(FULL)  # the documented order
    assert summary.error is not None and summary.error.describe() == "ValueError: m"
    assert summary.lowered[0].op == "dense/MatMul"
    assert [u.describe() for u in summary.fusion_instances_unmatched] == ["a", "b@r"]
    assert not summary.complete or summary.write_errors == ()


def test_a_one_device_run_has_no_distributed_key() -> None:
    from tf2npu.artifacts.run_summary import RunSummary

    one = {k: v for k, v in FULL.items() if k != "distributed"}
    assert RunSummary.from_json(one).to_json() == one


@pytest.mark.parametrize(
    ("damaged", "read"),
    [
        ({"steps": "3"}, {"steps": 0}),
        ({"nonfinite": {"fetches": 5}}, {"nonfinite": {"first_step": 0, "fetches": []}}),
        ({"injected_faults": 5}, {"injected_faults": []}),
        ({"injected_faults": ["op:x=nan"]}, {"injected_faults": [{"spec": "op:x=nan", "applied_to": []}]}),
        ({"dumps": [{"files": 3}, {"path": "/d", "files": "x"}]}, {"dumps": [{"path": "/d", "files": 0, "bytes": 0, "complete": True}]}),
        ({"error": "boom"}, {"error": None}),
        ({"record": {"steps": "/s", "stopped_at_step": -1}}, {"record": {"steps": "/s", "page": "", "variables": None, "stopped_at_step": None}}),
    ],
)  # fmt: skip
def test_a_damaged_field_reads_as_its_default(damaged: dict, read: dict) -> None:
    from tf2npu.artifacts.run_summary import RunSummary

    data = RunSummary.from_json(damaged).to_json()
    assert {key: data[key] for key in read} == read


@pytest.mark.parametrize(
    ("data", "unread"),
    [
        (FULL, None),
        ({"nonfinite": {"fetches": 5}}, "nonfinite.fetches = 5"),
        ({"injected_faults": 5}, "injected_faults = 5"),
        ({"races": [{"variable": "v"}, 7]}, None),  # an item dropped: not a wrong kind
        ({"loss_scale": {"scale": 2.0, "skipped_steps": 1, "warmup": []}}, None),  # reads as none
        ({"fusions": "gelu"}, "fusions = 'gelu'"),
        ({"newer_key": 5}, None),
    ],
)
def test_first_unreadable_names_a_scalar_where_an_object_or_list_belongs(data, unread) -> None:
    from tf2npu.artifacts.run_summary import RunSummary

    assert RunSummary.first_unreadable(data) == unread


def test_parts_make_one_summary_and_a_field_has_one_contributor() -> None:
    from tf2npu.artifacts.run_summary import RunSummary

    profile = {"path": "/p", "traced_runs": 1, "findings": {}, "complete": True}
    summary = RunSummary.from_parts(
        [{"exit_status": 0, "steps": 2}, {"profiles": [profile]}, {"profiles": [profile]}]
    )
    assert (summary.exit_status, summary.steps, len(summary.profiles)) == (0, 2, 2)
    with pytest.raises(ValueError, match="'steps' contributed twice"):
        RunSummary.from_parts([{"steps": 1}, {"steps": 2}])
    with pytest.raises(ValueError, match="'stepz' is no field of RunSummary"):
        RunSummary.from_parts([{"stepz": 1}])


JOB = {
    "schema_version": 1, "ranks": 2, "exit_status": 1, "failed_rank": 1, "timed_out": False,
    "message": "rank 1 exited with status 2", "wall_seconds": 3.5,
    "per_rank": [
        {"rank": 0, "status": 143, "signal": None, "stopped": True, "error": None,
         "collective": None, "seconds": 3.1, "steps": 4, "loss": 0.5,
         "collectives": {"HcomAllReduce": {"count": 4, "bytes": 64, "tensors": 8}},
         "report_dir": "/r/rank_0"},
        {"rank": 1, "status": 2, "signal": None, "stopped": False, "error": "bad",
         "collective": "HcomAllReduce 'g'", "seconds": 1.0, "steps": None, "loss": None,
         "collectives": {}, "report_dir": "/r/rank_1"},
    ],
    "collectives": {"HcomAllReduce": {"count": 4, "bytes": 64, "tensors": 8}},
}  # fmt: skip


def test_a_job_summary_reads_back_as_written_and_adds_up_its_ranks() -> None:
    from tf2npu.artifacts.run_summary import JobSummary

    job = JobSummary.from_json(JOB)
    assert job.to_json() == JOB
    first = job.per_rank[0]
    assert (first.collective_count, first.bytes_sent, first.tensors_carried) == (4, 64, 8)
    again = JobSummary.of_ranks(job.per_rank, size=2, exit_status=1, failed_rank=1,
                                timed_out=False, message=job.message, wall_seconds=3.5)  # fmt: skip
    assert again == job
    assert JobSummary.from_json({"per_rank": [{"rank": "x"}, 5]}).per_rank == ()


def test_nothing_outside_its_home_reads_a_run_summary_by_key() -> None:
    # One home per format (docs/design.md): a reader of run_summary.json gets a RunSummary or a
    # JobSummary and reads attributes; a key read elsewhere would be a second reader to keep in
    # step with the writer.
    import re

    import tf2npu

    src = Path(tf2npu.__file__).parent
    home = src / "artifacts" / "run_summary.py"
    key_read = re.compile(r"summary\w*(\(\))?\s*(\[\s*[\"']|\.get\(\s*[\"'])")
    found = [
        f"{path.relative_to(src)}:{number}: {line.strip()}"
        for path in sorted(src.rglob("*.py"))
        if path != home
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if key_read.search(line)
    ]
    assert found == []
    assert key_read.search('x = run.summary["steps"]') and key_read.search("s.get('error')") is None

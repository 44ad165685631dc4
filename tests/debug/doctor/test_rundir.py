"""Run folders: reading them, and what run_summary.json, check_result and dumps say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tf2npu.artifacts.dump import opdebug_name
from tf2npu.debug.doctor.rundir import check_run, read_run_dir
from tf2npu.errors import UsageError
from tf2npu.findings import Severity, Where

SUMMARY: dict[str, Any] = {
    "schema_version": 1,
    "steps": 4,
    "nonfinite": None,
    "loss_scale": None,
    "options": {},
    "options_without_effect": [],
    "options_unknown": [],
    "exit_status": 0,
    "dumps": [],
}
DATASET = {"code": 3, "message": "in the dataset-initialisation graph of 'MakeIterator'"}


def run_dir(
    tmp_path: Path, summary: dict[str, Any] | None = None, ops: list[Any] | None = None
) -> Path:
    if summary is not None:
        (tmp_path / "run_summary.json").write_text(json.dumps({**SUMMARY, **summary}))
    if ops is not None:
        (tmp_path / "check_result.tf.json").write_text(json.dumps({"op": ops}))
    return tmp_path


def op(name: str, op_type: str, reason: dict[str, Any] = DATASET) -> dict[str, Any]:
    return {"is_support": False, "name": name, "not_support_reason": reason, "type": op_type}


def found(folder: Path) -> list[tuple[str, Severity, Where]]:
    return [(f.id, f.severity, f.where) for f in check_run(read_run_dir(folder))]


def test_a_clean_run_gives_nothing(tmp_path: Path) -> None:
    assert found(run_dir(tmp_path, {})) == []


def test_pipeline_tables_and_variables_are_predicted_device_failures(tmp_path: Path) -> None:
    ops = [
        op("hash_table", "HashTableV2"),
        op("Variable", "VariableV2"),
        op("IteratorGetNext", "IteratorGetNext", {"code": 1, "message": "not in the library"}),
        op("MapDataset", "MapDataset"),
    ]
    assert found(run_dir(tmp_path, {}, ops)) == [
        ("table_split", Severity.WARNING, Where("hash_table", "HashTableV2")),
        ("variable_in_preprocessing", Severity.WARNING, Where("Variable", "VariableV2")),
    ]
    [first, _] = check_run(read_run_dir(tmp_path))
    assert first.cause.startswith("on the device: ")
    assert first.evidence.endswith("check_result.tf.json: hash_table: " + DATASET["message"])


def test_mixed_compute_keeps_tables_on_the_host(tmp_path: Path) -> None:
    folder = run_dir(tmp_path, {"options": {"mix_compile_mode": True}}, [op("t", "HashTableV2")])
    assert found(folder) == []


def test_summary_findings(tmp_path: Path) -> None:
    summary = {
        "nonfinite": {"first_step": 3, "fetches": ["loss:0"]},
        "options_unknown": ["precison_mode"],
        "injected_faults": [{"spec": "op:dense/MatMul=nan", "applied_to": ["dense/MatMul"]}],
        "exit_status": 1,
    }
    assert [(i, w.node) for i, _, w in found(run_dir(tmp_path, summary))] == [
        ("nonfinite_loss", "loss:0"),
        ("unknown_option", "precison_mode"),
        ("injected_faults", ""),
        ("script_failed", ""),
    ]


@pytest.mark.parametrize(
    ("steps", "scale", "skipped", "reported"),
    [(40, 1.0, 5, True), (40, 1024.0, 30, True), (40, 1024.0, 3, False), (10, 64.0, 8, False)],
)
def test_a_loss_scale_that_kept_dropping(
    tmp_path: Path, steps: int, scale: float, skipped: int, reported: bool
) -> None:
    summary = {"steps": steps, "loss_scale": {"scale": scale, "skipped_steps": skipped}}
    ids = [i for i, _, _ in found(run_dir(tmp_path, summary))]
    assert ids == (["loss_scale_keeps_dropping"] if reported else [])


def test_the_warm_up_of_a_dynamic_loss_scale_is_reported_as_a_warm_up(tmp_path: Path) -> None:
    # --loss-scale dynamic from 2**32 on a small model: 34 of 40 steps skipped, all at the start.
    warmup = {"skipped_steps": 34, "first_scale": 2.0**31, "last_scale": 65536.0}
    loss_scale = {"scale": 65536.0, "skipped_steps": 34, "warmup": warmup}
    summary = {"steps": 40, "loss_scale": loss_scale}
    [finding] = check_run(read_run_dir(run_dir(tmp_path, summary)))
    assert (finding.id, finding.severity) == ("loss_scale_warmup", Severity.INFO)
    assert "spurious" not in finding.cause and "warm-up" in finding.cause
    assert finding.evidence.endswith(
        "run_summary.json: steps 1-34 skipped while the loss scale came down to 65536 (after "
        "step 1: 2.14748e+09); then 0 of 6 steps skipped"
    )


def test_skips_after_the_warm_up_still_count_as_a_dropping_scale(tmp_path: Path) -> None:
    warmup = {"skipped_steps": 4, "first_scale": 512.0, "last_scale": 64.0}
    summary = {"steps": 40, "loss_scale": {"scale": 2.0, "skipped_steps": 30, "warmup": warmup}}
    [finding] = check_run(read_run_dir(run_dir(tmp_path, summary)))
    assert finding.id == "loss_scale_keeps_dropping"
    assert finding.evidence.endswith("loss scale 2.0, 30 of 40 steps skipped (4 in the warm-up)")


@pytest.mark.parametrize(
    "warmup",
    [{"skipped_steps": "34"}, {"skipped_steps": 99, "first_scale": 1.0, "last_scale": 1.0}, []],
)
def test_a_damaged_warm_up_record_reads_as_none(tmp_path: Path, warmup: object) -> None:
    summary = {"steps": 40, "loss_scale": {"scale": 1024.0, "skipped_steps": 34, "warmup": warmup}}
    assert [i for i, _, _ in found(run_dir(tmp_path, summary))] == ["loss_scale_keeps_dropping"]


def test_the_first_overflow_of_the_runs_overflow_dump(tmp_path: Path) -> None:
    step = tmp_path / "ovf" / "20240101000000" / "0" / "GeOp1_0" / "1" / "0"
    step.mkdir(parents=True)
    body = {
        "AI Core": {"status": 32, "task_id": 1, "stream_id": 0, "op_name": "dense/MatMul",
                    "op_type": "MatMul", "dtype": "DT_FLOAT16", "origin": ["dense/MatMul"],
                    "created_at": "train.py:12"},
    }  # fmt: skip
    (step / opdebug_name(1, 0, 1700000000000100)).write_text(json.dumps(body))
    options = {"enable_dump_debug": True, "dump_path": "ovf"}
    [finding] = check_run(read_run_dir(run_dir(tmp_path, {"options": options})))
    assert finding.id == "float_overflow"
    assert finding.where == Where("dense/MatMul", "MatMul", "train.py", 12)
    assert '{"black-list": {"to-add": ["MatMul"]}}' in finding.fix


def test_an_op_summary_below_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "PROF_1" / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    (out / "op_summary_20240101.csv").write_text(
        "Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,"
        "Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Dim,Mix Block Dim,"
        "HF32 Eligible,Input Shapes,Input Data Types\n"
        '0,1,5,2,loss/Sum,ReduceSumD,static,AI_CORE,1.0,812.5,0,1,0,NO,"1,256,256,3",DT_FLOAT16\n'
    )
    assert found(tmp_path) == [
        ("reduce_sum_fp16", Severity.WARNING, Where("loss/Sum", "ReduceSumD")),
    ]


def test_bad_run_dirs_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist; give the --report-dir"):
        read_run_dir(tmp_path / "nope")
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        read_run_dir(tmp_path / "file")
    with pytest.raises(UsageError, match=r"holds no run_summary\.json, check_result\.tf\.json"):
        read_run_dir(tmp_path)
    (tmp_path / "run_summary.json").write_text("{broken")
    with pytest.raises(UsageError, match=r"run_summary.json is not valid JSON"):
        read_run_dir(tmp_path)


def test_run_dir_op_types(tmp_path: Path) -> None:
    run = read_run_dir(run_dir(tmp_path, None, [op("t", "HashTableV2")]))
    assert (run.op_type("t"), run.op_type("other"), run.summary) == ("HashTableV2", "", None)


def test_a_race_in_the_summary_names_the_read_and_its_line(tmp_path: Path) -> None:
    race = {
        "variable": "global_step", "read": "lr/Cast", "read_op": "Cast",
        "read_at": "/w/train.py:9 in <module>", "write": "Assign", "write_op": "Assign",
        "write_at": "", "message": "variable 'global_step' is read by 'lr/Cast' ...",
    }  # fmt: skip
    [finding] = check_run(read_run_dir(run_dir(tmp_path, {"races": [race]})))
    assert (finding.id, finding.severity) == ("variable_race", Severity.WARNING)
    assert finding.where == Where("lr/Cast", "Cast", "/w/train.py", 9)
    assert finding.evidence.endswith(
        "run_summary.json: variable 'global_step' is read by 'lr/Cast' ..."
    )

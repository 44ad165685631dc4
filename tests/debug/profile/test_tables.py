"""msprof's tables from a hand-built raw profile: literal rows, memcpy edges, step trace."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.debug.profile_sample import GEOP, sample

from tf2npu.debug.profile.tables import (
    AI_CORE,
    AI_CPU,
    MEMCPY,
    OP_SUMMARY_COLUMNS,
    STEP_TRACE_COLUMNS,
    fp_bp_points,
    op_rows,
    statistic_rows,
    step_rows,
    trace_events,
    write_csv,
)


def _second(rows):  # the rows of iteration 2 (the first warm run)
    return [r for r in rows if r.iteration == 2]


def test_op_rows_map_each_op_to_its_task_type_stream_and_inputs(tmp_path: Path) -> None:
    rows = _second(op_rows(sample(tmp_path)))
    ops = {r.name: r for r in rows if not r.is_memcpy}
    assert list(ops) == ["mm", "hostop", "rs/_tf2npu_fp16", "gradients/rs_grad/Tile"]
    rs = ops["rs/_tf2npu_fp16"]
    assert (rs.op_type, rs.task_type, rs.stream_id, rs.geop) == ("ReduceSumD", AI_CORE, 1, GEOP)
    assert (rs.input_shapes, rs.input_dtypes) == ("4,8;", "DT_FLOAT16;DT_INT32")
    assert (rs.output_shapes, rs.output_dtypes) == ("8", "DT_FLOAT16")
    assert (rs.origin, rs.precision, rs.where) == (
        "rs",
        "float32->float16",
        "train.py:7 in <module>",
    )
    assert rs.wait_us == 32.0  # its stream's previous task (mm) ended at 1512 µs, it starts at 1544
    assert (rs.start_us, rs.duration_us) == (1544.0, 60.0)
    host = ops["hostop"]
    assert (host.task_type, host.stream_id, host.host_reason) == (AI_CPU, 0, "py_func")


def test_memcpy_rows_are_one_per_crossing_tensor_and_side(tmp_path: Path) -> None:
    copies = [r for r in _second(op_rows(sample(tmp_path))) if r.is_memcpy]
    seen = {(r.origin, r.direction, r.session_io, r.nbytes) for r in copies}
    assert seen == {
        ("x:0", "HtoD", True, 128),  # the feed
        ("mm:0", "DtoH", False, 128),  # MatMul -> the host op
        ("hostop:0", "HtoD", False, 64),  # the host op -> ReduceSum
        ("rs/_tf2npu_fp16:0", "DtoH", True, 16),  # the fetch
    }
    assert all(r.task_type == MEMCPY and r.duration_us == 0.0 for r in copies)


def test_a_fetched_tensor_a_host_op_also_reads_is_no_copy_of_its_own(tmp_path: Path) -> None:
    from dataclasses import replace

    from tf2npu.artifacts.profile_raw import OpFacts, OpRun
    from tf2npu.debug.profile.advice import Evidence, advise

    profile = sample(tmp_path)
    # a host op (a summary of the fetched sum) reads the fetch's tensor before the fetch does
    summary = OpFacts("summary", "ScalarSummary", "", "", inputs=("rs/_tf2npu_fp16:0",),
                      ai_core=False, order=9, session=1)  # fmt: skip
    profile.ops[1]["summary"] = summary
    iterations = []
    for it in profile.iterations:
        runs = list(it.ops)
        fetch = runs[-1]
        runs.insert(-1, OpRun("summary", fetch.start_ns - 1 * 1000, 1000, 2))
        iterations.append(replace(it, ops=tuple(runs)))
    profile.iterations = iterations
    copies = [r for r in _second(op_rows(profile)) if r.is_memcpy]
    fetched = [r for r in copies if r.origin == "rs/_tf2npu_fp16:0"]
    assert [(r.direction, r.session_io) for r in fetched] == [("DtoH", True)]
    rows = [r for r in op_rows(profile) if r.iteration > 1]
    steps = [s for s in step_rows(profile, op_rows(profile)) if not s.warmup]
    (copy,) = [f for f in advise(Evidence(profile, rows, steps)) if f.id == "host_device_copy"]
    assert "rs/_tf2npu_fp16" not in copy.cause  # the MatMul's copy to the PyFunc stays
    assert copy.where.node == "mm"


def _fetch_through_a_host_cast(profile, *, also_read: bool = False):  # type: ignore[no-untyped-def]
    """The fetch reads a cast back to float32 that runs on the host (outside the GeOp)."""
    from dataclasses import replace

    from tf2npu.artifacts.profile_raw import OpFacts, OpRun

    ops = profile.ops[1]
    ops["rs/_tf2npu_to_f32"] = OpFacts("rs/_tf2npu_to_f32", "Cast", "Cast", "",
                                       inputs=("rs/_tf2npu_fp16:0",), order=9, session=1)  # fmt: skip
    ops["_retval_rs_0_0"] = replace(ops["_retval_rs_0_0"], inputs=("rs/_tf2npu_to_f32:0",))
    if also_read:  # and a host op of the model reads the cast too
        ops["print"] = OpFacts("print", "Print", "", "", inputs=("rs/_tf2npu_to_f32:0",),
                               order=10, session=1)  # fmt: skip
    iterations = []
    for it in profile.iterations:
        runs = list(it.ops)
        fetch = runs[-1]
        runs.insert(-1, OpRun("rs/_tf2npu_to_f32", fetch.start_ns - 1000, 500, 2, ((),),
                              ("DT_FLOAT",), (4,)))  # fmt: skip
        if also_read:
            runs.insert(-1, OpRun("print", fetch.start_ns - 400, 200, 2))
        iterations.append(replace(it, ops=tuple(runs)))
    profile.iterations = iterations
    return profile


def test_the_copy_into_a_host_cast_only_the_fetch_reads_is_session_io(tmp_path: Path) -> None:
    profile = _fetch_through_a_host_cast(sample(tmp_path))
    copies = [r for r in _second(op_rows(profile)) if r.is_memcpy]
    fetched = [(r.direction, r.session_io) for r in copies if r.origin == "rs/_tf2npu_fp16:0"]
    assert fetched == [("DtoH", True)]
    profile = _fetch_through_a_host_cast(sample(tmp_path), also_read=True)
    copies = [r for r in _second(op_rows(profile)) if r.is_memcpy]
    fetched = [(r.direction, r.session_io) for r in copies if r.origin == "rs/_tf2npu_fp16:0"]
    assert fetched == [("DtoH", False)]  # the model's own host op reads it: a real copy


def test_step_rows_follow_the_msprof_definitions(tmp_path: Path) -> None:
    profile = sample(tmp_path)
    assert fp_bp_points(profile) == {2: ("mm", "gradients/rs_grad/Tile")}
    first, second, _ = step_rows(profile, op_rows(profile))
    assert (first.iteration, first.data_aug_us, first.iteration_us) == (1, None, 112.0)
    assert second.fp_start_us == 1502.0 and second.bp_end_us == 1610.0
    assert (second.fp_bp_us, second.refresh_us) == (108.0, 2.0)
    assert second.data_aug_us == 22.0  # 20 µs between runs + 2 µs before FP in the run
    assert second.iteration_us == 132.0
    assert (second.copies, second.copy_bytes) == (2, 192)  # feeds and fetches not counted


def test_fp_and_bp_points_can_be_named_by_the_user_or_by_the_op_they_stand_for(
    tmp_path: Path,
) -> None:
    profile = sample(tmp_path)
    profile.spec = {"fp_point": "rs", "bp_point": "hostop"}
    assert fp_bp_points(profile) == {2: ("rs/_tf2npu_fp16", "hostop")}


def test_statistic_rows_group_by_type_and_core(tmp_path: Path) -> None:
    stats = statistic_rows(op_rows(sample(tmp_path)))
    assert [(s.op_type, s.core_type, s.count) for s in stats] == [
        ("ReduceSumD", AI_CORE, 3), ("PyFunc", AI_CPU, 3), ("MatMulV2", AI_CORE, 3),
        ("Tile", AI_CORE, 3),
    ]  # fmt: skip
    assert stats[0].total_us == 180.0 and stats[0].ratio == 100 * 180 / 315


def test_csv_columns_start_with_msprofs_own_in_order(tmp_path: Path) -> None:
    profile = sample(tmp_path)
    path = tmp_path / "op_summary.csv"
    write_csv(path, OP_SUMMARY_COLUMNS, (r.cells(0) for r in op_rows(profile)))
    with open(path, newline="") as f:
        header, first = list(csv.reader(f))[:2]
    assert header[:8] == ["Device_id", "Model ID", "Task ID", "Stream ID", "Op Name",
                          "OP Type", "OP State", "Task Type"]  # fmt: skip
    assert header[20] == "Context ID" and "aicore_time(us)" not in header
    assert dict(zip(header, first, strict=True))["Task Duration(us)"] == "10.000"
    assert STEP_TRACE_COLUMNS[:3] == ("Device_id", "Iteration ID", "FP Start(us)")


def test_trace_has_a_process_per_geop_and_one_for_host_ops(tmp_path: Path) -> None:
    profile = sample(tmp_path)
    rows = op_rows(profile)
    trace = trace_events(profile, rows, step_rows(profile, rows))
    assert isinstance(trace, list)  # msprof's form: a top-level list of events
    names = {e["args"]["name"] for e in trace if e["name"] == "process_name"}
    assert names == {"Iterations", "Host ops (AI CPU)", f"{GEOP} (device)", "Memcpy edges"}
    ops = [e for e in trace if e["ph"] == "X" and e["name"] == "mm"]
    # µs from the first row: the copy of the feed, when the feed ended (1001 µs)
    assert [e["ts"] for e in ops] == [1.0, 501.0, 1001.0]
    json.dumps(trace)  # serialisable as it is

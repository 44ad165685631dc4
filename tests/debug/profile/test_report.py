"""Analysing a profile folder: every file written, the option switches, 10k rows in time."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.debug.profile_sample import iteration, write_sample

from tf2npu.artifacts import profile_raw as raw
from tf2npu.debug.profile.report import analyse, write_outputs


def test_analyse_writes_the_tables_timeline_advice_and_page(tmp_path: Path) -> None:
    analysis = analyse(write_sample(tmp_path))
    names = sorted(p.name for p in write_outputs(analysis))
    assert names == [
        "advice.json", "advice.md", "op_statistic_20240101120000.csv",
        "op_summary_20240101120000.csv", "profile.html", "step_trace_20240101120000.csv",
        "trace_view.json",
    ]  # fmt: skip
    out = analysis.profile.output_dir
    with open(out / "step_trace_20240101120000.csv", newline="") as f:
        steps = list(csv.DictReader(f))
    assert [s["Data Aug Bound(us)"] for s in steps] == ["N/A", "22.000", "22.000"]
    advice = json.loads((analysis.profile.directory / "advice.json").read_text())
    assert advice["findings"][0]["id"] == "reduce_sum_fp16"
    assert "reduce_sum_fp16" in analysis.summary_line() or "warning" in analysis.summary_line()


def test_task_trace_and_training_trace_off_leave_their_tables_out(tmp_path: Path) -> None:
    folder = write_sample(tmp_path)
    meta = folder / "device_0" / "data" / raw.META
    data = json.loads(meta.read_text())
    data["spec"] = {"task_trace": "off", "training_trace": "off"}
    meta.write_text(json.dumps(data))
    names = {p.name for p in write_outputs(analyse(folder))}
    assert not any(n.endswith(".csv") for n in names)
    assert "trace_view.json" in names and "profile.html" in names


def test_ten_thousand_rows_are_analysed_and_written(tmp_path: Path) -> None:
    """Its time is measured by benchmarks/profile_overhead.py, not here (a loaded CI machine)."""
    folder = write_sample(tmp_path)
    writer = raw.RawWriter(folder, 0)
    for index in range(3, 1253):  # 4 ops + 4 memcpy edges per run: 10k rows
        writer.add_iteration(iteration(index, 1000 + 500 * index, gap_us=20))
    writer.close()
    analysis = analyse(folder)
    [summary] = [p for p in write_outputs(analysis) if p.name.startswith("op_summary_")]
    assert len(analysis.rows) >= 10_000
    with summary.open() as stream:
        assert sum(1 for _ in stream) == len(analysis.rows) + 1  # the header, then one per row

"""msprof-analyze 26.2.0 (the vendor's own advisor) reads the profile ``tf2npu profile`` writes,
and what it reads agrees with our tables.

It finds the profile where msprof puts it (``PROF_<6>_<17>_<id>/mindstudio_profiler_output/``),
its op_summary loader reads every row of ours, its timeline loader every event of our
``trace_view.json``, and its AI CPU analyzer counts the same AI CPU tasks and the same total
task time as our op_summary. Tolerance: our CSV prints durations to 0.001 µs, msprof-analyze
sums them as read, and rounds the AI CPU time ratio to 4 decimals; totals agree within 1e-6
relative, the ratio within 5e-5.
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tf2npu.artifacts import profile as layout

EXE = Path(sys.executable).with_name("tf2npu")
SCRIPT = """\
import time
import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

def slow(v):
    time.sleep(0.001)
    return v

x = tf.placeholder(tf.float32, [64, 128], name="x")
w = tf.Variable(np.ones([128, 128], np.float32) / 128, name="w")
h = tf.py_func(slow, [x], tf.float32, name="host_slow")
h.set_shape([64, 128])
s = tf.reduce_sum(tf.square(tf.matmul(h, w)), axis=0, name="colsum")
loss = tf.reduce_mean(s, name="loss")
train = tf.train.GradientDescentOptimizer(1e-6).minimize(loss)
with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(4):
        sess.run([train, loss], {x: np.ones([64, 128], np.float32)})
"""
READ = """\
import json, sys
from pathlib import Path
from msprof_analyze.advisor.common.profiling.msprof import Msprof
from msprof_analyze.advisor.common.profiling.op_summary import OpSummary
out = Path(sys.argv[1])
summary = OpSummary(str(out))
read_summary = summary.parse_from_file(str(next(out.glob("op_summary_*.csv"))))
trace = Msprof(str(out))
read_trace = trace.parse_from_file(str(out / "trace_view.json"))
print(json.dumps({"summary": read_summary, "rows": len(summary.op_list),
                  "total_us": summary.get_total_task_duration(),
                  "aicpu": sorted({o.op_name for o in summary.op_list if o.task_type == "AI_CPU"}),
                  "trace": read_trace, "events": len(trace.tasks)}))
"""
"""msprof-analyze's own loaders (``advisor/common/profiling``) on our tables."""


def tf2npu(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, cwd=cwd, timeout=600, env=env
    )


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``PROF_*`` folder ``tf2npu profile`` wrote for a script with a slow host op and a
    float16 ReduceSum."""
    root = tmp_path_factory.mktemp("msprof")
    (root / "train.py").write_text(SCRIPT)
    done = tf2npu(
        "profile", "--steps", "3", "--out", "prof",
        "--option", "precision_mode=allow_mix_precision", "--", "train.py", cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [folder] = (root / "prof").glob("PROF_*")
    return folder


def our_rows(folder: Path) -> list[dict[str, str]]:
    [path] = (folder / layout.OUTPUT_DIR).glob("op_summary_*.csv")
    with path.open(newline="", encoding="utf-8") as stream:
        return list(csv.DictReader(stream))


@pytest.mark.tf
@pytest.mark.slow
def test_the_folder_is_named_and_laid_out_as_msprof_writes_it(profiled: Path) -> None:
    assert layout.FOLDER_PATTERN.match(profiled.name), profiled.name
    out = profiled / layout.OUTPUT_DIR
    stamp = layout.table_stamp(profiled.name)
    assert (out / layout.table_name(layout.OP_SUMMARY, stamp)).is_file()
    trace = json.loads((out / layout.TRACE_VIEW).read_text())
    assert isinstance(trace, list) and trace[0]["ph"] == "M"
    info = json.loads((profiled / "device_0" / "info.json.0").read_text())
    assert info == {"devices": "0", "DeviceInfo": [{"id": 0}], "rank_id": 0}


@pytest.mark.tf
@pytest.mark.slow
def test_msprof_analyzes_loaders_read_every_row_and_event_of_ours(vendor, profiled: Path) -> None:
    out = profiled / layout.OUTPUT_DIR
    done = subprocess.run(
        [str(vendor.python), "-c", READ, str(out)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout.strip().splitlines()[-1])
    ours = our_rows(profiled)
    assert read["summary"] and read["trace"]
    assert read["rows"] == len(ours)
    total = sum(float(r["Task Duration(us)"]) for r in ours)
    assert math.isclose(read["total_us"], total, rel_tol=1e-6)
    assert read["aicpu"] == sorted({r["Op Name"] for r in ours if r["Task Type"] == "AI_CPU"})
    assert "host_slow" in read["aicpu"]
    trace = json.loads((out / layout.TRACE_VIEW).read_text())
    assert read["events"] == len(trace)


@pytest.mark.tf
@pytest.mark.slow
def test_advisor_all_finds_the_profile_and_counts_our_ai_cpu_tasks(
    vendor, profiled: Path, tmp_path: Path
) -> None:
    advisor = vendor.python.with_name("msprof-analyze")
    done = subprocess.run(
        [str(advisor), "advisor", "all", "-d", str(profiled)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    [xlsx] = (tmp_path / "log").glob("mstt_advisor_*.xlsx")
    table = subprocess.run(
        [str(vendor.python), "-c",
         "import sys, pandas as pd; print(pd.read_excel(sys.argv[1], sheet_name=0)"
         ".to_json(orient='records', force_ascii=False))", str(xlsx)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert table.returncode == 0, table.stderr
    [aicpu] = [p for p in json.loads(table.stdout) if p["category"] == "AICPU算子"]
    ours = our_rows(profiled)
    cpu = [float(r["Task Duration(us)"]) for r in ours if r["Task Type"] == "AI_CPU"]
    total = sum(float(r["Task Duration(us)"]) for r in ours)
    assert aicpu["problem count"] == len(cpu)
    assert math.isclose(aicpu["total_time(us)"], total, rel_tol=1e-6)
    assert abs(aicpu["time ratio"] - sum(cpu) / total) <= 5e-5
    assert "PyFunc" in aicpu["description"]


@pytest.mark.tf
@pytest.mark.slow
def test_our_own_readers_still_read_the_folder(profiled: Path) -> None:
    again = tf2npu("profile", "--from", str(profiled.parent), cwd=profiled.parent)
    assert again.returncode == 0, again.stderr
    assert "reduce_sum_fp16" in again.stderr
    doctor = tf2npu("doctor", "--run-dir", str(profiled.parent), cwd=profiled.parent)
    assert "reduce_sum_fp16" in doctor.stdout + doctor.stderr, doctor.stdout + doctor.stderr

"""``precision`` in the run summary: every user op the precision pass judged, in every run."""

from __future__ import annotations

from typing import Any

import pytest
from tests.runtime.conftest import npu_config, tf

from tf2npu.artifacts.run_summary import PrecisionRow

pytestmark = pytest.mark.tf


def _run(mode: str, **options: str) -> dict[str, PrecisionRow]:
    from tf2npu.runtime.context import reset_stats

    stats = reset_stats()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant([[1.0, 2.0]], name="x")
        mm = tf.matmul(x, tf.ones([2, 2]), name="mm")  # allow list: float16
        out = tf.exp(mm, name="out")
    config = npu_config(precision_mode=mode, **options)
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        sess.run(out)
    return dict(stats.precision)


def test_every_run_records_the_precision_of_each_user_op() -> None:
    rows = _run("allow_mix_precision")
    assert rows["mm"].where == ""  # script lines are for recorded runs
    mm = rows["mm"]
    assert (mm.op_type, mm.tf_type, mm.dtype, mm.reason) == (
        "MatMulV2",
        "MatMul",
        "float16",
        "allow_list",
    )
    assert mm.detail == "MatMul is in the allow list"
    assert mm.graph >= 1
    assert not [name for name in rows if "/_tf2npu_" in name]


def test_a_recorded_run_names_the_script_line_of_each_lowered_op(
    monkeypatch: Any, tmp_path: Any
) -> None:
    from tf2npu import runtime
    from tf2npu.runtime.record import RunRecorder

    ctx = runtime.context()  # what tf2npu run --record installs
    recorder = RunRecorder(tmp_path, ctx)
    monkeypatch.setattr(ctx, "extra_instruments", [*ctx.extra_instruments, recorder])
    rows = _run("allow_mix_precision")
    assert rows["mm"].where.startswith(f"{__file__}:")
    assert rows["mm"].where.endswith(" in _run")


def test_ops_kept_float32_are_rows_too_without_a_script_line() -> None:
    rows = _run("must_keep_origin_dtype")
    assert rows["mm"].dtype == "float32"
    assert rows["mm"].reason == "origin_dtype"
    assert rows["mm"].where == ""


def test_a_modify_mixlist_edit_is_its_own_reason(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "mixlist.json"
    path.write_text('{"black-list": {"to-add": ["MatMulV2"]}}')
    rows = _run("allow_mix_precision", modify_mixlist=str(path))
    assert (rows["mm"].dtype, rows["mm"].reason) == ("float32", "mixlist_deny")
    assert rows["mm"].reason_text == "black list by modify_mixlist"


def test_the_summary_lists_the_rows_as_json() -> None:
    from tf2npu.artifacts.run_summary import precision_rows
    from tf2npu.runtime.context import run_stats

    _run("allow_mix_precision")
    summary = run_stats().summary(wall_seconds=1.0, exit_status=0)
    assert {row.op: row.dtype for row in precision_rows(summary)}["mm"] == "float16"

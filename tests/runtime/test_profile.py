"""Profiling NPU sessions from TF step stats: the seed 000 case 04 ReduceSum is found, every op
maps back to the engine's decision and the user's line, unprofiled sessions pay nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.runtime.conftest import npu_config, tf

from tf2npu.artifacts import profile_raw as raw

pytestmark = pytest.mark.tf

X = np.random.RandomState(0).rand(64, 128).astype(np.float32)


def _train(config: Any, steps: int = 4) -> None:
    """A dense layer, a column ReduceSum of its square, a mean loss, SGD."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [64, 128], name="x")
        w = tf.compat.v1.get_variable("w", [128, 128], initializer=tf.ones_initializer())
        h = tf.matmul(x, w, name="dense")
        s = tf.reduce_sum(h * h, axis=0, name="colsum")
        loss = tf.reduce_mean(s, name="loss")
        train = tf.compat.v1.train.GradientDescentOptimizer(1e-6).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        sess.run(init)
        for _ in range(steps):
            sess.run([train, loss], {x: X})


def _close() -> Any:
    from tf2npu.runtime import context
    from tf2npu.runtime.profile import OpProfile

    ctx = context()
    ctx.close()
    return [i for i in ctx.extra_instruments if isinstance(i, OpProfile)]


def _profiled(tmp_path: Path, **options: Any) -> Any:
    output = {"output": str(tmp_path / "prof")}
    _train(npu_config(profiling_mode=True, profiling_options=json.dumps(output), **options))
    (profile,) = _close()
    assert profile.analysis is not None
    return profile.analysis


def test_a_float16_reduce_sum_under_mixed_precision_is_found_with_the_mixlist_fix(
    tmp_path: Path,
) -> None:
    analysis = _profiled(tmp_path, precision_mode="allow_mix_precision")
    found = {f.id: f for f in analysis.findings}["reduce_sum_fp16"]
    assert found.where.node.startswith("colsum") and found.where.file == __file__
    assert found.where.line > 0
    assert '{"black-list": {"to-add": ["ReduceSumD"]}}' in found.fix
    row = next(r for r in analysis.rows if r.name == found.where.node)
    assert (row.op_type, row.task_type, row.input_dtypes.split(";")[0]) == (
        "ReduceSumD", "AI_CORE", "DT_FLOAT16",
    )  # fmt: skip
    assert row.geop.startswith("GeOp") and row.precision == "float32->float16"


def test_without_mixed_precision_the_reduce_sum_stays_float32(tmp_path: Path) -> None:
    analysis = _profiled(tmp_path, precision_mode="must_keep_origin_dtype")
    assert "reduce_sum_fp16" not in {f.id for f in analysis.findings}
    sums = [r for r in analysis.rows if r.op_type == "ReduceSumD"]
    assert sums and all(r.input_dtypes.startswith("DT_FLOAT;") for r in sums)


def test_every_traced_op_maps_back_and_the_files_are_written(tmp_path: Path) -> None:
    analysis = _profiled(tmp_path, precision_mode="must_keep_origin_dtype")
    profile = analysis.profile
    assert [(i.model, i.index) for i in profile.iterations if i.train] == [
        (2, 0), (2, 1), (2, 2), (2, 3),
    ]  # fmt: skip
    dense = [r for r in analysis.rows if r.name == "dense"]
    assert dense and all(r.op_type == "MatMulV2" and r.input_shapes == "64,128;128,128"
                         for r in dense)  # fmt: skip
    assert all(r.where for r in dense)
    out = profile.output_dir
    assert (out / f"op_summary_{profile.timestamp}.csv").exists()
    assert (profile.directory / "profile.html").exists()
    fetched = [r for r in analysis.rows if r.is_memcpy and r.session_io and r.direction == "DtoH"]
    assert fetched  # the loss leaves the GeOp every step


def test_profile_steps_select_the_traced_runs(tmp_path: Path) -> None:
    from tf2npu.runtime import context
    from tf2npu.runtime.profile import install

    install(context(), tmp_path / "prof", steps="1|3")
    output = json.dumps({"output": str(tmp_path / "prof")})
    _train(npu_config(profiling_mode=True, profiling_options=output))
    (profile,) = _close()
    assert [i.index for i in profile.analysis.profile.iterations if i.train] == [1, 3]


def test_sessions_without_profiling_mode_are_not_traced(tmp_path: Path) -> None:
    _train(npu_config())
    assert _close() == []


def test_the_environment_turns_profiling_on(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("PROFILING_MODE", "true")
    monkeypatch.setenv("PROFILING_OPTIONS", json.dumps({"output": str(tmp_path / "env")}))
    _train(npu_config(), steps=2)
    (profile,) = _close()
    assert raw.find_profiles(tmp_path / "env") == [profile.directory]


def test_names_tensorflow_makes_at_run_time_map_back() -> None:
    from tf2npu.runtime.profile import _label, _original, _session_tensor

    known = {"g/_tf2npu_to_f32": 1, "w/read": 1}
    rewritten = "g/ArithmeticOptimizer/ReorderCastLikeAndValuePreserving_float__tf2npu_to_f32"
    assert _original(rewritten, known) == "g/_tf2npu_to_f32"
    assert _original("w/read/ConstantFolding/x", known) == "w/read"
    assert _original("elsewhere/x", known) == ""
    assert _session_tensor("_arg_x_0_0") == "x:0"
    assert _session_tensor("_retval_scope/loss_1_3") == "scope/loss:1"
    assert _label("b = Cast(a, c:1, ^d)") == ("Cast", ("a:0", "c:1"))


def test_install_names_the_folder_as_msprof_and_writes_the_jobs_device_and_rank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    from types import SimpleNamespace

    from tf2npu.artifacts import profile as layout
    from tf2npu.runtime.profile import install

    for name, value in {"RANK_SIZE": "2", "RANK_ID": "1", "ASCEND_DEVICE_ID": "3"}.items():
        monkeypatch.setenv(name, value)
    ctx = SimpleNamespace(lock=threading.Lock(), extra_instruments=[])
    profile = install(ctx, tmp_path / "prof")  # type: ignore[arg-type]
    profile.close()
    assert layout.FOLDER_PATTERN.match(profile.directory.name), profile.directory.name
    info = json.loads((profile.directory / "device_3" / "info.json.3").read_text())
    assert info == {"devices": "3", "DeviceInfo": [{"id": 3}], "rank_id": 1}
    assert raw.load(profile.directory).device_id == 3

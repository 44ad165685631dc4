"""The advisor's rules on the hand-built profile: which fire, with which node, line and fix."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from tests.debug.profile_sample import iteration, sample

from tf2npu.artifacts.profile_raw import CompileRecord, ModelInfo, OpFacts
from tf2npu.debug.profile.advice import (
    MIXLIST_FIX,
    RULES,
    Evidence,
    advise,
    figures,
    source_line,
    to_json,
    to_markdown,
)
from tf2npu.debug.profile.tables import op_rows, step_rows
from tf2npu.findings import Severity, Where


def _findings(profile):
    rows = op_rows(profile)
    warm = [r for r in rows if r.iteration > 1]
    steps = [s for s in step_rows(profile, rows) if not s.warmup]
    return {f.id: f for f in advise(Evidence(profile, warm, steps))}


def test_the_float16_reduce_sum_the_precision_pass_made_gets_the_mixlist_fix(
    tmp_path: Path,
) -> None:
    found = _findings(sample(tmp_path))["reduce_sum_fp16"]
    assert found.where == Where("rs/_tf2npu_fp16", "ReduceSumD", "train.py", 7)
    assert found.severity is Severity.WARNING
    assert "float16 input (4,8)" in found.cause and "block_dim 1" in found.cause
    assert MIXLIST_FIX in found.fix and "allow_mix_precision" in found.fix
    assert json.loads(MIXLIST_FIX) == {"black-list": {"to-add": ["ReduceSumD"]}}


def test_a_float16_reduce_sum_of_the_model_itself_gets_a_cast(tmp_path: Path) -> None:
    profile = sample(tmp_path)
    ops = profile.ops[1]
    ops["rs/_tf2npu_fp16"] = replace(ops["rs/_tf2npu_fp16"], precision="", precision_reason="")
    assert "tf.cast(x, tf.float32)" in _findings(profile)["reduce_sum_fp16"].fix


def test_an_existing_mixlist_file_is_named_in_the_fix(tmp_path: Path) -> None:
    profile = sample(tmp_path)
    profile.options = {"precision_mode": "allow_mix_precision", "modify_mixlist": "/m.json"}
    assert "/m.json" in _findings(profile)["reduce_sum_fp16"].fix


def test_a_short_reduce_sum_is_below_the_threshold(tmp_path: Path) -> None:
    profile = sample(tmp_path)
    profile.iterations = [iteration(i, 1000 + 500 * i, reduce_us=15) for i in range(3)]
    assert "reduce_sum_fp16" not in _findings(profile)


def test_host_ops_on_the_hot_path_and_the_copies_they_cause(tmp_path: Path) -> None:
    found = _findings(sample(tmp_path))
    host = found["aicpu_ops"]
    assert (host.where.node, host.where.file, host.where.line) == ("hostop", "train.py", 6)
    assert "on the host" in host.cause and "PyFunc: host only" in host.cause
    copy = found["host_device_copy"]
    assert copy.where.node == "mm" and figures(copy) == {"bytes": 192, "per_step": 2.0}


def test_input_bound_classes(tmp_path: Path) -> None:
    found = _findings(sample(tmp_path))["input_bound"]  # 22 of 132 µs: 16.7 %
    assert (found.severity, figures(found)["share"]) == (Severity.INFO, 16.7)
    assert "MODERATELY" in found.cause
    profile = sample(tmp_path)
    profile.iterations = [iteration(i, 1000 + 500 * i, gap_us=200 if i else -1) for i in range(3)]
    high = _findings(profile)["input_bound"]
    assert high.severity is Severity.WARNING and "HIGHLY" in high.cause
    profile.iterations = [iteration(i, 1000 + 500 * i, gap_us=0 if i else -1) for i in range(3)]
    assert "input_bound" not in _findings(profile)  # 2 of 112 µs: under 5 %


def test_recompiles_double_ops_and_switched_off_fusions(tmp_path: Path) -> None:
    profile = sample(tmp_path)
    profile.models[2] = ModelInfo(2, session=1, train=True, plans=3, runs=3)
    ops = profile.ops[1]
    ops["gradients/rs_grad/Tile"] = replace(
        ops["gradients/rs_grad/Tile"], input_dtypes=("DT_DOUBLE",), ai_core=False
    )
    diagnostic = {
        "code": "fusion_rule_switched_off",
        "node": "mm",
        "where": "train.py:5",
        "message": "fusion rule matmul_biasadd is switched off",
        "fix": "remove it",
    }
    profile.compiles = [CompileRecord(1, 1, 1, (diagnostic,))]  # fmt: skip
    profile.iterations = [iteration(i, 1000 + 500 * i, reduce_us=60) for i in range(3)]
    for it in profile.iterations:  # the Tile runs 25 µs
        object.__setattr__(it, "ops", tuple(
            replace(r, duration_ns=25_000) if r.name.endswith("Tile") else r for r in it.ops
        ))  # fmt: skip
    found = _findings(profile)
    assert figures(found["recompile"])["compiles"] == 2
    assert "float32" in found["aicpu_dtype"].fix
    assert found["aicpu_dtype"].where.node.endswith("Tile")
    off = found["fusion_switched_off"]
    assert (off.where.node, off.where.file, off.fix) == ("mm", "train.py", "remove it")


def test_cast_share_over_the_threshold(tmp_path: Path) -> None:
    profile = sample(tmp_path)
    ops = profile.ops[1]
    ops["gradients/rs_grad/Tile"] = OpFacts("gradients/rs_grad/Tile", "Cast", "Cast", "GeOp1_0",
                                            session=1)  # fmt: skip
    profile.iterations = [iteration(i, 1000 + 500 * i, reduce_us=5) for i in range(3)]
    found = _findings(profile)["cast_share"]  # 5 of 50 µs
    assert figures(found)["share"] == 10.0


def test_renderers_list_every_finding_and_the_rule_table(tmp_path: Path) -> None:
    findings = list(_findings(sample(tmp_path)).values())
    data = json.loads(to_json(findings))
    assert [r["id"] for r in data["rules"]] == [rule.id for rule in RULES]
    assert {f["id"] for f in data["findings"]} == {f.id for f in findings}
    text = to_markdown(findings, "Advice")
    assert "## warning: reduce_sum_fp16 — `rs/_tf2npu_fp16`" in text
    assert "| reduce_sum_fp16 |" in text
    assert "No rule matched" in to_markdown([], "Advice")


def test_every_rule_has_its_data(tmp_path: Path) -> None:
    for rule in RULES:
        assert rule.id and rule.condition and rule.message and rule.source
        assert "default" in rule.fix and rule.severity in ("error", "warning", "info")


def test_source_lines_split_into_file_and_line() -> None:
    assert source_line("/a/train.py:9 in main") == ("/a/train.py", 9)
    assert source_line("") == ("", 0)
    assert source_line("<unknown>") == ("<unknown>", 0)

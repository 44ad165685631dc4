"""verify's judgement, from literal run records: noise floor, tolerances, first divergent step
and variable, dropout and failed runs; and the trials it plans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tf2npu.artifacts.run_summary import RunSummary
from tf2npu.debug.trials import TrialResult
from tf2npu.debug.verify.checks import (
    RunRecord,
    VerifyPlan,
    explain_with_fusions_off,
    judge,
    migrated_cwd,
    needs_fusions_off,
    report_json,
    run_verify,
    scalar_scales,
    verdict,
    write_report,
)
from tf2npu.errors import UsageError

NAMES = ("original-1", "original-2", "keep-origin-dtype", "precision-mode")
LOSSES = [2.0, 1.5, 1.2, 1.0]
W = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)


def _run(
    tmp_path: Path,
    name: str,
    losses: list[float | None] = LOSSES,
    w: np.ndarray[Any, Any] | None = W,
    *,
    status: int = 0,
    dropout: int = 0,
    summary: dict[str, Any] | None = None,
) -> RunRecord:
    directory = tmp_path / name
    directory.mkdir(parents=True)
    lines = []
    for step, loss in enumerate(losses, 1):
        record = {"run": step, "signature": 2, "train": True, "step": step, "npu": True}
        record.update(scalars={"loss:0": loss}, nonfinite=[] if loss is not None else ["loss:0"])
        lines.append(json.dumps(record) + "\n")
    (directory / "steps.jsonl").write_text("".join(lines), encoding="utf-8")
    if w is not None:
        np.savez(directory / "variables.npz", **{"dense/kernel": w, "dense/bias": w[0] * 0})
    (directory / "record.json").write_text(json.dumps({"dropout_ops": dropout}))
    log = directory / "trial.log"
    log.write_text("W: noise\nTraceback (most recent call last):\n  x\nValueError: boom\n")
    result = TrialResult(
        status, directory, None if summary is None else RunSummary.from_json(summary), 1.0, log
    )
    return RunRecord.load(name, result)


def _plan(tmp_path: Path, **kw: Any) -> VerifyPlan:
    return VerifyPlan(Path("/s/a.py"), Path("/s/b.py"), tmp_path, **kw)


def _judge(tmp_path: Path, plan: VerifyPlan | None = None, **runs: RunRecord) -> dict[str, Any]:
    records = {name: runs.get(name.replace("-", "_")) or _run(tmp_path, name) for name in NAMES}
    checks = judge(records, plan or _plan(tmp_path))
    return {c.name: c.to_json() for c in checks}


def test_identical_runs_pass_with_the_deterministic_tolerances(tmp_path: Path) -> None:
    checks = _judge(tmp_path)
    assert checks["original_noise"]["noise_floor"] == 0.0
    exact = checks["keep_origin_dtype"]
    assert exact["passed"] and exact["tolerance"] == 1e-5 and exact["variable_tolerance"] == 1e-3
    assert exact["max_rel_diff"] == 0.0 and exact["steps_compared"] == 4
    assert checks["precision_mode"]["tolerance"] == 0.02


def test_a_changed_step_is_named_with_the_scalar(tmp_path: Path) -> None:
    broken = _run(tmp_path, "keep-origin-dtype", [2.0, 1.5, 1.21, 1.05])
    checks = _judge(tmp_path, keep_origin_dtype=broken)
    exact = checks["keep_origin_dtype"]
    assert not exact["passed"]
    assert exact["first_divergent_step"] == 3
    assert exact["first_divergent_scalar"] == "loss:0"
    assert exact["max_rel_diff"] == pytest.approx(0.05)
    assert checks["precision_mode"]["passed"]


def test_float16_sized_differences_pass_the_precision_check_only(tmp_path: Path) -> None:
    half = _run(tmp_path, "precision-mode", [2.0, 1.51, 1.21, 1.0])  # <1% off
    checks = _judge(tmp_path, precision_mode=half)
    assert checks["precision_mode"]["passed"]
    off = _run(tmp_path / "x", "precision-mode", [2.0, 1.5, 1.3, 1.0])  # 8% at step 3
    assert _judge(tmp_path / "x", precision_mode=off)["precision_mode"]["first_divergent_step"] == 3


def test_a_loss_crossing_zero_is_judged_by_its_median_magnitude(tmp_path: Path) -> None:
    critic = [4.0, -3.0, 0.01, 2.0]  # a WGAN critic loss: median magnitude 2.5
    originals = {name.replace("-", "_"): _run(tmp_path, name, critic) for name in NAMES[:3]}
    rounded = _run(tmp_path, "precision-mode", [4.0, -3.0, 0.04, 2.0])  # 0.03 off near 0
    checks = _judge(tmp_path, precision_mode=rounded, **originals)
    assert checks["precision_mode"]["passed"]  # 0.03 <= 2% of 2.5, though 300% of 0.01
    off = _run(tmp_path / "x", "precision-mode", [4.0, -3.0, 0.2, 2.0])  # 0.19 off
    originals = {name.replace("-", "_"): _run(tmp_path / "x", name, critic) for name in NAMES[:3]}
    check = _judge(tmp_path / "x", precision_mode=off, **originals)["precision_mode"]
    assert not check["passed"] and check["first_divergent_step"] == 3


def test_a_loss_near_zero_gets_no_fixed_absolute_slack(tmp_path: Path) -> None:
    tiny = [4e-4, 3e-4, 2e-4, 1e-4]  # a loss already trained down: median 2.5e-4
    originals = {name.replace("-", "_"): _run(tmp_path, name, tiny) for name in NAMES[:3]}
    fourfold = _run(tmp_path, "precision-mode", [4e-4, 3e-4, 8e-4, 1e-4])
    check = _judge(tmp_path, precision_mode=fourfold, **originals)["precision_mode"]
    assert not check["passed"] and check["first_divergent_step"] == 3  # passed with 1e-3 slack


def test_scalar_scales_are_the_median_finite_magnitudes(tmp_path: Path) -> None:
    run = _run(tmp_path, "original-1", [-2.0, None, 1.0, 5.0])
    assert scalar_scales(run) == {"loss:0": 2.0}


def test_a_variable_beyond_tolerance_is_named(tmp_path: Path) -> None:
    moved = W.copy()
    moved[1, 0] += 0.01  # 0.5% of the largest magnitude (2.0)
    checks = _judge(tmp_path, keep_origin_dtype=_run(tmp_path, "keep-origin-dtype", w=moved))
    exact = checks["keep_origin_dtype"]
    assert exact["first_divergent_step"] is None
    assert exact["first_divergent_variable"] == "dense/kernel"
    assert exact["max_rel_diff_variables"] == pytest.approx(0.005)


def test_noise_floor_widens_the_exact_tolerance(tmp_path: Path) -> None:
    noisy = _run(tmp_path, "original-2", [2.0, 1.5, 1.2, 1.001])  # 1e-3 apart
    plan = _plan(tmp_path, deterministic=False)
    checks = _judge(tmp_path, plan, original_2=noisy)
    assert checks["original_noise"]["noise_floor"] == pytest.approx(1e-3)
    assert checks["keep_origin_dtype"]["tolerance"] == pytest.approx(2e-3)
    assert checks["original_noise"]["notes"] == []


def test_originals_that_differ_while_deterministic_are_explained(tmp_path: Path) -> None:
    summary = {"deterministic": {"problems": ["the graph has no random seed"]}}
    first = _run(tmp_path, "original-1", summary=summary)
    second = _run(tmp_path, "original-2", [2.0, 1.4, 1.2, 1.0])
    notes = _judge(tmp_path, original_1=first, original_2=second)["original_noise"]["notes"]
    assert notes == [
        "the two original runs differ although --deterministic asked: the graph has no random seed"
    ]


def test_dropout_is_named_when_a_check_fails(tmp_path: Path) -> None:
    broken = _run(tmp_path, "keep-origin-dtype", [2.0, 1.7, 1.2, 1.0], dropout=3)
    notes = _judge(tmp_path, keep_origin_dtype=broken)["keep_origin_dtype"]["notes"]
    assert len(notes) == 1 and "re-run with --dropout-off" in notes[0]
    assert "dropout (3 dropout ops)" in notes[0]


def test_a_nan_loss_diverges_and_a_shorter_run_is_said(tmp_path: Path) -> None:
    nan = _run(tmp_path, "precision-mode", [2.0, None, 1.2])
    check = _judge(tmp_path, precision_mode=nan)["precision_mode"]
    assert check["first_divergent_step"] == 2
    assert check["max_rel_diff"] == "inf"
    assert "original-1 recorded 4 steps with scalars, precision-mode 3" in check["notes"]


def test_a_failed_migrated_run_fails_its_check_with_the_log(tmp_path: Path) -> None:
    failed = _run(tmp_path, "precision-mode", [], None, status=1)
    check = _judge(tmp_path, precision_mode=failed)["precision_mode"]
    assert not check["passed"]
    assert check["notes"][0].startswith(
        "the migrated script exited 1: no run summary (the child exited 1); the last line of its "
        "log: "
        "ValueError: boom (its"
    )


def test_report_json_keys_and_verdict(tmp_path: Path) -> None:
    plan = _plan(tmp_path, steps=4)
    runs = {name: _run(tmp_path, name) for name in NAMES}
    report = report_json(judge(runs, plan), runs, plan)
    assert report["verdict"] == "pass"
    assert [c["name"] for c in report["checks"]] == [
        "original_noise", "keep_origin_dtype", "precision_mode"
    ]  # fmt: skip
    for key in ("name", "passed", "first_divergent_step", "max_rel_diff", "tolerance"):
        assert key in report["checks"][1]
    assert report["runs"]["original-1"] == {
        "report_dir": str(tmp_path / "original-1"), "status": 0, "seconds": 1.0, "steps": 4
    }  # fmt: skip
    path = write_report(report, tmp_path)
    assert json.loads(path.read_text()) == report


def test_trials_planned(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path,
        script_args=("--model-dir", "{run_dir}/m", "--steps", "9"),
        options=("precision_mode=allow_mix_precision", "mix_compile_mode=true"),
        steps=3,
        dropout_off=True,
    )
    trials = plan.trials()
    assert list(trials) == list(NAMES)
    original = trials["original-1"].spec
    assert (original.npu, original.options, original.deterministic) == (False, (), True)
    assert original.script_args == ("--model-dir", f"{tmp_path}/original-1/m", "--steps", "9")
    assert (original.max_steps, original.dropout_off) == (3, True)
    assert (original.record, original.quiet) == (True, True)
    assert original.report_dir == tmp_path / "original-1"
    assert trials["original-1"].env == {}
    assert trials["keep-origin-dtype"].spec.options == (
        "mix_compile_mode=true", "precision_mode=must_keep_origin_dtype", "deterministic=1"
    )  # fmt: skip
    assert trials["precision-mode"].spec.options == (*plan.options, "deterministic=1")
    assert trials["precision-mode"].spec.script == Path("/s/b.py")
    loose = _plan(tmp_path, deterministic=False).trials()
    assert not loose["original-2"].spec.deterministic
    assert "deterministic=1" not in loose["keep-origin-dtype"].spec.options


def test_an_original_that_fails_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tf2npu.debug.verify import checks as verify

    def fake(trial: Any, timeout: float | None = None) -> TrialResult:
        status = 1 if trial.report_dir.name.startswith("original") else 0
        trial.report_dir.mkdir(parents=True, exist_ok=True)
        log = trial.report_dir / "trial.log"
        log.write_text("NameError: x\n", encoding="utf-8")
        error = {"kind": "exception", "type": "NameError", "message": "x", "where": "/s/a.py:1"}
        summary = {"exit_status": 1, "error": error} if status else {}
        return TrialResult(status, trial.report_dir, RunSummary.from_json(summary), 0.1, log)

    monkeypatch.setattr(verify, "run_trial", fake)
    with pytest.raises(
        UsageError, match=r"exited 1 under `tf2npu run --no-npu`: NameError: x \(/s/a.py:1\); fix"
    ):
        run_verify(_plan(tmp_path))


def test_an_original_that_records_nothing_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tf2npu.debug.verify import checks as verify

    def fake(trial: Any, timeout: float | None = None) -> TrialResult:
        trial.report_dir.mkdir(parents=True, exist_ok=True)
        return TrialResult(0, trial.report_dir, RunSummary(), 0.1, None)

    monkeypatch.setattr(verify, "run_trial", fake)
    with pytest.raises(UsageError, match="fetched no float scalar and left no trainable"):
        run_verify(_plan(tmp_path))


# -- inconclusive, races, and the run with fusions off ----------------------------------------

RACE = {
    "variable": "global_step", "read": "lr/Cast", "read_op": "Cast", "read_at": "a.py:9",
    "write": "Assign", "write_op": "Assign", "write_at": "a.py:12",
    "message": "variable 'global_step' is read by 'lr/Cast' (Cast, a.py:9) and assigned by "
    "'Assign' (Assign, a.py:12) in the same run, with nothing ordering them",
    "fix": "order the read and the write: build one under tf.control_dependencies([the other])",
}  # fmt: skip


def test_an_original_that_does_not_repeat_is_inconclusive_not_a_pass(tmp_path: Path) -> None:
    noisy = _run(tmp_path, "original-2", [2.0, 1.5, 1.2, 1.001])  # 1e-3 apart
    runs = {name: _run(tmp_path, name) for name in NAMES if name != "original-2"}
    runs["original-2"] = noisy
    checks = judge(runs, _plan(tmp_path))
    exact = next(c for c in checks if c.name == "keep_origin_dtype")
    assert exact.passed and exact.inconclusive
    assert exact.notes[0].startswith(
        "inconclusive: runs of the original do not repeat (noise floor 0.001), so this check "
        "passed only within a tolerance widened to 0.002"
    )
    precision = next(c for c in checks if c.name == "precision_mode")
    assert not precision.inconclusive  # 2% is wider than the noise: a real verdict
    assert verdict(checks) == "inconclusive"
    assert report_json(checks, runs, _plan(tmp_path))["verdict"] == "inconclusive"


def test_a_difference_beyond_the_widened_tolerance_still_fails(tmp_path: Path) -> None:
    runs = {name: _run(tmp_path, name) for name in NAMES}
    runs["original-2"] = _run(tmp_path / "2", "original-2", [2.0, 1.5, 1.2, 1.001])
    runs["keep-origin-dtype"] = _run(tmp_path / "k", "keep-origin-dtype", [2.0, 1.5, 1.2, 1.1])
    assert verdict(judge(runs, _plan(tmp_path))) == "fail"


def test_a_race_is_named_where_it_can_explain_a_check(tmp_path: Path) -> None:
    runs = {name: _run(tmp_path, name, summary={"races": [RACE]}) for name in NAMES}
    runs["keep-origin-dtype"] = _run(
        tmp_path / "k", "keep-origin-dtype", [2.0, 1.5, 1.21, 1.0], summary={"races": [RACE]}
    )
    checks = {c.name: c for c in judge(runs, _plan(tmp_path))}
    note = f"variable race: {RACE['message']}; a run can resolve it either way; fix: {RACE['fix']}"
    assert checks["keep_origin_dtype"].notes == [note]  # failed: the race is named once
    assert checks["precision_mode"].notes == []  # passed: nothing to explain
    assert checks["original_noise"].notes == []  # the original repeats


def _exact(tmp_path: Path, candidate: RunRecord) -> Any:
    runs = {name: _run(tmp_path, name) for name in NAMES if name != "keep-origin-dtype"}
    runs["keep-origin-dtype"] = candidate
    return next(c for c in judge(runs, _plan(tmp_path)) if c.name == "keep_origin_dtype")


def test_fusion_rounding_is_said_with_both_figures_and_passes(tmp_path: Path) -> None:
    w = W.copy()
    w[1, 0] += 2.0 * 1.25e-3  # 1.25e-3 of the largest magnitude (2.0): the GAN's case
    check = _exact(tmp_path, _run(tmp_path, "keep-origin-dtype", w=w))
    assert not check.passed and check.comparison.first_divergent_variable == "dense/kernel"
    explain_with_fusions_off(check, _run(tmp_path, "original-1x"), _run(tmp_path, "off"))
    assert (check.passed, check.cause) == (True, "fusion_rounding")
    assert check.notes == [
        "fusion rounding: 0.00125; with fusions off: 0 (within 1e-05): the fused kernels add in "
        "another order; with every fusion off the migrated script matches the original"
    ]


def test_a_fusion_beyond_rounding_is_named_for_bisect(tmp_path: Path) -> None:
    check = _exact(tmp_path, _run(tmp_path, "keep-origin-dtype", [2.0, 1.5, 1.3, 1.1]))
    explain_with_fusions_off(check, _run(tmp_path, "original-1x"), _run(tmp_path, "off"))
    assert (check.passed, check.cause) == (False, "fusion")
    assert check.notes[-1].startswith("a fusion changes the result: 0.1 with fusions on, 0 with")
    assert "tf2npu bisect fusion" in check.notes[-1]


@pytest.mark.parametrize(("races", "cause"), [([], "divergence"), ([RACE], "race")])
def test_a_divergence_that_stays_with_fusions_off_is_not_rounding(
    tmp_path: Path, races: list[dict[str, Any]], cause: str
) -> None:
    broken = [2.0, 1.5, 1.21, 1.0]
    check = _exact(tmp_path, _run(tmp_path, "keep-origin-dtype", broken))
    off = _run(tmp_path, "off", broken, summary={"races": races})
    explain_with_fusions_off(check, _run(tmp_path, "original-1x"), off)
    assert (check.passed, check.cause) == (False, cause)
    assert check.notes[-1].startswith(
        "not fusion rounding: with every fusion off the run still differs (0.00833; first "
        "divergent step 3"
    )


def test_fusions_off_runs_only_for_a_failed_check_of_a_run_with_fusions(tmp_path: Path) -> None:
    fused = _run(tmp_path, "keep-origin-dtype", [2.0, 1.5, 1.3, 1.0], summary={"fusions": {"a": 1}})
    check = _exact(tmp_path, fused)
    assert needs_fusions_off(check, fused)
    unfused = _run(tmp_path / "u", "keep-origin-dtype", [2.0, 1.5, 1.3, 1.0])
    assert not needs_fusions_off(_exact(tmp_path / "u", unfused), unfused)
    assert not needs_fusions_off(_exact(tmp_path / "p", _run(tmp_path / "p", "x")), fused)


def test_the_fusions_off_trial_switches_every_fusion_off(tmp_path: Path) -> None:
    plan = _plan(tmp_path, options=("fusion_switch_file=mine.json", "mix_compile_mode=true"))
    trial = plan.fusions_off_trial()
    switch = tmp_path / "fusions_off.json"
    assert trial.report_dir == tmp_path / "keep-origin-dtype-fusions-off"
    assert trial.spec.options == (
        "mix_compile_mode=true", "precision_mode=must_keep_origin_dtype",
        f"fusion_switch_file={switch}", "deterministic=1",
    )  # fmt: skip
    assert json.loads(switch.read_text()) == {
        "Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}
    }


def test_run_verify_runs_fusions_off_when_keep_origin_dtype_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tf2npu.debug.verify import checks as verify

    w = W.copy()
    w[1, 0] += 2.0 * 1.25e-3
    made: list[str] = []

    def fake(trial: Any, timeout: float | None = None) -> TrialResult:
        name = trial.report_dir.name
        made.append(name)
        run = _run(trial.report_dir.parent / "made", name, w=w if name == NAMES[2] else W,
                   summary={"fusions": {"matmul_biasadd": 2}} if name == NAMES[2] else {})  # fmt: skip
        return run.result

    monkeypatch.setattr(verify, "run_trial", fake)
    checks, runs = run_verify(_plan(tmp_path))
    assert sorted(made) == sorted([*NAMES, "keep-origin-dtype-fusions-off"])
    exact = next(c for c in checks if c.name == "keep_origin_dtype")
    assert (exact.passed, exact.cause) == (True, "fusion_rounding")
    assert "keep-origin-dtype-fusions-off" in report_json(checks, runs, _plan(tmp_path))["runs"]


def _tree(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("") if "." in path.name else path.mkdir(exist_ok=True)


def test_migrated_runs_start_where_the_original_runs_do_in_their_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = tmp_path / "deepfm" / "example" / "main.py"
    migrated = tmp_path / "m" / "deepfm" / "example" / "main.py"
    files = ("example/main.py", "example/config.py", "example/data/train.csv", "DeepFM.py")
    _tree(tmp_path / "deepfm", *files, "example/tf2npu-run/run_summary.json")
    _tree(tmp_path / "m" / "deepfm", *files)
    assert migrated_cwd(original.parent, original, migrated) == migrated.parent
    assert migrated_cwd(tmp_path / "deepfm", original, migrated) == tmp_path / "m" / "deepfm"
    # the caller's folder outside the original's tree, or a tree of another shape: unchanged
    assert migrated_cwd(tmp_path / "elsewhere", original, migrated) is None
    assert migrated_cwd(tmp_path / "deepfm", original, tmp_path / "m" / "main.py") is None
    assert migrated_cwd(tmp_path, original, tmp_path / "x" / "example" / "main.py") is None
    monkeypatch.chdir(tmp_path / "deepfm" / "example")
    trials = VerifyPlan(original, migrated, tmp_path / "out").trials()
    assert trials["original-1"].cwd is None
    assert trials["keep-origin-dtype"].cwd == migrated.parent
    assert trials["precision-mode"].cwd == migrated.parent


def test_a_single_migrated_file_runs_in_the_callers_folder(tmp_path: Path) -> None:
    # tf2npu migrate train.py -o npu/train.py: ./data is only beside the original
    _tree(tmp_path, "train.py", "data/x.csv", "npu/train.py")
    assert migrated_cwd(tmp_path, tmp_path / "train.py", tmp_path / "npu" / "train.py") is None
    # a folder migrated elsewhere without the data the script reads
    _tree(tmp_path / "m", "train.py")
    assert migrated_cwd(tmp_path, tmp_path / "train.py", tmp_path / "m" / "train.py") is None
    assert migrated_cwd(tmp_path, tmp_path / "train.py", tmp_path / "gone" / "train.py") is None


def test_runs_that_fetched_no_scalar_are_judged_on_variables_and_say_so(tmp_path: Path) -> None:
    runs = {name.replace("-", "_"): _run(tmp_path, name, []) for name in NAMES}
    exact = _judge(tmp_path, **runs)["keep_origin_dtype"]
    assert exact["passed"] and exact["steps_compared"] == 0
    assert exact["max_rel_diff"] is None  # no figure, not a 0 that reads as agreement
    assert any("no scalar was compared" in note for note in exact["notes"])
    moved = W.copy()
    moved[0, 0] += 0.5
    runs["keep_origin_dtype"] = _run(tmp_path / "x", "keep-origin-dtype", [], w=moved)
    assert (
        _judge(tmp_path, **runs)["keep_origin_dtype"]["first_divergent_variable"] == "dense/kernel"
    )

"""A trial's overrides as options and engine overrides, and the readers of a trial's folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tf2npu.config.overrides import EngineOverrides, FusionOverride, KeepFp32
from tf2npu.debug.bisect.lab import OVERRIDE_SOURCE, overrides, read_instances, read_lowered
from tf2npu.debug.bisect.metric import FusionInstance, LoweredNode
from tf2npu.debug.bisect.search import Config


def test_a_plain_trial_only_records_and_is_deterministic(tmp_path: Path) -> None:
    options, engine = overrides(Config(), tmp_path, ["enable_dump=false"])
    assert options == ("enable_dump=false", "deterministic=1")
    assert engine == EngineOverrides()
    assert list(tmp_path.iterdir()) == []


def test_the_users_deterministic_wins(tmp_path: Path) -> None:
    assert overrides(Config(), tmp_path, ["deterministic=0"])[0] == ("deterministic=0",)


def test_fusions_off_go_into_the_engine_overrides(tmp_path: Path) -> None:
    config = Config(fusion_off=(("gelu_tanh", ""), ("matmul_biasadd", "l0/MatMul")))
    _, engine = overrides(config, tmp_path, [])
    assert engine == EngineOverrides(
        FusionOverride(
            frozenset({"gelu_tanh"}), frozenset({("matmul_biasadd", "l0/MatMul")}), OVERRIDE_SOURCE
        )
    )
    assert list(tmp_path.iterdir()) == []


def test_precision_mode_and_black_list_replace_the_users_and_merge_the_mixlist(
    tmp_path: Path,
) -> None:
    user = tmp_path / "mine.json"
    user.write_text(json.dumps({
        "black-list": {"to-add": ["Exp"], "to-remove": ["ReduceSumD", "Log"]},
        "white-list": {"to-add": ["ReduceSumD", "Tanh"]},
    }))  # fmt: skip
    folder = tmp_path / "t"
    folder.mkdir()
    config = Config(precision_mode="allow_mix_precision", black_list=("ReduceSumD",))
    options, _ = overrides(config, folder, ["precision_mode=force_fp32", f"modify_mixlist={user}"])
    assert options == (
        "deterministic=1",
        "precision_mode=allow_mix_precision",
        f"modify_mixlist={(folder / 'modify_mixlist.json').absolute()}",
    )
    assert json.loads((folder / "modify_mixlist.json").read_text()) == {
        "black-list": {"to-add": ["Exp", "ReduceSumD"], "to-remove": ["Log"]},
        "white-list": {"to-add": ["Tanh"]},
    }


def test_kept_nodes_go_into_the_engine_overrides(tmp_path: Path) -> None:
    _, engine = overrides(Config(keep_fp32=("a/Sum", "b/Exp")), tmp_path, [])
    assert engine == EngineOverrides(
        keep_fp32=KeepFp32(frozenset({"a/Sum", "b/Exp"}), OVERRIDE_SOURCE)
    )


def test_the_loss_is_the_training_series_then_the_last_evaluation() -> None:
    from types import SimpleNamespace

    from tf2npu.debug.bisect.lab import _losses

    def step(train: bool, value: float) -> SimpleNamespace:
        return SimpleNamespace(train=train, scalars={"loss:0": value})

    def loss_series(steps: list[SimpleNamespace]) -> list[float]:  # records.loss_series, in short
        train = [s for s in steps if s.train]
        return [s.scalars["loss:0"] for s in (train or steps[-1:])]

    records = SimpleNamespace(loss_series=loss_series)
    trains_and_evaluates = [step(True, 3.0), step(True, 2.0), step(False, 2.5)]
    assert _losses(records, trains_and_evaluates) == [3.0, 2.0, 2.5]
    assert _losses(records, [step(True, 3.0), step(True, 2.0)]) == [3.0, 2.0]
    assert _losses(records, [step(False, 2.5)]) == [2.5]  # evaluates only: counted once


def test_read_instances(tmp_path: Path) -> None:
    path = tmp_path / "fusion_instances.json"
    assert read_instances(path) == ()
    path.write_text(json.dumps([
        {"graph": 1, "rule": "matmul_biasadd", "root": "d/MatMul", "nodes": ["d/MatMul", "d/BiasAdd"],
         "where": "train.py:3"},
        {"graph": 2, "rule": "gelu_tanh", "root": "g/mul", "nodes": ["g/mul"], "where": None},
    ]))  # fmt: skip
    assert read_instances(path) == (
        FusionInstance("matmul_biasadd", "d/MatMul", ("d/MatMul", "d/BiasAdd"), "train.py:3"),
        FusionInstance("gelu_tanh", "g/mul", ("g/mul",), None),
    )


def test_read_lowered_reads_the_summary_precision_rows(tmp_path: Path) -> None:
    path = tmp_path / "run_summary.json"
    assert read_lowered(path) == ()  # no summary: nothing lowered
    path.write_text(json.dumps({"precision": [
        {"op": "s", "op_type": "ReduceSumD", "tf_type": "Sum", "dtype": "float16",
         "reason": "follows_lowered", "where": "t.py:1 in f", "graph": 1},
        {"op": "k", "op_type": "Exp", "tf_type": "Exp", "dtype": "float32",
         "reason": "deny_list", "where": "", "graph": 1},
        {"op_type": "Exp", "dtype": "float16"},  # no op name: skipped
        "damaged",
    ]}))  # fmt: skip
    assert read_lowered(path) == (LoweredNode("s", "Sum", "ReduceSumD", "t.py:1 in f"),)
    path.write_text("[]")  # not a summary object
    assert read_lowered(path) == ()
    path.write_text("{")
    with pytest.raises(ValueError, match="Expecting"):
        read_lowered(path)


def test_script_lab_runs_one_trial_and_reads_its_folder(tmp_path: Path) -> None:
    from tf2npu.debug.bisect.lab import ScriptLab
    from tf2npu.debug.bisect.metric import Metric
    from tf2npu.debug.trials import TrialResult

    checkpoints = tmp_path / "model"
    (checkpoints / "old").mkdir(parents=True)
    seen = []

    def runner(trial, timeout):  # type: ignore[no-untyped-def]
        seen.append((trial, timeout, checkpoints.exists()))
        step = {"run": 0, "signature": 1, "train": True, "step": 1, "npu": True,
                "scalars": {"loss:0": 2.5}, "nonfinite": []}  # fmt: skip
        (trial.report_dir / "steps.jsonl").write_text(json.dumps(step) + "\n")
        (trial.report_dir / "fusion_instances.json").write_text(
            json.dumps(
                [{"graph": 1, "rule": "gelu_tanh", "root": "g", "nodes": ["g"], "where": None}]
            )
        )
        (trial.report_dir / "run_summary.json").write_text(json.dumps({"injected_faults": []}))
        return TrialResult(0, trial.report_dir, None, 1.5)

    folder = tmp_path / "t"
    folder.mkdir()
    lab = ScriptLab(tmp_path / "train.py", ("--steps", "2"), ("enable_dump=false",), Metric.LOSS,
                    timeout=30.0, runner=runner, clean=(checkpoints,))  # fmt: skip
    evidence = lab.run(Config(fusion_off=(("gelu_tanh", "g"),)), folder)
    trial, timeout, checkpoints_left = seen[0]
    spec = trial.spec
    assert (spec.script, spec.script_args, spec.report_dir, spec.npu) == (
        tmp_path / "train.py", ("--steps", "2"), folder, True
    )  # fmt: skip
    assert spec.options == ("enable_dump=false", "deterministic=1")
    assert (spec.record, spec.quiet) == (True, True)
    assert trial.deterministic and timeout == 30.0 and not checkpoints_left
    assert spec.engine.fusion.instances_off == {("gelu_tanh", "g")}
    assert trial.env == {}
    assert evidence.loss == (2.5,) and evidence.seconds == 1.5 and evidence.status == 0
    assert evidence.instances == (FusionInstance("gelu_tanh", "g", ("g",), None),)
    assert lab.load(folder, 0, 1.5) == evidence

"""``tf2npu bisect``: usage errors, and the report, files and exit codes over a fake lab."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from tf2npu.cli.main import main
from tf2npu.config.faults import FaultSpec
from tf2npu.debug.bisect.metric import FusionInstance, LoweredNode
from tf2npu.testing.fake_lab import FakeLab
from tf2npu.testing.hostile import finish, start_tf2npu, stop_group, wait_for

FIRED = [
    FusionInstance("matmul_biasadd", f"l{i}/dense/MatMul", (f"l{i}/dense/MatMul", f"l{i}/dense/BiasAdd"),
                   f"train.py:{10 + i}")
    for i in range(4)
] + [FusionInstance("gelu_tanh", "l0/gelu/mul_3", ("l0/gelu/mul_3",), "train.py:30")]  # fmt: skip


def bisect(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["bisect", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text("print('loss', 1.0)\n")
    return path


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch) -> FakeLab:
    """The CLI's lab replaced by a fake whose fault is instance l2/dense/MatMul."""
    fake = FakeLab(
        FIRED,
        frozenset({("matmul_biasadd", "l2/dense/MatMul")}),
        lowered=(LoweredNode("l0/Sum", "Sum", "ReduceSumD", "train.py:7"),
                 LoweredNode("l0/MatMul", "MatMul", "MatMulV2", "train.py:5")),
        bad_types=frozenset({"ReduceSumD"}),
    )  # fmt: skip
    made: list[dict[str, Any]] = []

    def factory(
        script: Path,
        args: tuple[str, ...],
        options: tuple[str, ...],
        *rest: Any,
        clean: Any,
        faults: tuple[FaultSpec, ...] = (),
    ) -> FakeLab:
        made.append({"script": script, "args": args, "options": options})
        if clean:
            made[-1]["clean"] = clean
        if faults:
            made[-1]["faults"] = ";".join(fault.text for fault in faults)
        return fake

    monkeypatch.setattr("tf2npu.debug.bisect.lab.ScriptLab", factory)
    fake.made = made  # type: ignore[attr-defined]
    return fake


def test_fusion_names_the_instance_and_writes_both_switch_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, script: Path, lab: FakeLab
) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = bisect(
        capsys, "fusion", "--out", str(out), "--", str(script), "--steps", "3"
    )
    assert code == 0
    assert lab.made == [{"script": script, "args": ("--steps", "3"), "options": ()}]  # type: ignore[attr-defined]
    assert "tf2npu bisect fusion: instance" in stdout
    assert "rule      matmul_biasadd (Ascend: MatMulBiasAddFusionPass)" in stdout
    assert "instance  root l2/dense/MatMul  created at train.py:12" in stdout
    assert "nodes     l2/dense/MatMul, l2/dense/BiasAdd" in stdout
    assert "runs 5 (bound 6)" in stdout
    assert "tf2npu bisect: 01-all-on: exit 0, loss 2 (0.5s)" in stderr
    assert json.loads((out / "fusion_switch.json").read_text()) == {
        "Switch": {"GraphFusion": {"MatMulBiasAddFusionPass": "off"}, "UBFusion": {}}
    }
    assert json.loads((out / "fusion_instances_off.json").read_text()) == {
        "off": [{"rule": "matmul_biasadd", "root": "l2/dense/MatMul"}]
    }
    assert stdout.splitlines()[-1] == f"  wrote {out.resolve() / 'bisect.html'}  the trials drawn"
    page = (out / "bisect.html").read_text(encoding="utf-8")
    assert "<title>tf2npu bisect fusion: instance</title>" in page
    assert page.count("<tr") == 1 + 5  # the header and the 5 trials


def test_fusion_json_has_the_stable_keys(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, script: Path, lab: FakeLab
) -> None:
    code, stdout, _ = bisect(
        capsys, "fusion", "--json", "--out", str(tmp_path / "o"), "--", str(script)
    )
    data = json.loads(stdout)
    assert code == 0
    assert {"kind", "rule", "aliases", "instance", "nodes", "runs", "switch_file", "mixlist_file",
            "metric_by_run"} <= set(data)  # fmt: skip
    assert (data["kind"], data["rule"], data["aliases"], data["instance"]) == (
        "fusion", "matmul_biasadd", ["MatMulBiasAddFusionPass"], "l2/dense/MatMul"
    )  # fmt: skip
    assert data["where"] == "train.py:12"
    assert data["tolerance"] == 1e-4  # the fusion default
    assert data["roots"] == ["l2/dense/MatMul"]
    assert data["runs"] == len(data["trials"]) == len(data["metric_by_run"]) == 5
    assert data["metric_by_run"]["01-all-on"] == 2.0
    assert data["metric_by_run"]["02-all-off"] == pytest.approx(1.0, abs=1e-3)
    assert data["mixlist_file"] is None
    assert data["page"] == str((tmp_path / "o" / "bisect.html").resolve())
    assert data["trials"][0]["distance"] == pytest.approx(1.0, rel=1e-3)
    assert data["trials"][0]["matches"] is False


def test_fusion_not_the_cause_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, script: Path, lab: FakeLab
) -> None:
    lab.culprits = frozenset()
    code, stdout, _ = bisect(capsys, "fusion", "--out", str(tmp_path / "o"), "--", str(script))
    assert code == 1
    assert "tf2npu bisect fusion: on_matches_off" in stdout
    assert not (tmp_path / "o" / "fusion_switch.json").exists()


def test_precision_writes_the_mixlist_and_the_keep_dtype_alternative(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, script: Path, lab: FakeLab
) -> None:
    out = tmp_path / "p"
    code, stdout, _ = bisect(capsys, "precision", "--json", "--out", str(out), "--", str(script))
    data = json.loads(stdout)
    assert code == 0, data["message"]
    assert (data["kind"], data["verdict"], data["types"], data["nodes"]) == (
        "precision", "found", ["ReduceSumD"], ["l0/Sum"]
    )  # fmt: skip
    assert json.loads((out / "modify_mixlist.json").read_text()) == {
        "black-list": {"to-add": ["ReduceSumD"]}
    }
    assert json.loads((out / "keep_fp32.json").read_text()) == {"nodes": ["l0/Sum"]}
    assert data["mixlist_file"] == str(out / "modify_mixlist.json")
    assert "with npu_scope.keep_dtype_scope():" in data["keep_dtype_scope"]
    assert "'l0/Sum' (Sum)  # train.py:7" in data["keep_dtype_scope"]
    assert data["rerun"]["matches"] is True
    assert data["tolerance"] == 0.01  # the precision default


def test_running_again_resumes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, script: Path, lab: FakeLab
) -> None:
    argv = ("fusion", "--out", str(tmp_path / "o"), "--", str(script))
    bisect(capsys, *argv)
    runs = len(lab.runs)
    code, stdout, stderr = bisect(capsys, *argv)
    assert code == 0 and len(lab.runs) == runs
    assert stderr.count("(resumed)") == 5 and "(resumed)" in stdout
    assert stderr.splitlines()[0] == (
        "tf2npu bisect: per-trial timeout: 3600 s for the reference run, then 4x its time "
        "(at least 300 s); --timeout S sets one"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "give what to bisect: tf2npu bisect fusion -- SCRIPT"),
        (("fusion",), "no SCRIPT given; put it after `--`, e.g. tf2npu bisect fusion -- train.py"),
        (("fusion", "--", "missing.py"), "SCRIPT 'missing.py' does not exist"),
        (
            ("fusion", "--tolerance", "0", "--", "{script}"),
            "--tolerance 0: give a relative difference > 0",
        ),
        (("fusion", "--tolerance", "nan", "--", "{script}"), "--tolerance nan"),
        (("fusion", "--timeout", "-1", "--", "{script}"), "--timeout -1: give seconds > 0"),
        (("fusion", "--timeout", "nan", "--", "{script}"), "--timeout nan: give seconds > 0"),
        (("fusion", "--timeout", "inf", "--", "{script}"), "--timeout inf: give seconds > 0"),
        (
            ("fusion", "--option", "precison_mode=x", "--", "{script}"),
            "did you mean 'precision_mode'",
        ),
        (("fusion", "--option", "modify_mixlist=/nope.json", "--", "{script}"), "/nope.json"),
        (
            ("precision", "--option", "precision_mode=force_fp16", "--", "{script}"),
            "bisect precision sets precision_mode in its trials; give the mode to test with --mode",
        ),
        (
            ("precision", "--mode", "must_keep_origin_dtype", "--", "{script}"),
            "is the reference itself",
        ),
        (
            ("precision", "--mode", "allow_mix", "--", "{script}"),
            "unknown precision_mode 'allow_mix'",
        ),
    ],
)
def test_usage_errors(
    capsys: pytest.CaptureFixture[str], script: Path, argv: tuple[str, ...], message: str
) -> None:
    argv = tuple(a.replace("{script}", str(script)) for a in argv)
    code, _, err = bisect(capsys, *argv)
    assert code == 2
    assert message in err


def test_clean_folders_reach_the_lab(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, script: Path, lab: FakeLab
) -> None:
    argv = ("fusion", "--clean", str(tmp_path / "model"), "--out", str(tmp_path / "o"))
    code, _, _ = bisect(capsys, *argv, "--", str(script))
    assert code == 0
    assert lab.made[0]["clean"] == ((tmp_path / "model").resolve(),)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("clean", "message"),
    [
        (".", "would remove the current folder"),
        ("{tmp}", "would remove SCRIPT"),
        ("{tmp}/o/trials", "would remove --out"),
        ("{tmp}/train.py", "would remove SCRIPT"),
    ],
)
def test_clean_refuses_folders_that_must_stay(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    script: Path,
    clean: str,
    message: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    clean = clean.replace("{tmp}", str(tmp_path))
    code, _, err = bisect(
        capsys, "fusion", "--clean", clean, "--out", str(tmp_path / "o"), "--", str(script)
    )
    assert code == 2 and message in err


def test_a_script_that_is_not_python(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    other = tmp_path / "train.sh"
    other.write_text("")
    code, _, err = bisect(capsys, "fusion", "--", str(other))
    assert code == 2 and "is not a .py file" in err


def test_an_out_holding_another_bisection(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, script: Path, lab: FakeLab
) -> None:
    bisect(capsys, "fusion", "--out", str(tmp_path / "o"), "--", str(script))
    code, _, err = bisect(capsys, "fusion", "--out", str(tmp_path / "o"), "--", str(script), "--x")
    assert code == 2
    assert "holds the state of another bisection (args was [], now ['--x'])" in err


# -- hostile input: a resumed trial whose evidence is gone, a damaged state file --------------


def test_a_resumed_trial_whose_folder_was_deleted_is_run_again(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, script: Path, lab: FakeLab
) -> None:
    argv = ("fusion", "--out", str(tmp_path / "o"), "--", str(script))
    bisect(capsys, *argv)
    runs = len(lab.runs)
    shutil.rmtree(tmp_path / "o" / "trials" / "01-all-on")
    code, again, stderr = bisect(capsys, *argv)
    assert code == 0 and len(lab.runs) == runs + 1
    assert lab.runs[-1] == lab.runs[0]  # the all-on trial, the one whose folder went
    assert (tmp_path / "o" / "trials" / "01-all-on" / "config.json").is_file()
    assert stderr.count("(resumed)") == 4
    assert "l2/dense/MatMul" in again


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[" * 100_000 + "]" * 100_000, "bisect_state.json: the JSON nests too deep"),
        ('{"identity": {}, "trials": {"k": {"number": 1e999, "label": "x", "config": {}, "folder": "f", "status": 0, "seconds": 1}}}', "cannot convert float infinity to integer"),
        ('{"identity": {}, "trials": [1, 2]}', "'list' object has no attribute 'values'"),
        ("\xff", "bisect_state.json: invalid JSON"),
    ],
    ids=["deep", "1e999", "wrong-type", "not-json"],
)  # fmt: skip
def test_a_damaged_state_file_is_named_with_the_fix(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    script: Path,
    lab: FakeLab,
    text: str,
    why: str,
) -> None:
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "bisect_state.json").write_text(text)
    code, out, err = bisect(capsys, "fusion", "--out", str(tmp_path / "o"), "--", str(script))
    assert (code, out) == (2, "")
    assert err.startswith(
        f"tf2npu bisect: error: --out '{tmp_path / 'o'}' holds a bisect_state.json that cannot be read ("
    )
    assert why in err and err.endswith(
        "delete it to start the bisection afresh, or give another --out\n"
    )
    assert lab.runs == []


@pytest.mark.slow  # starts tf2npu processes and signals them
@pytest.mark.parametrize(
    ("signum", "code", "message"),
    [(signal.SIGTERM, 143, "tf2npu bisect: interrupted by SIGTERM\n"), (signal.SIGINT, 130, "tf2npu bisect: interrupted\n")],
    ids=["sigterm", "ctrl-c"],
)  # fmt: skip
def test_a_signal_stops_bisect_and_its_trial(
    tmp_path: Path, signum: int, code: int, message: str
) -> None:
    script = tmp_path / "hang.py"
    script.write_text(
        "import subprocess, time\nsubprocess.Popen(['sleep', '300'])\ntime.sleep(300)\n"
    )
    started = start_tf2npu(["bisect", "fusion", "--out", "o", "--", str(script)], tmp_path)
    try:
        assert wait_for(started.tag, "sleep 300", timeout=120), "the trial never started"
        os.kill(started.process.pid, signum)
        ended = finish(started, timeout=30)
    finally:
        stop_group(started.process.pid)
    assert (ended.code, ended.left, ended.traceback) == (code, (), False), ended.err
    assert ended.err.endswith(message)
    assert not (tmp_path / "o" / "bisect_state.json").exists()  # the cut-off trial is not kept


# -- drills and labels ----------------------------------------------------------------------------


def test_inject_fault_reaches_every_trial_and_is_said(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    script: Path,
    lab: FakeLab,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TF2NPU_INJECT_FAULT", raising=False)
    spec = "fusion:matmul_biasadd@l2/dense/MatMul=scale:2"
    argv = ("fusion", "--inject-fault", spec, "--inject-fault", "op:x=nan")
    code, _, err = bisect(capsys, *argv, "--out", str(tmp_path / "o"), "--", str(script))
    assert code == 0
    assert lab.made[0]["faults"] == f"{spec};op:x=nan"  # type: ignore[attr-defined]
    assert f"FAULT INJECTION: every trial runs with --inject-fault {spec};op:x=nan\n" in err


def test_a_bad_inject_fault_spec_is_a_usage_error_of_bisect(
    capsys: pytest.CaptureFixture[str], script: Path
) -> None:
    code, _, err = bisect(
        capsys, "fusion", "--inject-fault", "fusion:nosuch=nan", "--", str(script)
    )
    assert code == 2
    assert "--inject-fault" in err and "nosuch" in err
    assert "usage: tf2npu [-h]" not in err  # not the top-level usage


def test_an_inherited_inject_fault_variable_is_said(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    script: Path,
    lab: FakeLab,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TF2NPU_INJECT_FAULT", "op:x=nan")
    code, _, err = bisect(capsys, "fusion", "--out", str(tmp_path / "o"), "--", str(script))
    assert code == 0
    assert "TF2NPU_INJECT_FAULT=op:x=nan is set in the environment" in err
    assert lab.made[0]["faults"] == "op:x=nan"  # type: ignore[attr-defined]
    code, _, err = bisect(
        capsys, "fusion", "--inject-fault", "op:y=nan", "--out", str(tmp_path / "p"), "--",
        str(script),
    )  # fmt: skip
    assert "(instead of the inherited TF2NPU_INJECT_FAULT=op:x=nan)" in err


def test_no_two_trials_share_a_label(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, script: Path, lab: FakeLab
) -> None:
    for kind in ("fusion", "precision"):
        code, stdout, _ = bisect(
            capsys, kind, "--json", "--out", str(tmp_path / kind), "--", str(script)
        )
        assert code == 0
        labels = [trial["label"] for trial in json.loads(stdout)["trials"]]
        assert len(set(labels)) == len(labels), labels

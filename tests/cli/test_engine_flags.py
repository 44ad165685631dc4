"""``tf2npu run --fusion-instances / --keep-fp32`` and their environment variables."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tf2npu import runtime
from tf2npu.cli.engine_flags import add_engine_flags, engine_overrides, environment_overrides
from tf2npu.cli.main import main
from tf2npu.errors import ConfigError, UnknownNameError
from tf2npu.runtime import job


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_engine_flags(parser)
    return parser.parse_args(list(argv))


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_nothing_asked_is_no_override() -> None:
    assert not engine_overrides(parse(), {})


def test_the_environment_names_the_files(tmp_path: Path) -> None:
    off = write(tmp_path / "off.json", {"off": [{"rule": "layer_norm", "root": "ln/add"}]})
    keep = write(tmp_path / "keep.json", {"nodes": ["loss/Sum"]})
    env = {"TF2NPU_FUSION_INSTANCES": str(off), "TF2NPU_KEEP_FP32": str(keep)}
    got = engine_overrides(parse(), env)
    assert got.fusion.instances_off == {("layer_norm", "ln/add")}
    assert got.fusion.source == f"TF2NPU_FUSION_INSTANCES file {str(off)!r}"
    assert got.keep_fp32.nodes == {"loss/Sum"}


def test_a_flag_wins_over_its_variable(tmp_path: Path) -> None:
    env_file = write(tmp_path / "env.json", {"off": [{"rule": "layer_norm"}]})
    flag_file = write(tmp_path / "flag.json", {"off": [{"rule": "gelu_tanh"}]})
    got = engine_overrides(
        parse("--fusion-instances", str(flag_file)), {"TF2NPU_FUSION_INSTANCES": str(env_file)}
    )
    assert got.fusion.rules_off == {"gelu_tanh"}


def test_errors_name_the_flag_or_the_variable(tmp_path: Path) -> None:
    bad = write(tmp_path / "off.json", {"off": [{"rule": "layer_nrom"}]})
    with pytest.raises(UnknownNameError, match=r"^--fusion-instances file .*: unknown fusion "
                       r"rule 'layer_nrom'; did you mean 'layer_norm'\?"):  # fmt: skip
        engine_overrides(parse("--fusion-instances", str(bad)), {})
    with pytest.raises(ConfigError, match=r"^TF2NPU_KEEP_FP32 = .*missing.json.*cannot read"):
        engine_overrides(parse(), {"TF2NPU_KEEP_FP32": str(tmp_path / "missing.json")})


def test_run_refuses_a_bad_file_before_the_script_runs(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(job, "_enter_tf1_environment", lambda: None)
    script = tmp_path / "t.py"
    script.write_text("open('ran', 'w')\n")
    bad = write(tmp_path / "off.json", {"off": "layer_norm"})
    code = main(["run", "--fusion-instances", str(bad), "--report-dir", str(tmp_path / "r"),
                 str(script)])  # fmt: skip
    assert code == 2
    assert 'expected {"off": [{"rule"' in capsys.readouterr().err
    assert not (tmp_path / "ran").exists()
    runtime.reset_stats()


def test_fault_specs_come_from_the_flags_else_the_variable() -> None:
    env = {"TF2NPU_INJECT_FAULT": "op:a=nan;op:b=bias:1"}
    assert [f.node for f in engine_overrides(parse(), env).faults] == ["a", "b"]
    flags = parse("--inject-fault", "op:c=scale:2", "--inject-fault", "fusion:gelu_tanh=nan")
    assert [f.text for f in engine_overrides(flags, env).faults] == [
        "op:c=scale:2",
        "fusion:gelu_tanh=nan",
    ]
    with pytest.raises(ConfigError, match=r"^TF2NPU_INJECT_FAULT spec 'op:a=nann': KIND"):
        engine_overrides(parse(), {"TF2NPU_INJECT_FAULT": "op:a=nann"})


def test_a_fault_under_no_npu_is_refused_as_a_flag_and_dropped_from_the_environment(
    tmp_path, capsys, monkeypatch
) -> None:
    monkeypatch.setattr(job, "_enter_tf1_environment", lambda: None)
    script = tmp_path / "t.py"
    script.write_text("")
    argv = ["run", "--no-npu", "--report-dir", str(tmp_path / "r"), "--quiet"]
    assert main([*argv, "--inject-fault", "op:a=nan", str(script)]) == 2
    assert "--inject-fault corrupts NPU sessions only" in capsys.readouterr().err
    monkeypatch.setenv("TF2NPU_INJECT_FAULT", "op:a=nan")
    assert main([*argv, str(script)]) == 0
    assert "TF2NPU_INJECT_FAULT ignored: --no-npu" in capsys.readouterr().err
    summary = json.loads((tmp_path / "r" / "run_summary.json").read_text())
    assert summary["injected_faults"] == []
    runtime.reset_stats()


DRILL = """\
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [2, 3], name="x")
y = x
for i in range(2):
    w = tf.constant(np.eye(3, dtype=np.float32), name=f"d{i}/w")
    y = tf.nn.bias_add(tf.matmul(y, w), tf.constant([1.0, 2.0, 3.0]), name=f"d{i}/add")
config = tf.ConfigProto()
config.graph_options.rewrite_options.custom_optimizers.add().name = "NpuOptimizer"
with tf.Session(config=config) as sess:
    print("out", sess.run(y, {x: np.zeros((2, 3), np.float32)}).tolist())
"""


@pytest.mark.tf
@pytest.mark.slow
def test_a_drill_end_to_end(tmp_path) -> None:
    # A subprocess: the TF1 environment tf2npu run enters would outlive an in-process run.
    script = tmp_path / "drill.py"
    script.write_text(DRILL)
    report = tmp_path / "r"
    off = write(tmp_path / "off.json", {"off": [{"rule": "matmul_biasadd", "root": "d0/add"}]})
    done = subprocess.run(
        [sys.executable, "-m", "tf2npu", "run", "--report-dir", str(report),
         "--fusion-instances", str(off), "--inject-fault", "fusion:matmul_biasadd@d1/add=scale:10",
         "--inject-fault", "op:nowhere=nan", str(script)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "out [[20.0, 40.0, 60.0], [20.0, 40.0, 60.0]]" in done.stdout  # (0+1+1)*10, ...
    assert "WARNING: FAULT INJECTION ACTIVE (fusion:matmul_biasadd@d1/add=scale:10; " in (
        done.stderr
    )
    assert "op:nowhere=nan -> hit nothing" in done.stderr
    summary = json.loads((report / "run_summary.json").read_text())
    (hit,) = summary["injected_faults"][0]["applied_to"]
    assert hit.startswith("d1/add/_tf2npu_")
    assert summary["injected_faults"][1] == {"spec": "op:nowhere=nan", "applied_to": []}
    assert summary["fusions"] == {"matmul_biasadd": 1}
    instances = json.loads((report / "fusion_instances.json").read_text())
    assert [(i["root"], i["where"]) for i in instances] == [("d1/add", f"{script}:8")]


def test_environment_overrides_are_what_the_variables_alone_name() -> None:
    assert environment_overrides({}) == engine_overrides(parse(), {})
    env = {"TF2NPU_INJECT_FAULT": "op:a=nan"}
    assert [f.node for f in environment_overrides(env).faults] == ["a"]

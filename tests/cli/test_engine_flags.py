"""``tf2npu run --fusion-instances / --keep-fp32`` and their environment variables."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tf2npu import runtime
from tf2npu.cli import run as run_cli
from tf2npu.cli.engine_flags import add_engine_flags, engine_overrides
from tf2npu.cli.main import main
from tf2npu.errors import ConfigError, UnknownNameError


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
    monkeypatch.setattr(run_cli, "_enter_tf1_environment", lambda: None)
    script = tmp_path / "t.py"
    script.write_text("open('ran', 'w')\n")
    bad = write(tmp_path / "off.json", {"off": "layer_norm"})
    code = main(["run", "--fusion-instances", str(bad), "--report-dir", str(tmp_path / "r"),
                 str(script)])  # fmt: skip
    assert code == 2
    assert 'expected {"off": [{"rule"' in capsys.readouterr().err
    assert not (tmp_path / "ran").exists()
    runtime.reset_stats()

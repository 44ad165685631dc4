"""``tf2npu bisect fusion`` end to end: real trials find a fault injected into one instance.

The float16-overflow benchmark model (two dense layers; the first with a Relu, so its fused
MatMul grows a second instance) runs under must_keep_origin_dtype with a drill fault in the
first layer's fused node; each trial is a ``tf2npu run --record`` subprocess.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.tf,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs TensorFlow"),
    # the drill faults and the instance switch come with the engine overrides (SPEC-12)
    pytest.mark.skipif(
        importlib.util.find_spec("tf2npu.config.faults") is None, reason="needs fault injection"
    ),
]

MODEL = Path(__file__).resolve().parents[2] / "benchmarks" / "bisect_models" / "fp16_overflow.py"
TIMEOUT = 600


def test_bisect_fusion_names_the_faulty_instance_and_its_fix_works(tmp_path: Path) -> None:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
           "TF2NPU_INJECT_FAULT": "fusion:matmul_biasadd@hidden/Relu=scale:1.5"}  # fmt: skip
    out = tmp_path / "out"
    command = [sys.executable, "-m", "tf2npu", "bisect", "fusion", "--json", "--out", str(out),
               "--option", "precision_mode=must_keep_origin_dtype", "--", str(MODEL), "--steps", "3"]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=TIMEOUT, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert (data["verdict"], data["rule"], data["instance"]) == (
        "instance",
        "matmul_biasadd",
        "hidden/Relu",
    )
    assert data["aliases"] == ["MatMulBiasAddFusionPass"]
    assert set(data["nodes"]) == {"hidden/Relu", "hidden/BiasAdd", "hidden/MatMul"}
    line = next(
        i for i, text in enumerate(MODEL.read_text().splitlines(), 1) if 'name="hidden"' in text
    )
    assert data["where"] == f"{MODEL}:{line}"
    assert data["runs"] <= data["bound"] == 0 + 1 + 3
    assert json.loads(Path(data["instances_file"]).read_text()) == {"off": [
        {"rule": "matmul_biasadd", "root": "hidden/Relu"}, {"rule": "matmul_biasadd", "root": "hidden/BiasAdd"},
    ]}  # fmt: skip
    # the run with the instance switch it wrote matches the all-off run
    report = tmp_path / "check"
    check = subprocess.run(
        [sys.executable, "-m", "tf2npu", "run", "--quiet", "--record", "--report-dir", str(report),
         "--option", "precision_mode=must_keep_origin_dtype", "--option", "deterministic=1",
         "--fusion-instances", data["instances_file"], str(MODEL), "--steps", "3"],
        capture_output=True, text=True, env=env, timeout=TIMEOUT, cwd=tmp_path,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr[-3000:]
    summary = json.loads((report / "run_summary.json").read_text())
    assert summary["injected_faults"][0]["applied_to"] == []


TRAINING = Path(__file__).resolve().parent / "transformer_training" / "train.py"


@pytest.mark.parametrize(
    ("rule", "root", "member"),
    [
        ("layer_norm", "block_1/ln_2/add_1", "block_1/ln_2/Mean"),
        ("gelu_tanh", "block_0/mul_3", "block_0/Tanh"),
    ],
)
def test_bisect_fusion_finds_a_fault_in_a_training_graph_fusion(
    tmp_path: Path, rule: str, root: str, member: str
) -> None:
    # a Transformer trained with Adam: gelu and layer norm fuse with their gradients (issue 23)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0",
           "TF2NPU_INJECT_FAULT": f"fusion:{rule}@{root}=scale:1.5"}  # fmt: skip
    command = [sys.executable, "-m", "tf2npu", "bisect", "fusion", "--json", "--out",
               str(tmp_path / "out"), "--option", "precision_mode=must_keep_origin_dtype", "--",
               str(TRAINING), "--steps", "2"]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=TIMEOUT, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert (data["verdict"], data["rule"], data["instance"]) == ("instance", rule, root)
    assert member in data["nodes"]
    assert any(n.startswith("gradients/") for n in data["nodes"])  # its gradient ops too
    assert data["runs"] <= data["bound"]

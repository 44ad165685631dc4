"""Fusions in a training graph (issue 23): a Transformer trained with Sess.run and Adam.

``transformer_training/train.py`` (2 pre-LN blocks: ``tf.nn.moments`` + ``rsqrt`` layer norms
in block 0, GPT-2's ``reduce_mean``/``square`` ones in block 1, GPT-2's tanh GELU with
``tf.pow``, ``matmul + b`` dense layers) runs under ``tf2npu run`` with every fusion on and with
every fusion off (a ``fusion_switch_file``), both under ``must_keep_origin_dtype``, started
together. The fused run has the forward ops and their gradients fused (``Gelu``/``GeluGrad``,
``LayerNorm``/``LayerNormGrad``) and trains to the same losses.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.tf,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs TensorFlow"),
]

SCRIPT = Path(__file__).resolve().parent / "transformer_training" / "train.py"
TIMEOUT = 300
ALL_OFF = {"Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}}
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0",
       "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip


def _start(work: Path, name: str, *options: str) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "tf2npu", "run", "--quiet", "--report-dir", str(work / name),
            "--option", "precision_mode=must_keep_origin_dtype", *options, str(SCRIPT)]  # fmt: skip
    return subprocess.Popen(args, cwd=work, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


def _losses(proc: subprocess.Popen[str]) -> list[float]:
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err[-3000:]
    losses = [float(v) for v in re.findall(r"^step \d+ loss (\S+)$", out, re.M)]
    losses += [float(v) for v in re.findall(r"^final_loss=(\S+)$", out, re.M)]
    assert len(losses) == 5, out
    return losses


def test_a_transformer_trained_with_adam_fuses_gelu_and_layer_norm_with_the_same_losses(
    tmp_path: Path,
) -> None:
    off_file = tmp_path / "all_off.json"
    off_file.write_text(json.dumps(ALL_OFF))
    fused = _start(tmp_path, "on")
    plain = _start(tmp_path, "off", "--option", f"fusion_switch_file={off_file}")
    on_losses, off_losses = _losses(fused), _losses(plain)
    instances = json.loads((tmp_path / "on" / "fusion_instances.json").read_text())
    counts = collections.Counter(i["rule"] for i in instances)
    assert counts["gelu_tanh"] == 2 and counts["layer_norm"] == 4, counts
    assert counts["matmul_biasadd"] == 11, counts  # every matmul + b (the key has no bias)
    assert json.loads((tmp_path / "off" / "fusion_instances.json").read_text()) == []
    # the instances name the gradient ops they replaced too, by their TF names
    ln = next(i for i in instances if i["root"] == "block_1/ln_2/add_1")
    assert "block_1/ln_2/Mean" in ln["nodes"]
    assert any(n.startswith("gradients/block_1/ln_2/") and "_grad/" in n for n in ln["nodes"])
    gelu = next(i for i in instances if i["root"] == "block_0/mul_3")
    assert "gradients/block_0/Tanh_grad/TanhGrad" in gelu["nodes"]
    assert on_losses[0] == off_losses[0]  # the forward: the same values
    for on, off in zip(on_losses, off_losses, strict=True):
        assert on == pytest.approx(off, rel=1e-5), (on_losses, off_losses)
    assert on_losses[-1] < on_losses[0] * 0.8  # it trains

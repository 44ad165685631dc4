"""A BERT-style TF 1.15 pretraining script trains as written and after ``tf2npu migrate``.

``bert_style/`` is tf2npu's own model written with the TF 1.15 API patterns of google-research
BERT (TPUEstimator with use_tpu=False, tf.contrib layer_norm/data/tpu, a hand-written AdamW that
updates with tf.assign, a hand-written tanh GELU, tf.nn.dropout with a positional keep_prob,
init_from_checkpoint). The scripts run as ``tf2npu run`` subprocesses, started together to keep
the module under a minute on two cores; each test then checks one property of one run.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.tf,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs TensorFlow"),
]

EXE = Path(sys.executable).parent / "tf2npu"
SOURCE = Path(__file__).resolve().parent / "bert_style"
STEPS = 5
TIMEOUT = 300
#: The scripts import their sibling modules: leave no __pycache__ in bert_style/ (which a later
#: migration would copy along).
ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
#: The flags' tiny model, given as a config file as BERT's --bert_config_file is.
TINY_CONFIG = {"vocab_size": 100, "width": 64, "depth": 2, "heads": 2, "ffn_width": 128,
               "act": "gelu", "hidden_drop": 0.1, "attention_drop": 0.1, "max_positions": 64,
               "segment_vocab": 2, "init_stddev": 0.02}  # fmt: skip


@dataclass
class Run:
    """One finished ``tf2npu run``: its exit status, output, run summary and model folder."""

    returncode: int
    stdout: str
    stderr: str
    summary: dict
    output_dir: Path

    def value(self, key: str) -> str:
        found = re.findall(rf"^{key}=(\S+)$", self.stdout, re.M)
        assert found, (
            f"no {key}= line in the script's output:\n{self.stdout}\n{self.stderr[-3000:]}"
        )
        return found[-1]

    @property
    def loss(self) -> float:
        return float(self.value("final_loss"))


class Launch:
    """A ``tf2npu run`` started in the background; ``result()`` waits for it."""

    def __init__(self, work: Path, name: str, run_args: list[str], script: Path,
                 script_args: list[str]) -> None:  # fmt: skip
        self.report = work / f"report_{name}"
        self.output = work / f"model_{name}"
        args = [str(EXE), "run", "--quiet", "--report-dir", str(self.report), *run_args,
                str(script), "--output_dir", str(self.output), *script_args]  # fmt: skip
        self.proc = subprocess.Popen(args, cwd=work, env=ENV, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)  # fmt: skip
        self._run: Run | None = None

    def result(self) -> Run:
        if self._run is None:
            out, err = self.proc.communicate(timeout=TIMEOUT)
            path = self.report / "run_summary.json"
            summary = json.loads(path.read_text()) if path.exists() else {}
            self._run = Run(self.proc.returncode, out, err, summary, self.output)
        return self._run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The original (stock), the migrated port (default and mixed precision) and a port warm-started
    from the original's checkpoint with learning rate 0, which must evaluate to the same loss."""
    work = tmp_path_factory.mktemp("bert_style")
    migrated = work / "migrated"
    migration = subprocess.run(
        [str(EXE), "migrate", str(SOURCE), "-o", str(migrated), "--report", str(work / "mreport")],
        capture_output=True, text=True, timeout=TIMEOUT, env=ENV)  # fmt: skip
    config = work / "tiny_config.json"
    config.write_text(json.dumps(TINY_CONFIG))
    steps = ["--num_train_steps", str(STEPS)]
    launches = {
        "stock": Launch(work, "stock", ["--no-npu"], SOURCE / "run_pretraining.py", steps),
        "npu": Launch(work, "npu", [], migrated / "run_pretraining.py",
                      [*steps, "--config_file", str(config)]),
        "mixed": Launch(work, "mixed", ["--option", "precision_mode=allow_mix_precision"],
                        migrated / "run_pretraining.py", steps),
    }  # fmt: skip
    try:
        launches["stock"].result()
        checkpoint = launches["stock"].output / f"model.ckpt-{STEPS}"
        launches["warm"] = Launch(
            work,
            "warm",
            ["--option", "precision_mode=force_fp32"],
            migrated / "run_pretraining.py",
            [
                "--num_train_steps",
                "2",
                "--learning_rate",
                "0",
                "--init_checkpoint",
                str(checkpoint),
            ],
        )
        results = {name: launch.result() for name, launch in launches.items()}
    finally:
        for launch in launches.values():
            if launch.proc.poll() is None:
                launch.proc.kill()
                launch.proc.wait()
    return migration, migrated, results


def ok(run: Run) -> None:
    assert run.returncode == 0, run.stderr[-5000:]
    assert run.summary.get("exit_status") == 0, f"run_summary.json: {run.summary}"
    assert math.isfinite(run.loss)


def test_original_trains_under_no_npu(runs):
    _, _, results = runs
    stock = results["stock"]
    ok(stock)
    assert int(stock.value("global_step")) == STEPS
    assert stock.summary["sessions"] == 0 and stock.summary["stock_sessions"] >= 1
    results_file = (stock.output_dir / "eval_results.txt").read_text()
    assert f"global_step = {STEPS}\n" in results_file


def test_migration_ports_the_script_to_npu_bridge(runs):
    migration, migrated, _ = runs
    assert migration.returncode == 0, migration.stdout + migration.stderr
    modeling = (migrated / "modeling.py").read_text()
    pretraining = (migrated / "run_pretraining.py").read_text()
    for text in (modeling, pretraining):
        assert text.count("from npu_bridge.npu_init import *\n") == 1
    assert "    return npu_unary_ops.gelu(x)\n" in modeling
    assert "tf.tanh(inner)" not in modeling
    assert "return npu_ops.dropout(x, 1.0 - drop_prob)" in modeling
    assert "tf.nn.dropout(" not in modeling
    assert "run_config = NPURunConfig(\n        model_dir=output_dir,\n" in pretraining
    assert "estimator = NPUEstimator(" in pretraining
    assert "params=dict(batch_size=FLAGS.train_batch_size, use_tpu=False))" in pretraining
    assert "eval_metric_ops=metrics[0](*metrics[1])" in pretraining
    assert pretraining.count("scaffold=scaffold_fn() if scaffold_fn else None") == 2
    for gone in ("TPUEstimator", "TPUEstimatorSpec", "RunConfig", "TPUConfig"):
        assert f"tf.contrib.tpu.{gone}(" not in pretraining
    # The hand-written optimizer needs no change: it is plain graph code.
    assert (migrated / "optimization.py").read_bytes() == (SOURCE / "optimization.py").read_bytes()


def test_migrated_script_trains_through_the_graph_engine(runs):
    _, _, results = runs
    npu = results["npu"]
    ok(npu)
    assert int(npu.value("global_step")) == STEPS
    summary = npu.summary
    assert summary["sessions"] >= 1 and summary["stock_sessions"] == 0
    assert summary["graphs_compiled"] >= 1 and summary["geops"] >= 1
    # The hand-written AdamW is recognised as the Ascend fused Adam patterns.
    assert {"adam_apply_one", "adam_apply_one_with_decay"} <= set(summary["fusions"])


def test_migrated_script_reports_its_training_steps(runs):
    _, _, results = runs
    assert results["npu"].summary["steps"] == STEPS


def test_mixed_precision_casts_and_still_trains(runs):
    _, _, results = runs
    mixed = results["mixed"]
    ok(mixed)
    assert int(mixed.value("global_step")) == STEPS
    assert mixed.summary["sessions"] >= 1 and mixed.summary["geops"] >= 1
    assert mixed.summary["casts_inserted"] > 0
    assert mixed.summary["options"]["precision_mode"] == "allow_mix_precision"


def test_port_warm_started_from_the_stock_checkpoint_evaluates_to_the_stock_loss(runs):
    """Every variable restores by name from the stock run's checkpoint; with learning rate 0 and
    float32, the port's evaluation (no dropout) equals the stock evaluation of that checkpoint:
    the NPU GELU, the layer_norm shim and the graph engine change no number."""
    _, _, results = runs
    warm = results["warm"]
    ok(warm)
    counts = re.findall(r"^warm_started=(\d+)/(\d+)$", warm.stdout, re.M)
    assert counts and all(int(done) == int(total) > 0 for done, total in counts)
    assert warm.summary["sessions"] >= 1
    assert warm.loss == pytest.approx(results["stock"].loss, rel=1e-5)

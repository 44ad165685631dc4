"""Measures whether ``tf2npu bisect`` finds injected faults, in how many runs and how long.

Usage: ``TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python benchmarks/bisect_accuracy.py [--part
fusion|precision|all] [--draws N] [--fault KIND] [--model session|estimator]
[--metric loss|variables] [--steps N]
[--seed S] [--work DIR] [--json OUT]``.

*fusion*: a BERT-style model of our own, ``--model``: ``session`` (default),
``bisect_models/bert_session.py``: ``tf2npu.testing.bert_graph`` trained in a Session, then
evaluated in a forward-only copy (matmul_biasadd fires in both graphs, layer_norm and
gelu_tanh in the forward-only one), reproducible bit for bit; or ``estimator``: the BERT-style
pretraining script of ``tests/e2e/bert_style`` (an Estimator with a hand-written AdamW, so the
adam_apply_one rules fire too; tiny configuration, dropout 0), migrated with ``tf2npu
migrate``, made as reproducible as the benchmark can (``tf_random_seed=0`` in its run config,
``sloppy=False`` in its input's interleave: see ``_seed``; some runs still differ under load).
One recorded run lists the fusion instances that fire
(``fusion_instances.json``). Then, for each rule that fired, ``--draws`` times: pick one of
its instances at random (``random.Random(--seed)``), inject a fault into it
(``TF2NPU_INJECT_FAULT=fusion:RULE@ROOT=KIND``, ``--fault``, default ``scale:1.5``), run
``tf2npu bisect fusion --json`` and check that it names that rule and that root, within the
run bound ``ceil(log2(rules)) + ceil(log2(instances)) + 3``.

*precision*: ``benchmarks/bisect_models/fp16_overflow.py`` (a per-example sum of squared
activations overflows in float16 under ``allow_mix_precision``): ``tf2npu bisect precision
--json``; checks that it names ``ReduceSumD`` and that the re-run with the mixlist it wrote has
a final loss within 1 % of the ``must_keep_origin_dtype`` run.

Every bisection is a fresh ``--out`` folder (nothing resumed); seconds are wall time of the
whole ``tf2npu bisect`` process. The results table is printed as Markdown; ``--json`` writes
every bisection's figures.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BERT = ROOT / "tests" / "e2e" / "bert_style"
OVERFLOW = ROOT / "benchmarks" / "bisect_models" / "fp16_overflow.py"
SESSION = ROOT / "benchmarks" / "bisect_models" / "bert_session.py"
TINY = {"vocab_size": 100, "width": 64, "depth": 2, "heads": 2, "ffn_width": 128, "act": "gelu",
        "hidden_drop": 0.0, "attention_drop": 0.0, "max_positions": 64, "segment_vocab": 2,
        "init_stddev": 0.02}  # fmt: skip


def tf2npu(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tf2npu", *argv]
    full = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    full.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    full.update(env or {})
    return subprocess.run(command, capture_output=True, text=True, env=full, check=False)


def prepare_bert(work: Path, steps: int) -> tuple[Path, list[str], Path]:
    """Migrate the BERT-style script; its path, arguments and checkpoint folder."""
    migrated = work / "migrated"
    if not (migrated / "run_pretraining.py").exists():
        done = tf2npu("migrate", str(BERT), "-o", str(migrated), "--report", str(work / "mreport"))
        if done.returncode != 0:
            sys.exit(f"tf2npu migrate failed:\n{done.stderr[-3000:]}")
        _seed(migrated / "run_pretraining.py")
    config = work / "tiny_config.json"
    config.write_text(json.dumps(TINY))
    model = work / "model"
    args = ["--output_dir", str(model), "--num_train_steps", str(steps)]
    args += ["--config_file", str(config)]
    return migrated / "run_pretraining.py", args, model


def _seed(script: Path) -> None:
    """Make the migrated script reproducible from run to run, which a bisection needs.

    Its run config has no graph seed, so the input shuffles draw another order in every run
    (tf2npu run says so: deterministic "no: the graph has no random seed"); and its training
    input reads the repeated record file through ``parallel_interleave(sloppy=True)``, whose
    output order depends on thread timing (measured: under load, two runs of one
    configuration differed from step 1 on; deterministic=1 does not cover it).
    """
    text = script.read_text()
    for old, new in (
        ("save_checkpoints_steps=FLAGS.save_checkpoints_steps)",
         "save_checkpoints_steps=FLAGS.save_checkpoints_steps, tf_random_seed=0)"),
        ("sloppy=training", "sloppy=False"),
    ):  # fmt: skip
        if old not in text:
            sys.exit(f"{script}: no {old!r} to make the run reproducible; update this benchmark")
        text = text.replace(old, new)
    script.write_text(text)


def fired_instances(work: Path, script: Path, args: list[str], model: Path) -> dict[str, list[str]]:
    """Rule -> roots of its instances, from one recorded run (in first-seen order)."""
    report = work / "discovery"
    subprocess.run(["rm", "-rf", str(model)], check=True)
    done = tf2npu("run", "--quiet", "--record", "--report-dir", str(report),
                  "--option", "deterministic=1", str(script), *args,
                  env={"TF_ENABLE_ONEDNN_OPTS": "0"})  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"the discovery run failed:\n{done.stderr[-3000:]}")
    rows = json.loads((report / "fusion_instances.json").read_text())
    found: dict[str, list[str]] = {}
    for row in rows:
        roots = found.setdefault(row["rule"], [])
        if row["root"] not in roots:
            roots.append(row["root"])
    return found


def bound(rules: int, instances: int) -> int:
    log2 = lambda n: math.ceil(math.log2(n)) if n > 1 else 0  # noqa: E731
    return log2(rules) + log2(instances) + 3


def fusion_part(opts: argparse.Namespace) -> list[dict[str, Any]]:
    work = opts.work / f"fusion-{opts.model}"
    work.mkdir(parents=True, exist_ok=True)
    if opts.model == "estimator":
        script, args, model = prepare_bert(work, opts.steps)
    else:
        script, args, model = SESSION, ["--steps", str(opts.steps)], work / "model"
    fired = fired_instances(work, script, args, model)
    print(f"rules fired: {', '.join(f'{r} x{len(v)}' for r, v in fired.items())}", file=sys.stderr)
    rng = random.Random(opts.seed)
    rows = []
    for rule, roots in fired.items():
        for draw in range(opts.draws):
            root = rng.choice(roots)
            fault = f"fusion:{rule}@{root}={opts.fault}"
            out = work / f"{rule}-{draw}"
            subprocess.run(["rm", "-rf", str(out)], check=True)
            start = time.perf_counter()
            tolerance = ["--tolerance", str(opts.tolerance)] if opts.tolerance else []
            done = tf2npu("bisect", "fusion", "--json", "--metric", opts.metric, *tolerance,
                          "--out", str(out), "--clean", str(model), "--", str(script), *args,
                          env={"TF2NPU_INJECT_FAULT": fault})  # fmt: skip
            seconds = time.perf_counter() - start
            rows.append(_fusion_row(rule, root, fault, done, seconds, len(fired), len(roots)))
            print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def _fusion_row(
    rule: str, root: str, fault: str, done: subprocess.CompletedProcess[str], seconds: float,
    rules: int, instances: int,
) -> dict[str, Any]:  # fmt: skip
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError:
        data = {"verdict": f"error (exit {done.returncode}): {done.stderr[-500:]}", "runs": None}
    return {
        "rule": rule,
        "root": root,
        "fault": fault,
        "instances": instances,
        "verdict": data.get("verdict"),
        "found_rule": data.get("rule"),
        "found_root": data.get("instance"),
        "correct": data.get("rule") == rule and data.get("instance") == root,
        "runs": data.get("runs"),
        "bound": bound(rules, instances),
        "seconds": round(seconds, 1),
        "exit": done.returncode,
    }


def precision_part(opts: argparse.Namespace) -> list[dict[str, Any]]:
    out = opts.work / "precision"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    start = time.perf_counter()
    done = tf2npu("bisect", "precision", "--json", "--out", str(out), "--", str(OVERFLOW))
    seconds = time.perf_counter() - start
    data = json.loads(done.stdout)
    by_run = data["metric_by_run"]
    reference = by_run[next(k for k in by_run if k.endswith("-reference"))]
    rerun = by_run[next(k for k in by_run if k.endswith("-rerun-mixlist"))]
    within = abs(rerun - reference) / abs(reference) if isinstance(rerun, float) else math.inf
    return [{
        "verdict": data["verdict"],
        "types": data["types"],
        "nodes": data["nodes"],
        "correct": data["types"] == ["ReduceSumD"],
        "reference_loss": reference,
        "mixlist_loss": rerun,
        "rel_diff": within,
        "within_1pct": within <= 0.01,
        "runs": data["runs"],
        "seconds": round(seconds, 1),
        "exit": done.returncode,
    }]  # fmt: skip


def markdown(fusion: list[dict[str, Any]], precision: list[dict[str, Any]]) -> str:
    lines = []
    if fusion:
        lines += ["| rule | instances | injected at | named | runs / bound | seconds |",
                  "| --- | ---: | --- | --- | ---: | ---: |"]  # fmt: skip
        for r in fusion:
            found = f"{r['found_rule']}@{r['found_root']}"
            named = "yes" if r["correct"] else f"no: {r['verdict']} {found}"
            lines.append(f"| {r['rule']} | {r['instances']} | `{r['root']}` | {named} | "
                         f"{r['runs']} / {r['bound']} | {r['seconds']} |")  # fmt: skip
    if precision:
        header = "| verdict | black list | nodes | loss mixlist | loss ref | diff | runs | s |"
        lines += ["", header, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in precision:
            losses = f"{r['mixlist_loss']:.4f} | {r['reference_loss']:.4f} | {r['rel_diff']:.2e}"
            lines.append(f"| {r['verdict']} | {', '.join(r['types'])} | {', '.join(r['nodes'])} | "
                         f"{losses} | {r['runs']} | {r['seconds']} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("fusion", "precision", "all"), default="all")
    parser.add_argument("--draws", type=int, default=2, help="random instances per rule")
    parser.add_argument("--fault", default="scale:1.5", help="KIND of TF2NPU_INJECT_FAULT")
    parser.add_argument("--steps", type=int, default=4, help="training steps of the BERT run")
    parser.add_argument(
        "--model",
        choices=("session", "estimator"),
        default="session",
        help="the BERT-style script: bisect_models/bert_session.py, or the Estimator "
        "pretraining script of tests/e2e/bert_style",
    )
    parser.add_argument(
        "--metric", choices=("loss", "variables"), default="loss", help="bisect fusion's --metric"
    )
    parser.add_argument("--tolerance", type=float, help="bisect fusion's --tolerance")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/tf2npu-bisect-bench"))
    parser.add_argument("--json", type=Path)
    opts = parser.parse_args()
    opts.work = opts.work.resolve()
    fusion = fusion_part(opts) if opts.part in ("fusion", "all") else []
    precision = precision_part(opts) if opts.part in ("precision", "all") else []
    print(markdown(fusion, precision))
    if opts.json:
        opts.json.write_text(json.dumps({"fusion": fusion, "precision": precision}, indent=1))


if __name__ == "__main__":
    main()

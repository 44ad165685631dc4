"""Measures how closely the migrated examples reproduce the original scripts' losses.

Usage: ``TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python benchmarks/fidelity.py [--steps 200] [--quick]
[--jobs N] [--json OUT] [EXAMPLE ...]``.

The bundled TF 1.15 examples (``examples/tf1``) are migrated with ``tf2npu migrate`` into a
temporary folder, then every example is run as a subprocess, each run in its own report and
model folder:

(a) the original script under ``tf2npu run --no-npu`` (stock sessions: the reference), twice,
    to show whether the script is deterministic on its own;
(b) the migrated script under ``tf2npu run --option precision_mode=must_keep_origin_dtype``;
(c) the migrated script under ``tf2npu run --option precision_mode=allow_mix_precision``;
(d) the migrated script under plain ``tf2npu run``: the mode a migrated script gets by default
    (``allow_fp32_to_fp16``), for information.

Every run gets ``--steps N`` and fixed seeds (each example seeds numpy, its graph and its data
itself; ``PYTHONHASHSEED=0`` here). Examples with dropout get ``--dropout 0``, because the NPU
dropout (``npu_ops.dropout``) draws its own masks: with dropout on, the two sides train on
different masks and their losses are not comparable. The example whose input pipeline holds a
lookup table is migrated with ``--mix-compile``, the fix its migration report gives (the table
must stay on the host with the pipeline that looks it up).

The figure per run is ``|loss - loss(a)| / |loss(a)|`` on the ``final_loss=`` the script prints
last, with the budgets: (b) <= 1e-5 (the graph engine changes no dtype; its fusions may reorder
float arithmetic), (c) <= 2% (float16 compute on a CPU). The casts the precision mode inserted,
the fusions, GeOps and training steps come from each run's ``run_summary.json``. A Markdown
table is printed, then the failures (the end of the run's output). Exit status: 0 when every
run finished and met its budget, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "tf1"
BUDGET_KEEP = 1e-5
"""(b) vs (a): ``must_keep_origin_dtype`` casts nothing."""
BUDGET_MIX = 0.02
"""(c) vs (a): ``allow_mix_precision`` computes in float16."""
LOSS_RE = re.compile(r"^final_loss=(\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Example:
    """One example script and how it is run for the comparison."""

    name: str
    dropout: bool = False
    """It takes ``--dropout RATE``; the comparison runs pass 0."""
    mix_compile: bool = False
    """Migrated with ``--mix-compile`` (its migration report's fix)."""

    def script_args(self, steps: int, model_dir: Path) -> list[str]:
        args = ["--steps", str(steps), "--model-dir", str(model_dir)]
        return args + (["--dropout", "0"] if self.dropout else [])


ALL_EXAMPLES = (
    Example("estimator_mnist_like.py"),
    Example("horovod_style.py"),
    Example("input_pipeline_lookup_pyfunc.py", mix_compile=True),
    Example("keras_tf1_session.py", dropout=True),
    Example("sessrun_dataset_saver.py", dropout=True),
    Example("transformer_block_gelu.py", dropout=True),
)


@dataclass(frozen=True)
class Variant:
    """One way of running an example: which copy, and which ``tf2npu run`` options."""

    key: str
    migrated: bool
    run_options: tuple[str, ...]
    budget: float | None


VARIANTS = (
    Variant("a", migrated=False, run_options=("--no-npu",), budget=None),
    Variant("a2", migrated=False, run_options=("--no-npu",), budget=None),
    Variant(
        "b",
        migrated=True,
        run_options=("--option", "precision_mode=must_keep_origin_dtype"),
        budget=BUDGET_KEEP,
    ),
    Variant(
        "c",
        migrated=True,
        run_options=("--option", "precision_mode=allow_mix_precision"),
        budget=BUDGET_MIX,
    ),
    Variant("d", migrated=True, run_options=(), budget=None),
)


@dataclass
class RunResult:
    """What one run printed and summarised."""

    example: str
    variant: str
    returncode: int
    loss: float | None
    summary: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    output_tail: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.loss is not None and math.isfinite(self.loss)


def tf2npu_command() -> list[str]:
    """The ``tf2npu`` console script of the interpreter running this file."""
    beside = Path(sys.executable).parent / "tf2npu"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("tf2npu")
    if found is None:
        raise SystemExit("tf2npu is not installed: run `make venv` (pip install -e '.[tf]')")
    return [found]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONHASHSEED"] = "0"
    env.pop("RANK_SIZE", None)  # the Horovod example runs as one rank
    return env


def migrate(work: Path) -> dict[bool, Path]:
    """Migrate the examples twice (default, ``--mix-compile``); mix_compile -> output folder."""
    outs = {}
    for mix in (False, True):
        out = work / ("migrated_mix" if mix else "migrated")
        command = [*tf2npu_command(), "migrate", str(EXAMPLES), "-o", str(out)]
        command += ["--report", str(work / (out.name + "_report")), "--format", "json"]
        command += ["--mix-compile"] if mix else []
        done = subprocess.run(command, capture_output=True, text=True, env=child_env())
        if done.returncode > 1:  # 1 is "findings at error level", still written
            raise SystemExit(f"tf2npu migrate failed ({done.returncode}):\n{done.stderr}")
        outs[mix] = out
    return outs


def parse_loss(output: str) -> float | None:
    """The last ``final_loss=`` the script printed, or None."""
    found = LOSS_RE.findall(output)
    if not found:
        return None
    try:
        return float(found[-1])
    except ValueError:
        return None


def run_one(
    example: Example, variant: Variant, steps: int, work: Path, migrated: dict[bool, Path]
) -> RunResult:
    tag = f"{Path(example.name).stem}.{variant.key}"
    report_dir = work / "runs" / tag
    model_dir = work / "models" / tag
    folder = migrated[example.mix_compile] if variant.migrated else EXAMPLES
    command = [*tf2npu_command(), "run", "--quiet", "--report-dir", str(report_dir)]
    command += [*variant.run_options, str(folder / example.name)]
    command += example.script_args(steps, model_dir)
    start = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, env=child_env(), cwd=work, check=False
    )
    seconds = time.perf_counter() - start
    summary_path = report_dir / "run_summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-12:])
    return RunResult(
        example.name,
        variant.key,
        done.returncode,
        parse_loss(done.stdout),
        summary,
        seconds,
        tail,
    )


def relative(value: float | None, reference: float | None) -> float | None:
    if value is None or reference is None:
        return None
    if reference == 0:
        return 0.0 if value == 0 else math.inf
    return abs(value - reference) / abs(reference)


def fmt_rel(rel: float | None, budget: float | None) -> str:
    if rel is None:
        return "—"
    text = "0" if rel == 0 else f"{rel:.1e}"
    if budget is not None and rel > budget:
        text += " **over**"
    return text


def fmt_run(result: RunResult | None) -> str:
    """The casts a run inserted, or why it has no figures."""
    if result is None:
        return "—"
    if not result.ok:
        return f"FAIL (exit {result.returncode})"
    return str(result.summary.get("casts_inserted", "?"))


def fusions_text(summary: dict[str, Any]) -> str:
    fusions = summary.get("fusions") or {}
    return ", ".join(f"{name} ×{n}" for name, n in sorted(fusions.items())) or "none"


def table(results: dict[tuple[str, str], RunResult], examples: Sequence[Example]) -> str:
    head = (
        "| example | loss (a) stock | (a) rerun Δ | (b) keep dtype: rel Δ | casts | "
        "(c) mix precision: rel Δ | casts | (d) default (fp32→fp16): rel Δ | casts | "
        "GeOps | fusions (b) | steps (b) |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"
    )
    rows = [head]
    for example in examples:
        get = {v.key: results.get((example.name, v.key)) for v in VARIANTS}
        a = get["a"]
        ref = a.loss if a is not None and a.ok else None
        cells = [example.name.removesuffix(".py"), f"{ref:.6f}" if ref is not None else "FAIL"]
        a2 = get["a2"]
        cells.append(fmt_rel(relative(a2.loss, ref), None) if a2 and a2.ok else fmt_run(a2))
        for key in ("b", "c", "d"):
            run = get[key]
            variant = next(v for v in VARIANTS if v.key == key)
            cells.append(
                fmt_rel(relative(run.loss, ref), variant.budget) if run and run.ok else "—"
            )
            cells.append(fmt_run(run))
        b = get["b"]
        summary = b.summary if b is not None else {}
        cells += [
            str(summary.get("geops", "—")),
            fusions_text(summary) if summary else "—",
            str(summary.get("steps", "—")),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def verdict(results: dict[tuple[str, str], RunResult]) -> list[str]:
    """Every failed run and every figure over its budget, as lines of text."""
    problems = []
    for (name, key), run in sorted(results.items()):
        if not run.ok:
            problems.append(f"{name} ({key}): exit {run.returncode}, loss {run.loss}")
    for (name, key), run in sorted(results.items()):
        variant = next(v for v in VARIANTS if v.key == key)
        reference = results.get((name, "a"))
        if variant.budget is None or not run.ok or reference is None or not reference.ok:
            continue
        rel = relative(run.loss, reference.loss)
        if rel is not None and rel > variant.budget:
            problems.append(f"{name} ({key}): rel Δ {rel:.2e} > budget {variant.budget:g}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps per run")
    parser.add_argument("--quick", action="store_true", help="10 steps, no (a) rerun")
    parser.add_argument("--jobs", type=int, default=1, help="runs in parallel (default 1)")
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    parser.add_argument("examples", nargs="*", help="example file names (default: all)")
    args = parser.parse_args(argv)
    steps = 10 if args.quick else args.steps
    known = {e.name: e for e in ALL_EXAMPLES}
    unknown = [name for name in args.examples if name not in known]
    if unknown:
        parser.error(f"unknown example(s) {unknown}; choose from {sorted(known)}")
    examples = [known[name] for name in args.examples] or list(ALL_EXAMPLES)
    variants = [v for v in VARIANTS if not (args.quick and v.key == "a2")]

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tf2npu-fidelity-") as tmp:
        work = Path(tmp)
        migrated = migrate(work)
        jobs = [(e, v) for e in examples for v in variants]
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            done = list(pool.map(lambda job: run_one(job[0], job[1], steps, work, migrated), jobs))
    results = {(r.example, r.variant): r for r in done}

    print(
        f"fidelity of the migrated examples: {steps} steps per run, dropout 0, "
        f"{time.perf_counter() - start:.0f} s, load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    print()
    print(table(results, examples))
    print()
    print(
        f"budgets: (b) ≤ {BUDGET_KEEP:g}, (c) ≤ {BUDGET_MIX:.0%} relative to (a); "
        "(a) rerun and (d) for information"
    )
    failed = [r for r in done if not r.ok]
    for run in failed:
        print(f"\n### {run.example} ({run.variant}) failed: exit {run.returncode}\n")
        print("```\n" + run.output_tail + "\n```")
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "example": r.example,
                        "variant": r.variant,
                        "returncode": r.returncode,
                        "final_loss": r.loss,
                        "seconds": round(r.seconds, 2),
                        "summary": r.summary,
                    }
                    for r in done
                ],
                indent=2,
            )
        )
    problems = verdict(results)
    if problems:
        print("\nproblems:\n" + "\n".join(f"- {p}" for p in problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

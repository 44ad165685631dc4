"""Equivalence of data-parallel training on N ranks with one process on the global batch.

    TF_ENABLE_ONEDNN_OPTS=0 python benchmarks/distributed_equivalence.py [--steps 10]

The driver starts, at the same time, one job per rank count (``--ranks``, default 2 and 4:
``python -m tf2npu run --ranks N ... distributed_equivalence.py --worker OUT``) and one process
(``python -m tf2npu run ... --worker OUT``, no ``--ranks``), all with ``--option
precision_mode=PRECISION`` (default ``must_keep_origin_dtype``: the default
``allow_fp32_to_fp16`` computes in float16 on the CPU, which is not what is measured here).

Each worker trains every model of ``--models`` (``distributed_models``: the spike's small and
big MLP, the BERT-style graph) with every optimizer of ``--optimizers`` (SGD 0.1, Momentum
0.1/0.9, Adam 1e-3, each wrapped in ``NPUDistributedOptimizer``) for ``--steps`` steps in a
``tf.compat.v1.Session`` with ``npu_config_proto()``: rank ``r`` of N on rows
``[r*B/N, (r+1)*B/N)`` of every global batch of B rows, the loss a mean, so the averaged
gradient is the global batch's. One process trains on the whole batch (the wrapper is the
identity there). Every worker writes its final variables to ``OUT/<model>-<optimizer>/
rank_<r>.npz``.

Reported per model, optimizer and N:

* **between ranks**: the largest ``|a - b|`` of any element of any variable between rank 0 and
  any other rank (target 0: bitwise identical; ``bitwise`` says whether the bytes are equal);
* **to one process**: the largest ``|a - b|`` of any element against the one-process run
  (``max_abs``), and the largest per-variable relative difference ``max|a - b| / max|b|``
  (``max_rel``: the infinity norm of the difference over the infinity norm of the variable).
  An element-wise relative difference is not used: biases and layer-norm betas start at 0 and
  stay near it, where it measures nothing but the float32 spacing around 0. For the same reason
  a variable whose largest element is below ``NEAR_ZERO`` (1e-6) in the one-process run is left
  out of ``max_rel`` and listed in ``near_zero`` with its absolute difference (still in
  ``max_abs``): the BERT-style model's attention key biases, whose gradient is exactly 0 in
  exact arithmetic (a softmax does not change when a row's scores all move by one constant),
  hold only rounding noise (~1e-12). Target: 1e-6.

Prints a Markdown table and writes JSON (``--json``); exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
TARGET = 1e-6
NEAR_ZERO = 1e-6


def worker(out: Path, models: list[str], optimizers: list[str], steps: int) -> None:
    """Train every (model, optimizer) on this rank's shard; write the final variables."""
    import tensorflow.compat.v1 as tf
    from distributed_models import OPTIMIZERS, build, trainable

    from npu_bridge.npu_init import (
        NPUDistributedOptimizer,
        get_rank_id,
        get_rank_size,
        npu_config_proto,
    )

    rank, size = get_rank_id(), get_rank_size()
    for model_name in models:
        for opt_name in optimizers:
            inner = OPTIMIZERS[opt_name]
            model = build(
                model_name, lambda v1, f=inner: NPUDistributedOptimizer(f(v1)), rank, size
            )
            with tf.Session(graph=model.graph, config=npu_config_proto()) as sess:
                sess.run(model.init)
                losses = [
                    float(sess.run([model.loss, model.train_op], model.feeds(step))[0])
                    for step in range(steps)
                ]
                final = {v.op.name: sess.run(v) for v in trainable(model)}
            folder = out / f"{model_name}-{opt_name}"
            folder.mkdir(parents=True, exist_ok=True)
            np.savez(folder / f"rank_{rank}.npz", **final)
            print(f"{model_name}-{opt_name} rank {rank}/{size}: loss {losses[0]:.6f} -> "
                  f"{losses[-1]:.6f}", flush=True)  # fmt: skip


def differences(
    ranks: list[dict[str, np.ndarray]], single: dict[str, np.ndarray]
) -> dict[str, Any]:
    """Between-rank and to-one-process differences of the variables (see the module doc)."""
    if any(sorted(r) != sorted(single) for r in ranks):
        raise ValueError(f"variables differ: {sorted(single)} vs {[sorted(r) for r in ranks]}")
    between, bitwise, max_abs, max_rel = 0.0, True, 0.0, 0.0
    worst, near_zero = "", {}
    for name, reference in single.items():
        first = ranks[0][name]
        for other in ranks[1:]:
            between = max(between, float(np.abs(other[name] - first).max()))
            bitwise = bitwise and other[name].tobytes() == first.tobytes()
        diff = float(np.abs(first.astype(np.float64) - reference).max())
        max_abs = max(max_abs, diff)
        scale = float(np.abs(reference).max())
        if scale < NEAR_ZERO:
            near_zero[name] = diff
        elif diff / scale > max_rel or not worst:
            worst, max_rel = name, diff / scale
    return {"between_ranks": between, "bitwise": bitwise, "max_abs": max_abs,
            "max_rel": max_rel, "worst_rel_variable": worst, "near_zero": near_zero}  # fmt: skip


def compare(out: Path, counts: list[int], cases: list[str]) -> list[dict[str, Any]]:
    """One row per case and rank count, from the workers' npz files."""
    rows = []
    for case in cases:
        single = _load(out / "n1" / case / "rank_0.npz")
        for n in counts:
            ranks = [_load(out / f"n{n}" / case / f"rank_{r}.npz") for r in range(n)]
            model, optimizer = case.split("-")
            rows.append({"model": model, "optimizer": optimizer, "ranks": n,
                         **differences(ranks, single)})  # fmt: skip
    return rows


def _load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return {name: data[name] for name in data.files}


def meets(row: dict[str, Any]) -> bool:
    """Both targets: bitwise identical ranks, within 1e-6 (absolute and relative) of one process."""
    return bool(row["bitwise"]) and row["max_abs"] <= TARGET and row["max_rel"] <= TARGET


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| model | optimizer | ranks | max diff between ranks | max abs diff to 1 process "
        "| max rel diff to 1 process (variable) | targets |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        between = "0 (bitwise)" if r["bitwise"] else f"{r['between_ranks']:.3g}"
        lines.append(
            f"| {r['model']} | {r['optimizer']} | {r['ranks']} | {between} | {r['max_abs']:.3g} "
            f"| {r['max_rel']:.3g} ({r['worst_rel_variable']}{_near_zero(r)}) "
            f"| {'met' if meets(r) else 'MISSED'} |"
        )
    return "\n".join(lines)


def _near_zero(row: dict[str, Any]) -> str:
    skipped = row["near_zero"]
    return f"; {len(skipped)} near 0 left out" if skipped else ""


def job_command(n: int, out: Path, report: Path, args: argparse.Namespace) -> list[str]:
    """The ``tf2npu run`` command of the worker job with ``n`` ranks (1: one process)."""
    ranks = ["--ranks", str(n)] if n > 1 else []
    return [
        sys.executable, "-m", "tf2npu", "run", *ranks, "--quiet", "--report-dir", str(report),
        "--option", f"precision_mode={args.precision_mode}", str(Path(__file__).resolve()),
        "--worker", str(out), "--models", *args.models, "--optimizers", *args.optimizers,
        "--steps", str(args.steps),
    ]  # fmt: skip


def run_jobs(work: Path, args: argparse.Namespace) -> float:
    """Start the one-process run and every job at once; wait for all. Returns the seconds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK_", "TF2NPU_CLUSTER"))}
    env.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    start = time.perf_counter()
    jobs = {}
    for n in [1, *args.ranks]:
        command = job_command(n, work / f"n{n}", work / f"report_n{n}", args)
        log = (work / f"n{n}.log").open("w")
        jobs[n] = (subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT), log)
    failed = []
    for n, (process, log) in jobs.items():
        if process.wait(timeout=args.timeout) != 0:
            failed.append(n)
        log.close()
    if failed:
        tails = "\n".join(f"--- {n} ranks:\n{(work / f'n{n}.log').read_text()[-3000:]}"
                          for n in failed)  # fmt: skip
        raise SystemExit(f"worker jobs failed ({failed}):\n{tails}")
    return time.perf_counter() - start


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--models", nargs="+", default=["small_mlp", "big_mlp", "bert"])
    parser.add_argument("--optimizers", nargs="+", default=["sgd", "momentum", "adam"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--precision-mode", default="must_keep_origin_dtype")
    parser.add_argument("--timeout", type=float, default=1800.0, help="per job, seconds")
    parser.add_argument("--work", type=Path, help="folder for the jobs (default: a temporary)")
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    args = parse(argv)
    if args.worker is not None:
        worker(args.worker, args.models, args.optimizers, args.steps)
        return []
    with tempfile.TemporaryDirectory(prefix="tf2npu-equiv-") as temporary:
        work = args.work or Path(temporary)
        work.mkdir(parents=True, exist_ok=True)
        seconds = run_jobs(work, args)
        cases = [f"{m}-{o}" for m in args.models for o in args.optimizers]
        rows = compare(work, args.ranks, cases)
    print(f"{args.steps} steps, precision_mode={args.precision_mode}, jobs {seconds:.0f} s")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({"steps": args.steps, "precision_mode":
                                         args.precision_mode, "rows": rows}, indent=1))  # fmt: skip
    return rows


if __name__ == "__main__":
    results = main()
    sys.exit(0 if all(meets(r) for r in results) else 1)

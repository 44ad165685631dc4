"""How fast ``tf2npu compare`` is: MB/s of tensor data, and 10,000 small tensor pairs.

Usage: ``PYTHONPATH=src .venv/bin/python benchmarks/compare_throughput.py [--mb MB]
[--pairs N] [--rounds R] [--dir DIR]`` (no TensorFlow needed).

BLAS is held to one thread before numpy is imported, so the run uses one core. Two
synthetic trees are written into a temporary folder (or ``--dir``), each an NPU tree with its
graph JSON against a golden tree, as ``tf2npu run`` lays them out:

* **large**: 8 ops whose outputs hold ``--mb`` MB of tensor data in all (both sides counted),
  in three cases: float32 NPU against float32 golden, float16 NPU against float32 golden (the
  mixed-precision case: a float16 file is half the bytes), and float32 with only
  MaxAbsoluteError and CosineSimilarity (``--alg 0,1``);
* **small**: ``--pairs`` ops with one output of 64 to 1,024 float32 elements each.

A figure is the best of ``--rounds`` runs of the library path ``tf2npu compare`` takes: plan
the pairs, compare every pair (all ten algorithms unless said), write the CSV. MB/s divides
the bytes of both files of every compared pair by the seconds of the whole run; the files are
in the page cache (written just before), as after a dump. Both wall and CPU seconds are shown:
on a loaded machine the CPU seconds are the steadier figure of what one core does.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from tf2npu.artifacts.gegraph import GeOp, TensorDesc  # noqa: E402
from tf2npu.debug.compare.matching import plan_compare  # noqa: E402
from tf2npu.debug.compare.metrics import ALGORITHMS, select_algorithms  # noqa: E402
from tf2npu.debug.compare.report import write_csvs  # noqa: E402
from tf2npu.debug.compare.trees import compare_plan  # noqa: E402
from tf2npu.testing.dumptrees import npu_step_dir, write_golden, write_graph, write_npu  # noqa: E402

OPS_LARGE = 8


def build(root: Path, sizes: Sequence[int], npu_dtype: str, seed: int = 0) -> None:
    """An NPU tree (one op per size, output 0) and its golden tree under ``root``."""
    rng = np.random.default_rng(seed)
    step = npu_step_dir(root / "npu")
    ops = []
    for i, size in enumerate(sizes):
        name = f"layer_{i}/op"
        desc = TensorDesc("DT_FLOAT16" if npu_dtype == "float16" else "DT_FLOAT", (size,))
        op = GeOp(name, "Mul", i, (), output_desc=(desc,))
        ops.append(op)
        golden = rng.standard_normal(size).astype(np.float32)
        noise = (rng.standard_normal(size) * 1e-6).astype(np.float32)
        write_npu(step, op, {("output", 0): (golden + noise).astype(npu_dtype)})
        write_golden(root / "golden" / "0", name, 0, golden)
    write_graph(step, ops)


def timed(root: Path, algorithms: Sequence[str], rounds: int) -> tuple[float, float, int, int]:
    """Best wall and CPU seconds of ``rounds`` whole runs, bytes compared, pairs compared."""
    wall = cpu = float("inf")
    size = pairs = 0
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        plan = plan_compare(root / "npu", root / "golden")
        report = compare_plan(plan, algorithms)
        write_csvs(report, root / "out", "bench")
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
        size, pairs = report.bytes_read, report.counts()["compared"]
    return wall, cpu, size, pairs


def large(folder: Path, megabytes: float, rounds: int) -> None:
    cases = (
        ("float32 vs float32, all 10", "float32", ALGORITHMS),
        ("float16 vs float32, all 10", "float16", ALGORITHMS),
        ("float32 vs float32, --alg 0,1", "float32", select_algorithms("0,1")),
    )
    for label, dtype, algorithms in cases:
        npu_bytes = 2 if dtype == "float16" else 4
        per_op = int(megabytes * 1e6 / OPS_LARGE / (npu_bytes + 4))
        root = folder / f"large_{dtype}_{len(algorithms)}"
        build(root, [per_op] * OPS_LARGE, dtype)
        wall, cpu, size, pairs = timed(root, algorithms, rounds)
        mb = size / 1e6
        print(
            f"large  {label:30s} {pairs} pairs of {per_op:,} elements, {mb:,.0f} MB: "
            f"{wall:.2f} s wall, {mb / wall:,.0f} MB/s; {cpu:.2f} s CPU, {mb / cpu:,.0f} MB/s"
        )


def small(folder: Path, pairs: int, rounds: int) -> None:
    sizes = np.random.default_rng(1).integers(64, 1025, pairs).tolist()
    root = folder / "small"
    build(root, sizes, "float32")
    wall, cpu, size, compared = timed(root, ALGORITHMS, rounds)
    print(
        f"small  {compared:,} pairs of 64-1,024 float32 elements ({size / 1e6:,.1f} MB), "
        f"all 10 algorithms: {wall:.2f} s wall, {cpu:.2f} s CPU "
        f"({cpu / compared * 1e6:,.0f} µs CPU a pair)"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=512.0, help="MB per large case")
    parser.add_argument("--pairs", type=int, default=10_000, help="small pairs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one)")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(dir=args.dir) as temp:
        large(Path(temp), args.mb, args.rounds)
        small(Path(temp), args.pairs, args.rounds)


if __name__ == "__main__":
    main()

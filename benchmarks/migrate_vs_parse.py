"""``tf2npu migrate`` end to end against a bare ``ast.parse`` of the same files (issue 23).

Usage::

    python benchmarks/migrate_vs_parse.py CORPUS_DIR [--runs 5] [--jobs N] [--base OTHER/src]

Both sides are whole processes started the same way, alternated run by run in one invocation
so that both see the same machine load:

parse
    ``python -c`` that reads and ``ast.parse``-s every ``.py`` file under CORPUS_DIR (the
    floor: interpreter start, reading, parsing).
migrate
    ``python -m tf2npu migrate CORPUS_DIR -o OUT`` (default options, the full report set,
    outputs into a fresh temporary folder each run). Its exit status 1 (error-level findings,
    e.g. Horovod uses with no NPU rewrite) counts as a finished run; any other non-zero status
    stops the benchmark.

Printed, for wall time and for CPU time (user + system of the child process, which a loaded
machine disturbs less): each side's min and median, and the ratio migrate / parse of the minima
and of the medians. Target: ratio <= 5. Bytecode caching follows the environment: with
``PYTHONDONTWRITEBYTECODE=1`` every run compiles tf2npu's sources again (run it under
``env -u PYTHONDONTWRITEBYTECODE`` for what an installed tf2npu costs). The machine's load
average before and after the runs is printed with the figures: on a shared machine it is what
tells two measurements apart.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 5.0
PARSE = (
    "import ast, pathlib, sys\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.py')):\n"
    "    ast.parse(p.read_bytes())\n"
)


def timed(
    argv: list[str], ok: tuple[int, ...], env: dict[str, str] | None = None
) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the child) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, env=env
    )
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in ok:
        sys.exit(f"{argv[:4]} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--jobs", type=int, default=None, help="tf2npu migrate -j (default: its own)"
    )
    parser.add_argument(
        "--base",
        type=Path,
        default=None,
        help="another tree's src/ folder: its migrate runs too, alternated with this one's "
        "(before/after side by side under the same load)",
    )
    args = parser.parse_args()
    files = sorted(args.corpus.rglob("*.py"))
    if not files:
        sys.exit(f"{args.corpus}: no .py files; assemble the corpus as benchmarks/README.md says")
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    load_before = os.getloadavg()
    parse_s: list[tuple[float, float]] = []
    migrate_s: list[tuple[float, float]] = []
    base_s: list[tuple[float, float]] = []
    base_env = None
    if args.base is not None:
        base_env = {**os.environ, "PYTHONPATH": str(args.base.resolve())}
    for _ in range(args.runs):
        parse_s.append(timed([sys.executable, "-c", PARSE, str(args.corpus)], (0,)))
        out = Path(tempfile.mkdtemp(prefix="tf2npu_bench_"))
        argv = [sys.executable, "-m", "tf2npu", "migrate", str(args.corpus), "-o", str(out / "o")]
        if args.jobs is not None:
            argv += ["-j", str(args.jobs)]
        try:
            migrate_s.append(timed(argv, (0, 1)))
            if base_env is not None:
                shutil.rmtree(out, ignore_errors=True)
                base_s.append(timed(argv, (0, 1), base_env))
        finally:
            shutil.rmtree(out, ignore_errors=True)
    print(f"{len(files)} files, {lines} lines, {args.runs} alternating runs")
    loads = [" ".join(f"{x:.2f}" for x in avg) for avg in (load_before, os.getloadavg())]
    print(f"load average (1, 5, 15 min): {loads[0]} before, {loads[1]} after")
    for what, column in (("wall", 0), ("cpu", 1)):
        parse = [run[column] for run in parse_s]
        sides = [("migrate", [run[column] for run in migrate_s])]
        if base_s:
            sides.append(("base", [run[column] for run in base_s]))
        for name, values in (("parse", parse), *sides):
            low, mid = min(values), statistics.median(values)
            print(f"{what:4} {name:8} min {low:.3f} s  median {mid:.3f} s")
        for name, values in sides:
            best = min(values) / min(parse)
            median = statistics.median(values) / statistics.median(parse)
            label = "ratio" if name == "migrate" else "base"
            print(
                f"{what:4} {label:8} min {best:.2f}x  median {median:.2f}x  (target <= {TARGET:g}x)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

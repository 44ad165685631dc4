"""How fast a ``dump_data=stats`` dump measures a tensor: the statistics op against the five
TensorFlow reductions it replaces (``tf2npu.runtime.dump.measure``), in GB/s.

Usage: ``TF_CPP_MIN_LOG_LEVEL=2 TF_ENABLE_ONEDNN_OPTS=0 PYTHONPATH=src .venv/bin/python
benchmarks/stats_op.py [--mb 200] [--tensors 1] [--rounds 9]`` (the op must be built:
``make venv``, or ``python -m tf2npu.runtime.dump.stats_op.build``).

``--tensors`` float32 variables of ``--mb`` MB in all (standard normal values, every 7th a
zero) are measured in one v1 Session, by each path exactly as the dump builds it
(:func:`measure.figures`: the op, or the traced function with the reductions and its
``Switch``/``Merge``); each round runs each path once, in turn, and the figure is the median
time of a run over the rounds (a session run that only reads the variables is subtracted).
One 200 MB tensor shows main-memory speed, as do many small ones (``--tensors 400``: 0.5 MB
each, the size of a BERT step's typical dumped tensor), plus the cost of an op per tensor.
With ``--reuse`` the tensors are reads of one variable of ``--mb / --tensors`` MB, which stays
in cache: a dump measures a tensor right after its producer wrote it. The two paths' rows are
compared too (max, min and counts equal; mean and L2 norm within 1e-6). The first run of each
path is reported apart: it includes TensorFlow's compile of the added ops (the reductions' path
is a function call per tensor, inlined then).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any


def session(tf: Any, mb: float, tensors: int, reuse: bool) -> tuple[Any, list[Any], int]:
    """A session holding the variables, their reads, and the bytes those reads hold."""
    import numpy as np

    per = int(mb * 1e6 / 4 / tensors)
    rng = np.random.default_rng(0)
    graph = tf.Graph()
    with graph.as_default():
        reads = []
        for i in range(tensors):
            if i == 0 or not reuse:
                values = rng.standard_normal(per).astype(np.float32)
                values[::7] = 0.0
                init = tf.compat.v1.constant_initializer(values)
                var = tf.compat.v1.get_variable(f"v{i}", [per], tf.float32, init)
            reads.append(tf.identity(var))
        init_op = tf.compat.v1.global_variables_initializer()
    sess = tf.compat.v1.Session(graph=graph)
    sess.run(init_op)
    return sess, reads, per * 4 * tensors


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=200.0, help="MB of float32 in all (200)")
    parser.add_argument("--tensors", type=int, default=1, help="tensors they are split in (1)")
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds (9)")
    parser.add_argument("--reuse", action="store_true", help="every tensor reads one variable")
    args = parser.parse_args(argv)
    import tensorflow as tf

    from tf2npu.runtime.dump import measure, stats_op

    loaded = stats_op.load()
    if loaded.op is None:
        print(f"stats_op.py: the statistics op is not loaded: {loaded.why_not}", file=sys.stderr)
        return 2
    tf.compat.v1.disable_eager_execution()
    sess, reads, nbytes = session(tf, args.mb, args.tensors, args.reuse)
    paths = {"op": measure.Method(loaded.op), "reductions": measure.REDUCTIONS}
    plans: dict[str, Any] = {}
    with sess.graph.as_default():
        for name, how in paths.items():
            plans[name] = measure.StatsPlan.of(reads, {}, how)
        baseline = tf.group(*[r.op for r in reads])
    fetches = {name: list(plan.fetches) for name, plan in plans.items()}
    rows, first = {}, {}
    sess.run(baseline)  # the session's own first-run costs, paid by neither path
    for name in plans:  # the first run of each compiles its executor (the dump's first step)
        start = time.perf_counter()
        rows[name] = plans[name].decode(sess.run(fetches[name]))[0]
        first[name] = time.perf_counter() - start
    times: dict[str, list[float]] = {name: [] for name in [*fetches, "reads only"]}
    for _ in range(args.rounds):
        for name in times:
            start = time.perf_counter()
            sess.run(fetches.get(name, baseline))
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times.pop("reads only"))
    load = os.getloadavg()
    print(
        f"{args.tensors} float32 tensor(s){' reading one variable' if args.reuse else ''}, "
        f"{nbytes / 1e6:.1f} MB in all; {args.rounds} rounds; "
        f"a run reading them only: {base * 1e3:.2f} ms; load {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f}"
    )
    print("| path | time a run (median) | GB/s | first run |\n| --- | ---: | ---: | ---: |")
    medians = {name: statistics.median(t) - base for name, t in times.items()}
    for name, seconds in medians.items():
        print(
            f"| {name} | {seconds * 1e3:.1f} ms | {nbytes / seconds / 1e9:.2f} "
            f"| {first[name] * 1e3:.0f} ms |"
        )
    print(f"op / reductions: {medians['op'] / medians['reductions']:.3f}")
    _agree(rows["op"], rows["reductions"])
    return 0


def _agree(ours: Sequence[Any], theirs: Sequence[Any]) -> None:
    """The rows of both paths, field by field (a benchmark of a wrong kernel is worthless)."""
    for a, b in zip(ours, theirs, strict=True):
        exact = [(a.max, a.min, a.count, a.nan, a.zero), (b.max, b.min, b.count, b.nan, b.zero)]
        assert exact[0] == exact[1], exact
        assert abs(a.l2norm - b.l2norm) <= 1e-6 * b.l2norm, (a.l2norm, b.l2norm)
        assert abs(a.mean - b.mean) <= 1e-6, (a.mean, b.mean)  # mean |x| is ~0.68 here


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

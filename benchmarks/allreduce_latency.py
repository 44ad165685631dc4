"""All-reduce latency: ``hccl_ops.allreduce`` in an NPU session against a raw TF collective.

Run it as a job of N ranks (each rank runs this script):

    tf2npu run --ranks 2 --report-dir /tmp/ar benchmarks/allreduce_latency.py [--reps 101]

For each size (4 KB, 1 MB, 64 MB of float32) every rank builds both ops on the same server:

* **ours**: ``hccl_ops.allreduce(x, "sum")`` in a session with ``npu_config_proto()``, the path
  a migrated script takes (graph engine, mirror graph, run instruments, the ``HcomAllReduce``
  call of a ``CollectiveReduceV2`` body);
* **raw**: ``collective_ops.all_reduce_v2`` built by hand in a stock session on the rank's
  server target, the baseline the distributed spike measured.

Runs alternate (ours, raw, ours, raw, ...) after 3 warm-ups each so that load on the machine
hits both alike; the op is run as a target (no fetch), as in the spike. Rank 0 prints the median
of each and their ratio, as a Markdown table and as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import collective_ops

from npu_bridge.hccl import hccl_ops
from npu_bridge.npu_init import npu_config_proto
from tf2npu.runtime.distributed.world import current_world

SIZES = {"4 KB": 4 << 10, "1 MB": 1 << 20, "64 MB": 64 << 20}


def _ops(world, nbytes: int, key: int):
    """(ours, raw) all-reduce ops of ``nbytes`` of float32 on this rank, each in its graph."""
    values = np.full(nbytes // 4, world.rank + 1, np.float32)
    ours_graph, raw_graph = tf.Graph(), tf.Graph()
    with ours_graph.as_default():
        x = tf.Variable(values)
        ours = hccl_ops.allreduce(x, "sum").op
        ours_init = tf.compat.v1.global_variables_initializer()
    with raw_graph.as_default(), tf.device(world.device):
        y = tf.Variable(values)
        raw = collective_ops.all_reduce_v2(
            y.read_value(), group_size=world.size, group_key=1, instance_key=key,
            merge_op="Add", final_op="Id",
        ).op  # fmt: skip
        raw_init = tf.compat.v1.global_variables_initializer()
    ours_session = tf.compat.v1.Session(graph=ours_graph, config=npu_config_proto())
    raw_session = tf.compat.v1.Session(world.target, graph=raw_graph, config=world.session_config())
    ours_session.run(ours_init)
    raw_session.run(raw_init)
    return (ours_session, ours), (raw_session, raw)


def _time(session, op) -> float:
    start = time.perf_counter()
    session.run(op)
    return (time.perf_counter() - start) * 1e3


def measure(world, nbytes: int, reps: int, key: int) -> dict[str, float]:
    """Medians and minima (ms) of ``reps`` alternating runs of each op, after 3 warm-ups each
    (on a loaded machine the minimum is the steadier figure)."""
    (ours_session, ours), (raw_session, raw) = _ops(world, nbytes, key)
    for _ in range(3):
        ours_session.run(ours)
        raw_session.run(raw)
    times: dict[str, list[float]] = {"ours": [], "raw": []}
    for _ in range(reps):
        times["ours"].append(_time(ours_session, ours))
        times["raw"].append(_time(raw_session, raw))
    ours_session.close()
    raw_session.close()
    medians = {name: statistics.median(values) for name, values in times.items()}
    best = {f"{name}_min": min(values) for name, values in times.items()}
    return {**medians, "ratio": medians["ours"] / medians["raw"], **best,
            "ratio_min": best["ours_min"] / best["raw_min"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=101)
    parser.add_argument("--big-reps", type=int, default=7, help="repetitions at 64 MB")
    args = parser.parse_args()
    world = current_world()
    if world is None:
        raise SystemExit("run this with tf2npu run --ranks N (it measures a multi-rank job)")
    results = {}
    for index, (label, nbytes) in enumerate(SIZES.items()):
        reps = args.big_reps if nbytes >= 64 << 20 else args.reps
        results[label] = measure(world, nbytes, reps, key=1000 + index)
    if world.rank == 0:
        print(f"all-reduce (sum, float32), {world.size} ranks, ms: median (min)")
        print("| size | ours (hccl_ops, NPU session) | raw TF collective | ratio (of minima) |")
        print("| --- | --- | --- | --- |")
        for label, row in results.items():
            print(
                f"| {label} | {row['ours']:.2f} ({row['ours_min']:.2f}) | {row['raw']:.2f} "
                f"({row['raw_min']:.2f}) | {row['ratio']:.3f} ({row['ratio_min']:.3f}) |"
            )
        print(json.dumps({"ranks": world.size, "results": results}))


if __name__ == "__main__":
    main()

"""All graph-engine passes on a BERT-style training graph against TF's own ``import_graph_def``.

Usage::

    TF_CPP_MIN_LOG_LEVEL=3 python benchmarks/graph_vs_import.py [--layers 12] [--runs 5]

The graph is :func:`tf2npu.testing.bert_graph.build_bert_graph` (Adam, reference variables) with
``--layers`` encoder blocks (12: about 8,300 nodes). Each run, side by side in this process:
``tf.compat.v1.import_graph_def`` of its GraphDef into a fresh ``tf.Graph``, then ``run_engine``
(default ``NpuOptions``) on a fresh IR copy (``Graph.from_graph_def``, not timed). CPU time
(``time.process_time``) and wall time; min and median of each, and the ratio engine / import of
the minima and of the medians, then the engine's own seconds per pass (median). Target (issue 23):
ratio <= 0.5.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

TARGET = 0.5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if args.runs < 1 or args.layers < 1:
        sys.exit(f"--runs {args.runs} --layers {args.layers}: give at least 1 of each")

    import tensorflow as tf

    from tf2npu.config.options import NpuOptions
    from tf2npu.graph.engine import run_engine
    from tf2npu.graph.ir import Graph
    from tf2npu.testing.bert_graph import build_bert_graph

    graph_def = build_bert_graph(layers=args.layers).graph.as_graph_def()
    timings: dict[str, list[tuple[float, float]]] = {"import": [], "engine": []}
    passes: dict[str, list[float]] = {}
    for _ in range(args.runs):
        target = tf.Graph()
        wall, cpu = time.perf_counter(), time.process_time()
        with target.as_default():
            tf.compat.v1.import_graph_def(graph_def, name="")
        timings["import"].append((time.perf_counter() - wall, time.process_time() - cpu))
        ir = Graph.from_graph_def(graph_def)
        wall, cpu = time.perf_counter(), time.process_time()
        run = run_engine(ir, NpuOptions())
        timings["engine"].append((time.perf_counter() - wall, time.process_time() - cpu))
        for name, seconds in run.pass_seconds.items():
            passes.setdefault(name, []).append(seconds)
    print(f"{len(graph_def.node)} nodes, {args.runs} runs")
    for what, column in (("wall", 0), ("cpu", 1)):
        values = {side: [t[column] for t in runs] for side, runs in timings.items()}
        for side, seconds in values.items():
            low, mid = min(seconds), statistics.median(seconds)
            print(f"{what:4} {side:6} min {low:.3f} s  median {mid:.3f} s")
        best = min(values["engine"]) / min(values["import"])
        median = statistics.median(values["engine"]) / statistics.median(values["import"])
        print(f"{what:4} ratio  min {best:.2f}x  median {median:.2f}x  (target <= {TARGET:g}x)")
    for name, seconds in sorted(passes.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"  pass {name:24} median {statistics.median(seconds):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

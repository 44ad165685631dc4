"""Times the graph IR on a synthetic GraphDef: build, export, toposort, lint, signature.

Usage: ``.venv/bin/python benchmarks/graph_ir.py [NODES]`` (default 50000; needs TensorFlow).
The graph is a DAG: node i reads i-1 and i//2 (fan-out), every 100th adds a control edge.
Prints the best of three runs per step.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from tf2npu.graph.ir import Graph
from tf2npu.graph.lint import Signature


def synthetic(size: int) -> Any:
    from tensorflow.core.framework import graph_pb2, types_pb2

    gd = graph_pb2.GraphDef()
    gd.versions.producer = 1087
    for i in range(size):
        node = gd.node.add()
        node.name = f"n{i}"
        node.device = "/device:CPU:0"
        if i < 2:
            node.op = "Placeholder"
            node.attr["dtype"].type = types_pb2.DT_FLOAT
            continue
        node.op = "AddV2"
        node.input.extend([f"n{i - 1}", f"n{i // 2}"])
        if i % 100 == 0:
            node.input.append(f"^n{i - 50}")
        node.attr["T"].type = types_pb2.DT_FLOAT
    return gd


def best(step: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(3):
        start = time.perf_counter()
        result = step()
        times.append(time.perf_counter() - start)
    return min(times), result


def main(size: int) -> None:
    gd = synthetic(size)
    seconds, graph = best(lambda: Graph.from_graph_def(gd))
    print(f"{size} nodes: build {seconds:.3f}s")
    seconds, out = best(graph.to_graph_def)
    print(f"export {seconds:.3f}s (round trip exact: {out == gd})")
    print(f"toposort {best(graph.toposort)[0]:.3f}s")
    graph.lint()  # loads TF's op registry once
    print(f"lint {best(graph.lint)[0]:.3f}s")
    seconds, signature = best(lambda: Signature.of(graph))
    print(f"signature {seconds:.3f}s")
    print(f"lint against the signature {best(lambda: graph.lint(signature))[0]:.3f}s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000)

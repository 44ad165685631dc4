"""How the graph engine's time grows with fan-in, next to a chain and a wide graph (issue 9).

Usage: ``.venv/bin/python benchmarks/partition_scaling.py [--sizes 1000 10000 100000]
[--repeats N]`` (needs TensorFlow for the attr protos).

What ``tf2npu graph inspect`` does after reading the file, on three graph shapes of N+1 nodes
built with the IR directly:

* ``fan-in``: N float ``Placeholder`` s (host: fed each step) read by one ``AddN`` (device):
  one node with N inputs, N memcpy edges into one GeOp. This was quadratic (10k: 5.6 s, 100k:
  over 300 s) because every ``runs_on_host`` diagnostic was checked against the list of those
  already added.
* ``chain``: one ``Placeholder`` and N ``Neg`` in a chain: one GeOp of N nodes.
* ``wide``: N/2 ``Placeholder`` -> ``Neg`` pairs: N/2 components merged into one GeOp.

Each size is timed as ``run_engine`` (every pass) plus ``summarize`` (the report the CLI
prints), best of ``--repeats`` fresh graphs, in wall seconds and in CPU seconds of this
process (the CPU figure moves less on a loaded machine). The partition pass is printed on its
own. ``growth`` is the ratio of the total to the previous size's: about 10 per tenfold size
when linear, about 100 when quadratic.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from tf2npu.config.options import NpuOptions
from tf2npu.graph.engine import run_engine
from tf2npu.graph.ir import Graph, TensorRef
from tf2npu.graph.report import summarize


class _Attrs:
    """The AttrValue protos the shapes need (TensorFlow imported once)."""

    def __init__(self) -> None:
        from tensorflow.core.framework import attr_value_pb2, tensor_shape_pb2, types_pb2

        proto = tensor_shape_pb2.TensorShapeProto
        shape = proto(dim=[proto.Dim(size=4)])
        self.f32 = attr_value_pb2.AttrValue(type=types_pb2.DT_FLOAT)
        self.shape = attr_value_pb2.AttrValue(shape=shape)
        self.int = attr_value_pb2.AttrValue

    def placeholder(self, g: Graph, name: str) -> TensorRef:
        attrs = {"dtype": self.f32, "shape": self.shape}
        return g.add_node(name, "Placeholder", [], attrs=attrs).output()

    def neg(self, g: Graph, name: str, x: TensorRef) -> TensorRef:
        return g.add_node(name, "Neg", [x], attrs={"T": self.f32}).output()


def fan_in(a: _Attrs, n: int) -> Graph:
    g = Graph()
    feeds = [a.placeholder(g, f"p{i}") for i in range(n)]
    g.add_node("sum", "AddN", feeds, attrs={"T": a.f32, "N": a.int(i=n)})
    return g


def chain(a: _Attrs, n: int) -> Graph:
    g = Graph()
    x = a.placeholder(g, "p")
    for i in range(n):
        x = a.neg(g, f"neg{i}", x)
    return g


def wide(a: _Attrs, n: int) -> Graph:
    g = Graph()
    for i in range(n // 2):
        a.neg(g, f"neg{i}", a.placeholder(g, f"p{i}"))
    return g


SHAPES: dict[str, Callable[[_Attrs, int], Graph]] = {"fan-in": fan_in, "chain": chain, "wide": wide}


def measure(build: Callable[[], Graph], repeats: int) -> tuple[float, float, float]:
    """Best of ``repeats``: (wall, CPU, partition pass) seconds of engine + summary."""
    best: tuple[float, float, float] | None = None
    options = NpuOptions.from_values({})
    for _ in range(repeats):
        graph = build()
        wall, cpu = time.perf_counter(), time.process_time()
        run = run_engine(graph, options)
        summarize(run, "benchmark")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if best is None or cpu < best[1]:
            best = (wall, cpu, run.pass_seconds["partition"])
    assert best is not None
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=1, help="fresh graphs per size (best)")
    parser.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=list(SHAPES))
    args = parser.parse_args(argv)
    attrs = _Attrs()
    run_engine(fan_in(attrs, 10), NpuOptions.from_values({}))  # warm: registries, op library
    print(f"{'shape':<7} {'N':>8} {'wall s':>8} {'CPU s':>8} {'partition s':>12} {'growth':>7}")
    for shape in args.shapes:
        previous: float | None = None
        for n in args.sizes:
            wall, cpu, part = measure(lambda: SHAPES[shape](attrs, n), args.repeats)  # noqa: B023
            growth = f"{cpu / previous:.1f}x" if previous else "-"
            row = f"{shape:<7} {n:>8} {wall:>8.2f} {cpu:>8.2f} {part:>12.2f} {growth:>7}"
            print(row, flush=True)
            previous = cpu


if __name__ == "__main__":
    main()

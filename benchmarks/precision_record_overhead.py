"""Cost of the per-op precision record (``runtime/precision_record.py``) next to the compile.

Builds the BERT-style test graph (``tf2npu.testing.bert_graph``), runs the engine over it under
``allow_mix_precision`` and times :func:`precision_rows` over the result, without and with the
script lines of the lowered ops (looked up in the TensorFlow graph as a recorded run does)::

    TF_ENABLE_ONEDNN_OPTS=0 .venv/bin/python benchmarks/precision_record_overhead.py --layers 12
"""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from tf2npu.config.options import NpuOptions
    from tf2npu.graph.engine import run_engine
    from tf2npu.graph.ir import Graph
    from tf2npu.runtime.instruments import CompileEvent
    from tf2npu.runtime.precision_record import precision_rows
    from tf2npu.testing.bert_graph import build_bert_graph

    bert = build_bert_graph(layers=args.layers, hidden=64, seq=32)
    options = NpuOptions.from_values({"precision_mode": "allow_mix_precision"})
    start = time.perf_counter()
    result = run_engine(Graph.from_graph_def(bert.graph_def), options)
    compile_s = time.perf_counter() - start
    session = SimpleNamespace(graph=bert.graph)
    event = CompileEvent(session, 1, result.graph, None, None)  # type: ignore[arg-type]
    for lines in (False, True):
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            rows = precision_rows(event, lines=lines)
            best = min(best, time.perf_counter() - start)
        lowered = sum(row.lowered for row in rows)
        print(
            f"layers={args.layers} nodes={len(bert.graph_def.node)} rows={len(rows)} "
            f"lowered={lowered} script lines={lines} engine={compile_s * 1e3:.0f} ms "
            f"record={best * 1e3:.1f} ms ({100 * best / compile_s:.1f}% of the engine)"
        )


if __name__ == "__main__":
    main()

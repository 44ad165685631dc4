"""Measures what profiling (``profiling_mode``, ``tf2npu profile``) costs on a BERT-style step.

Usage: ``TF_CPP_MIN_LOG_LEVEL=2 TF_ENABLE_ONEDNN_OPTS=0 .venv/bin/python
benchmarks/profile_overhead.py [--steps N] [--warmup N] [--layers L] [--json OUT]``.

The model is ``dump_overhead.py``'s (token ids -> embeddings -> ``--layers`` encoder layers ->
pooler -> classifier, Adam; batch 8, sequence 128, hidden 256). Two ``NpuSession``s run it under
``must_keep_origin_dtype`` in one process: *npu* (no profiling) and *npu + profile*
(``profiling_mode=True``, every run traced). After ``--warmup`` steps of each (the profile's
first traced run reads every op's facts once), steps alternate between the two (the order
flips every step) and the medians of ``sess.run``'s wall time are compared. A profiled step is
the whole price: TensorFlow's ``FULL_TRACE`` collection, the step stats mapped and written.
Then the analysis of the traced runs (tables, timeline, advice, page) is timed, with its row
count. The budget (issue 13): a profiled step at most 2x a plain one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dump_overhead import Sizes, build

BUDGET = 2.0
"""A profiled step over a plain step (issue 13)."""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--json", type=Path)
    return parser.parse_args(argv)


def _config(**values: Any) -> Any:
    from tf2npu.runtime.protos import npu_session_config

    config = npu_session_config(None)
    params = config.graph_options.rewrite_options.custom_optimizers[0].parameter_map
    params["precision_mode"].s = b"must_keep_origin_dtype"
    for key, value in values.items():
        if isinstance(value, bool):
            params[key].b = value
        else:
            params[key].s = str(value).encode()
    return config


def measure(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    import tensorflow as tf

    from tf2npu import runtime
    from tf2npu.runtime.profile import OpProfile

    runtime.install()
    runtime.configure(report_dir=root)
    graph = tf.Graph()
    with graph.as_default():
        built = build(tf, Sizes(layers=args.layers))
    output = json.dumps({"output": str(root / "prof")})
    sessions = {
        "npu": tf.compat.v1.Session(graph=graph, config=_config()),
        "npu + profile": tf.compat.v1.Session(
            graph=graph, config=_config(profiling_mode=True, profiling_options=output)
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in sessions}
    for sess in sessions.values():
        sess.run(built.init)
        for _ in range(args.warmup):
            sess.run(built.fetches, built.feed)
    order = list(sessions)
    for step in range(args.steps):
        for name in order if step % 2 == 0 else reversed(order):
            started = time.perf_counter()
            sessions[name].run(built.fetches, built.feed)
            times[name].append(time.perf_counter() - started)
    for sess in sessions.values():
        sess.close()
    ctx = runtime.context()
    (profile,) = [i for i in ctx.extra_instruments if isinstance(i, OpProfile)]
    started = time.perf_counter()
    profile.close()
    close_s = time.perf_counter() - started
    analysis = profile.analysis
    assert analysis is not None
    plain = statistics.median(times["npu"])
    traced = statistics.median(times["npu + profile"])
    return {
        "layers": args.layers,
        "steps": args.steps,
        "plain_step_ms": round(plain * 1e3, 1),
        "profiled_step_ms": round(traced * 1e3, 1),
        "ratio": round(traced / plain, 2),
        "budget": BUDGET,
        "ops_per_step": len([r for r in analysis.rows if r.iteration == 2 and not r.is_memcpy]),
        "rows": len(analysis.rows),
        "analysis_s": round(analysis.seconds, 2),
        "analysis_and_files_s": round(close_s, 2),
        "load": os.getloadavg()[0],
    }


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tf2npu-profbench-") as tmp:
        result = measure(args, Path(tmp))
    for key, value in result.items():
        print(f"{key:22} {value}")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0 if result["ratio"] <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

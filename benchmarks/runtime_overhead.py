"""Measures what the runtime adapter (``NpuSession``) costs over a stock session.

Usage: ``TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python benchmarks/runtime_overhead.py [--steps N]
[--layers L] [--quick]``.

Two figures, both against a stock ``tf.compat.v1.Session`` on the *same* graph in the same
process:

1. **Per-step overhead.** For each workload one stock session and one ``NpuSession`` share a
   graph; after a warm-up, steps alternate between them (the order flips every step, so neither
   side is always first after the other's cache traffic) and the medians of the per-step wall
   times are compared. The stock session gets the NPU session's config without the
   ``NpuOptimizer`` entry, which is exactly what the NPU session's inner session runs with
   (``remapping`` and ``memory_optimization`` off, XLA JIT off): any difference is the
   adapter's Python path plus whatever the engine changed in the graph. Under the *identity*
   options (``precision_mode=must_keep_origin_dtype`` and a ``fusion_switch_file`` turning
   every fusion off) the engine changes nothing numerically, so the ratio is the adapter's
   overhead (budget: ratio <= 1.05). The *default* options (``allow_fp32_to_fp16``, fusions on)
   are measured for information: on a CPU, float16 compute and fused ops change the compute
   itself, which is not adapter overhead. An *A/A control* (two stock sessions, same method)
   shows the noise floor. Every measurement runs ``--rounds`` times; ratios are the median of
   the rounds.
2. **First-run graph rewrite.** A ~10k-node training graph (``--layers`` dense layers + Adam,
   TF1 reference variables) is built; the first ``run(init)`` of a stock session and of an
   ``NpuSession`` are timed on it, and the NPU session's first sync (export + engine + import,
   ``sess.mirror.syncs[0]``) is reported by phase (budget: sync <= 1.5 s), and the sync after
   one op is added to the graph (``syncs[1]``). One more sync, on a
   fresh session, is run under ``cProfile``; the 10 entries with the largest cumulative time are
   printed.

Results are printed as Markdown tables. ``--quick`` is the smoke-test size (few steps, a small
rewrite graph, the default-options pass skipped). Artifacts the engine writes
(``check_result.tf.json``) go to a temporary directory that is deleted at exit.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Every fusion rule off: with ``must_keep_origin_dtype`` the engine changes nothing numerically.
IDENTITY_SWITCH = {"Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}}
STEP_BUDGET = 1.05
SYNC_BUDGET_S = 1.5


# -- workloads ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Built:
    """What a workload put in the default graph: what one step runs, and how to start."""

    fetches: Any
    init: Any
    feed: dict[Any, Any] | None = None
    use_callable: bool = False


def _trivial(tf: Any, *, use_callable: bool = False) -> Built:
    """``assign_add`` of a constant and a fetch of the new value: nothing but the run path."""
    v = tf.compat.v1.Variable(0.0, use_resource=False, name="v")
    step = tf.compat.v1.assign_add(v, tf.constant(1.0))
    return Built(step, tf.compat.v1.global_variables_initializer(), use_callable=use_callable)


def _dense(tf: Any, x: Any, units: int, name: str, relu: bool = True) -> Any:
    with tf.compat.v1.variable_scope(name, use_resource=False):
        w = tf.compat.v1.get_variable("kernel", [int(x.shape[-1]), units])
        b = tf.compat.v1.get_variable("bias", [units], initializer=tf.zeros_initializer())
    y = tf.nn.bias_add(tf.matmul(x, w), b)
    return tf.nn.relu(y) if relu else y


def _mlp_loss(tf: Any, x: Any, labels: Any) -> Any:
    h = _dense(tf, x, 256, "fc1")
    h = _dense(tf, h, 256, "fc2")
    logits = _dense(tf, h, 10, "out", relu=False)
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def _mnist_batch(batch: int, shape: Sequence[int]) -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, *shape)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return x, y


def _mlp(tf: Any, *, feed: bool = False) -> Built:
    """MLP 784-256-256-10, batch 64, Adam; inputs constant, or fed from numpy each step."""
    x_val, y_val = _mnist_batch(64, (784,))
    if feed:
        x = tf.compat.v1.placeholder(tf.float32, [64, 784], name="x")
        y = tf.compat.v1.placeholder(tf.float32, [64, 10], name="y")
        feeds: dict[Any, Any] | None = {x: x_val, y: y_val}
    else:
        x, y, feeds = tf.constant(x_val), tf.constant(y_val), None
    loss = _mlp_loss(tf, x, y)
    train = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(loss)
    return Built([train, loss], tf.compat.v1.global_variables_initializer(), feeds)


def _convnet(tf: Any) -> Built:
    """2x conv3x3 + max-pool + dense on 28x28x1, batch 32, Momentum."""
    x_val, y_val = _mnist_batch(32, (28, 28, 1))
    h = tf.constant(x_val)
    for i, filters in enumerate((16, 32)):
        with tf.compat.v1.variable_scope(f"conv{i}", use_resource=False):
            k = tf.compat.v1.get_variable("kernel", [3, 3, int(h.shape[-1]), filters])
            b = tf.compat.v1.get_variable("bias", [filters], initializer=tf.zeros_initializer())
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, k, [1, 1, 1, 1], "SAME"), b))
    h = tf.nn.max_pool2d(h, 2, 2, "VALID")
    logits = _dense(tf, tf.reshape(h, [32, 14 * 14 * 32]), 10, "out", relu=False)
    loss = tf.reduce_mean(
        tf.nn.softmax_cross_entropy_with_logits(labels=tf.constant(y_val), logits=logits)
    )
    train = tf.compat.v1.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
    return Built([train, loss], tf.compat.v1.global_variables_initializer())


WORKLOADS: dict[str, Callable[[Any], Built]] = {
    "trivial assign_add + fetch": _trivial,
    "trivial, make_callable": lambda tf: _trivial(tf, use_callable=True),
    "MLP 784-256-256-10 b64 Adam": _mlp,
    "MLP 784-256-256-10 b64 Adam, feed_dict": lambda tf: _mlp(tf, feed=True),
    "convnet 2xconv3x3+pool+dense b32 Momentum": _convnet,
}


# -- sessions -----------------------------------------------------------------------------------


def session_configs(values: dict[str, str]) -> tuple[Any, Any]:
    """(NPU session config with ``values`` in its ``parameter_map``, the same config stock)."""
    from tf2npu.config.proto import write_parameter_map
    from tf2npu.runtime.protos import npu_session_config, without_npu_optimizer

    npu = npu_session_config(None)
    write_parameter_map(npu.graph_options.rewrite_options.custom_optimizers[0], values)
    return npu, without_npu_optimizer(npu)


def open_pair(tf: Any, graph: Any, values: dict[str, str] | None) -> tuple[Any, Any]:
    """A stock session and an ``NpuSession`` over ``graph`` (checked to be what they claim).

    ``values=None`` is the A/A control: two stock sessions with the same config. The stock
    sessions bypass the hook, so the baseline is TensorFlow's session, not a watched one.
    """
    from tf2npu.runtime.session import NpuSession
    from tf2npu.runtime.stock import stock_session

    npu_config, stock_config = session_configs(values or {})
    # Stock sessions made past the hook: a session the hook makes is watched for the run
    # summary (steps, non-finite fetches), a few microseconds per run that stock TF never pays.
    stock = stock_session(graph=graph, config=stock_config)
    other = (
        stock_session(graph=graph, config=stock_config)
        if values is None
        else tf.compat.v1.Session(graph=graph, config=npu_config)
    )
    if isinstance(stock, NpuSession) or isinstance(other, NpuSession) != (values is not None):
        raise RuntimeError("the session hook did not pick the expected session classes")
    return stock, other


# -- 1. per-step overhead -----------------------------------------------------------------------


@dataclass(frozen=True)
class StepResult:
    """Medians of interleaved per-step wall times (one round), and what the engine did."""

    workload: str
    mode: str
    steps: int
    stock_s: float
    npu_s: float
    casts: int | None
    fusions: int | None

    @property
    def ratio(self) -> float:
        return self.npu_s / self.stock_s

    @property
    def diff_us(self) -> float:
        return (self.npu_s - self.stock_s) * 1e6


def _stepper(sess: Any, built: Built) -> Callable[[], Any]:
    if built.use_callable:
        return sess.make_callable(built.fetches)  # type: ignore[no-any-return]
    return lambda: sess.run(built.fetches, feed_dict=built.feed)


def _interleave(
    runs: tuple[Callable[[], Any], Callable[[], Any]], steps: int, max_seconds: float
) -> tuple[list[float], list[float]]:
    """Per-step wall times of both sides; the order flips every step. Stops early (after at
    least 10 steps) once ``max_seconds`` have passed, so a slow workload stays affordable."""
    times: tuple[list[float], list[float]] = ([], [])
    began = time.perf_counter()
    for i in range(steps):
        for side in (0, 1) if i % 2 else (1, 0):
            start = time.perf_counter()
            runs[side]()
            times[side].append(time.perf_counter() - start)
        if i >= 9 and time.perf_counter() - began > max_seconds:
            break
    return times


def measure_steps(
    tf: Any, name: str, mode: str, values: dict[str, str] | None, args: argparse.Namespace
) -> StepResult:
    """One round of one workload under one option set (``values=None``: the A/A control)."""
    graph = tf.Graph()
    with graph.as_default():
        built = WORKLOADS[name](tf)
    stock, npu = open_pair(tf, graph, values)
    try:
        for sess in (stock, npu):
            sess.run(built.init)
        runs = (_stepper(stock, built), _stepper(npu, built))
        for _ in range(args.warmup):
            runs[0]()
            runs[1]()
        gc.collect()
        stock_times, npu_times = _interleave(runs, args.steps, args.max_seconds)
        summary = npu.mirror.last_summary if values is not None else None
    finally:
        stock.close()
        npu.close()
    return StepResult(
        name,
        mode,
        len(stock_times),
        statistics.median(stock_times),
        statistics.median(npu_times),
        None if summary is None else summary.casts_inserted,
        None if summary is None else sum(summary.fusions.values()),
    )


# -- 2. first-run graph rewrite -----------------------------------------------------------------


@dataclass(frozen=True)
class RewriteResult:
    """First ``run(init)`` of both sessions on the large graph, and the NPU session's sync."""

    layers: int
    client_nodes: int
    imported_nodes: int
    export_s: float
    engine_s: float
    import_s: float
    stock_first_run_s: float
    npu_first_run_s: float
    resync_s: float
    """The next sync, after one op was added to the graph (the engine sees the whole graph)."""

    @property
    def sync_s(self) -> float:
        return self.export_s + self.engine_s + self.import_s


def large_graph(tf: Any, layers: int) -> tuple[Any, Any, Any]:
    """``layers`` dense 16-unit layers, squared loss, Adam: (graph, init op, train op)."""
    graph = tf.Graph()
    with graph.as_default():
        x_val, _ = _mnist_batch(16, (16,))
        h = tf.constant(x_val)
        for i in range(layers):
            h = _dense(tf, h, 16, f"layer{i}")
        loss = tf.reduce_mean(tf.square(h - tf.constant(x_val)))
        train = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    return graph, init, train


def measure_rewrite(tf: Any, layers: int, values: dict[str, str]) -> RewriteResult:
    """Stock first ``run(init)``, then NPU first ``run(init)`` on the same (fresh) graph."""
    graph, init, _ = large_graph(tf, layers)
    stock, npu = open_pair(tf, graph, values)
    try:
        gc.collect()
        start = time.perf_counter()
        stock.run(init)
        stock_s = time.perf_counter() - start
        gc.collect()
        start = time.perf_counter()
        npu.run(init)
        npu_s = time.perf_counter() - start
        with graph.as_default():
            extra = tf.identity(init.graph.get_tensor_by_name("layer0/bias:0"), name="extra")
        npu.run(extra)
        sync, resync = npu.mirror.syncs[0], npu.mirror.syncs[1]
    finally:
        stock.close()
        npu.close()
    return RewriteResult(
        layers,
        sync.client_nodes,
        sync.imported_nodes,
        sync.export_seconds,
        sync.engine_seconds,
        sync.import_seconds,
        stock_s,
        npu_s,
        resync.export_seconds + resync.engine_seconds + resync.import_seconds,
    )


def profile_sync(tf: Any, layers: int, values: dict[str, str], top: int = 10) -> str:
    """The ``top`` cumulative-time entries of one first sync (fresh graph and session)."""
    graph, _, _ = large_graph(tf, layers)
    npu = tf.compat.v1.Session(graph=graph, config=session_configs(values)[0])
    try:
        profiler = cProfile.Profile()
        profiler.runcall(npu.mirror.sync)
    finally:
        npu.close()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return _trim_profile(out.getvalue())


def _trim_profile(text: str) -> str:
    """pstats output from its column header on, with long paths shortened to the package."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    kept = []
    for line in lines[start:]:
        for marker in ("site-packages/", "/src/"):
            head, sep, tail = line.partition(marker)
            if sep:
                line = head[: head.rfind(" ") + 1] + tail
        kept.append(line.rstrip())
    return "\n".join(line for line in kept if line)


# -- report -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepRow:
    """The rounds of one workload under one option set, summarised by their medians."""

    workload: str
    mode: str
    rounds: tuple[StepResult, ...]

    @property
    def ratio(self) -> float:
        return statistics.median(r.ratio for r in self.rounds)

    @property
    def diff_us(self) -> float:
        return statistics.median(r.diff_us for r in self.rounds)

    @property
    def stock_s(self) -> float:
        return statistics.median(r.stock_s for r in self.rounds)

    @property
    def npu_s(self) -> float:
        return statistics.median(r.npu_s for r in self.rounds)


def step_rows(results: Sequence[StepResult]) -> list[StepRow]:
    """Rounds grouped by (workload, mode), in the order they were first measured."""
    groups: dict[tuple[str, str], list[StepResult]] = {}
    for r in results:
        groups.setdefault((r.workload, r.mode), []).append(r)
    return [StepRow(w, m, tuple(rounds)) for (w, m), rounds in groups.items()]


def step_table(results: Sequence[StepResult]) -> str:
    rows = [
        "| workload | options | steps | stock median | NPU median | ratio NPU/stock "
        "| per round | difference | casts, fusions |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in step_rows(results):
        flag = "" if row.mode != "identity" or row.ratio <= STEP_BUDGET else " (over budget)"
        last = row.rounds[-1]
        changed = "–" if last.casts is None else f"{last.casts}, {last.fusions}"
        per_round = ", ".join(f"{r.ratio:.3f}" for r in row.rounds)
        rows.append(
            f"| {row.workload} | {row.mode} | {min(r.steps for r in row.rounds)} "
            f"| {row.stock_s * 1e3:.3f} ms | {row.npu_s * 1e3:.3f} ms "
            f"| **{row.ratio:.3f}**{flag} | {per_round} | {row.diff_us:+.0f} µs | {changed} |"
        )
    return "\n".join(rows)


def rewrite_table(results: Sequence[RewriteResult]) -> str:
    rows = [
        "| run | client nodes | imported | export | engine | import | **sync** "
        "| stock first run(init) | NPU first run(init) | NPU extra | sync after adding 1 op |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for i, r in enumerate(results, 1):
        rows.append(
            f"| {i} | {r.client_nodes:,} | {r.imported_nodes:,} | {r.export_s:.3f} s "
            f"| {r.engine_s:.3f} s | {r.import_s:.3f} s | **{r.sync_s:.3f} s** "
            f"| {r.stock_first_run_s:.3f} s | {r.npu_first_run_s:.3f} s "
            f"| {r.npu_first_run_s - r.stock_first_run_s:+.3f} s | {r.resync_s:.3f} s |"
        )
    return "\n".join(rows)


def verdicts(steps: Sequence[StepResult], rewrites: Sequence[RewriteResult]) -> list[str]:
    lines = []
    identity = [r for r in step_rows(steps) if r.mode == "identity"]
    if identity:
        worst = max(identity, key=lambda r: r.ratio)
        ok = worst.ratio <= STEP_BUDGET
        lines.append(
            f"per-step overhead (identity): worst ratio {worst.ratio:.3f} ({worst.workload}); "
            f"budget <= {STEP_BUDGET}: {'met' if ok else 'MISSED'}"
        )
    if rewrites:
        best = min(r.sync_s for r in rewrites)
        median = statistics.median(r.sync_s for r in rewrites)
        ok = median <= SYNC_BUDGET_S
        lines.append(
            f"first sync ({rewrites[0].client_nodes:,} nodes): best {best:.3f} s, "
            f"median {median:.3f} s; budget <= {SYNC_BUDGET_S} s: {'met' if ok else 'MISSED'}"
        )
    return lines


# -- main ---------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, help="interleaved steps per workload (300)")
    parser.add_argument("--warmup", type=int, help="untimed steps per side first (30)")
    parser.add_argument("--rounds", type=int, help="rounds of every step measurement (3)")
    parser.add_argument(
        "--max-seconds", type=float, help="timed seconds per workload and round (20)"
    )
    parser.add_argument(
        "--layers", type=int, help="dense layers of the rewrite graph (222: ~10k nodes)"
    )
    parser.add_argument("--repeats", type=int, help="rewrite measurements, fresh graphs (3)")
    parser.add_argument(
        "--quick", action="store_true", help="smoke size: 20 steps, 20 layers, identity only"
    )
    args = parser.parse_args(argv)
    quick = {"steps": 20, "warmup": 3, "rounds": 1, "max_seconds": 5.0, "layers": 20,
             "repeats": 1}  # fmt: skip
    full = {"steps": 300, "warmup": 30, "rounds": 3, "max_seconds": 20.0, "layers": 222,
            "repeats": 3}  # fmt: skip
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def option_sets(folder: Path, quick: bool) -> dict[str, dict[str, str] | None]:
    """Mode name -> ``parameter_map`` values (None: the A/A control, two stock sessions)."""
    switch = folder / "fusion_switch.json"
    switch.write_text(json.dumps(IDENTITY_SWITCH))
    modes: dict[str, dict[str, str] | None] = {
        "A/A control": None,
        "identity": {"precision_mode": "must_keep_origin_dtype",
                     "fusion_switch_file": str(switch)},
        "default": {},
    }  # fmt: skip
    if quick:
        del modes["default"]
    return modes


def run_all(
    tf: Any, args: argparse.Namespace, folder: Path
) -> tuple[list[StepResult], list[RewriteResult], str]:
    modes = option_sets(folder, args.quick)
    identity = modes["identity"]
    assert identity is not None
    steps = []
    for round_ in range(1, args.rounds + 1):
        for name in WORKLOADS:
            for mode, values in modes.items():
                _progress(f"round {round_}: {name}, {mode}")
                steps.append(measure_steps(tf, name, mode, values, args))
    measure_rewrite(tf, 5, identity)  # warm: op registry, engine tables
    rewrites = []
    for i in range(args.repeats):
        _progress(f"first run of the {args.layers}-layer graph, {i + 1}/{args.repeats}")
        rewrites.append(measure_rewrite(tf, args.layers, identity))
    _progress("profiling one sync")
    return steps, rewrites, profile_sync(tf, args.layers, identity)


def _progress(text: str) -> None:
    print(f"... {text}", file=sys.stderr, flush=True)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    import tensorflow as tf

    import tf2npu.runtime as runtime

    load_before = os.getloadavg()
    runtime.install()
    try:
        with tempfile.TemporaryDirectory(prefix="tf2npu-bench-") as tmp:
            runtime.configure(report_dir=tmp)
            steps, rewrites, profile = run_all(tf, args, Path(tmp))
    finally:
        runtime.uninstall()
    load = ", ".join(f"{x:.2f}" for x in load_before)
    print(f"load average (1, 5, 15 min) before: {load}; after: ", end="")
    print(", ".join(f"{x:.2f}" for x in os.getloadavg()) + f"; cores: {os.cpu_count()}")
    print(
        f"\n## Per-step time ({args.rounds} round(s) of up to {args.steps} interleaved steps "
        f"after {args.warmup} warm-up, at most {args.max_seconds:g} s each)\n"
    )
    print(step_table(steps))
    print(f"\n## First run of a {args.layers}-layer training graph (identity options)\n")
    print(rewrite_table(rewrites))
    print("\n## cProfile of one first sync (top 10, cumulative)\n")
    print("```\n" + profile + "\n```\n")
    for line in verdicts(steps, rewrites):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

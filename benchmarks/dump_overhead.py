"""Measures what tensor dumps (``enable_dump``) cost on a BERT-style training step.

Usage: ``TF_CPP_MIN_LOG_LEVEL=2 TF_ENABLE_ONEDNN_OPTS=0 .venv/bin/python
benchmarks/dump_overhead.py [--steps N] [--warmup N] [--json OUT] [--profile stats|tensor]``.

One graph (our own code): token ids -> embedding lookup (+ position embedding) -> ``--layers``
BERT encoder layers (multi-head self-attention, residual + layer norm, GELU FFN, residual +
layer norm) -> pooler on the first token -> 2-way classifier, softmax cross-entropy, Adam.
Four sessions are opened on it in one process:

* *stock*: a plain ``tf.compat.v1.Session`` (no ``NpuOptimizer``), for reference;
* *npu*: an ``NpuSession`` under ``--precision-mode`` (``must_keep_origin_dtype``: the CPU
  computes what stock computes, so the dump's cost is not hidden behind float16 emulation);
* *npu + stats*: the same with ``enable_dump``, ``dump_data=stats``, ``dump_mode`` =
  ``--dump-mode`` (``all``), every step;
* *npu + tensor*: the same with ``dump_data=tensor`` (``.npy`` files), every step.

After ``--warmup`` steps of each, steps go round the sessions (the order rotates every step,
so load drift hits all of them alike) and the median step wall time of each is taken. A
dumping session's step is ``run`` **plus** waiting for its writer thread to finish that step's
files (``DumpWriter.flush``): its cost is paid inside its own step, never while another
session is being timed, and the ratio is an upper bound (a real run overlaps the writer with
the next step). The time ``run`` alone took is reported too.

Throughput of the tensor dump, from its timed steps: tensor bytes written (``DumpWriter.bytes``,
``.npy`` payload without headers) over (a) the summed step times including the flushes, (b) the
writer thread's busy time (``_write_step``), (c) the time inside ``np.save`` only (the disk
side). The dumps go to a temporary folder on local disk that is deleted at exit (the page cache
absorbs most writes: no ``fsync``, as the device tools do not either).

``--profile stats|tensor`` instead runs that dump session alone for ``--steps`` steps under
``cProfile``: the main thread (run, fetch, hook) and, separately, the writer thread's work.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import math
import os
import pstats
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATS_BUDGET = 1.5
"""``stats`` mode: step time with the dump over the step time without (issue 11)."""
TENSOR_BUDGET_MBS = 200.0
"""``tensor`` mode: MB/s of tensor data written (issue 11)."""
MB = 1e6
MODES = ("stock", "npu", "npu + fetch only", "npu + stats", "npu + tensor")
DUMPED = {"npu + fetch only": "tensor", "npu + stats": "stats", "npu + tensor": "tensor"}
NEVER = "999999999"
"""``dump_step`` of the *fetch only* session: the tensors are fetched, no step is written."""


# -- the model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    """The encoder's dimensions."""

    batch: int = 8
    seq: int = 128
    hidden: int = 256
    heads: int = 4
    ffn: int = 1024
    layers: int = 2
    vocab: int = 4096


@dataclass(frozen=True)
class Built:
    """What one training step runs, how to start, and what it is fed."""

    fetches: Any
    init: Any
    feed: dict[Any, Any]


def _dense(tf: Any, x: Any, units: int, name: str) -> Any:
    with tf.compat.v1.variable_scope(name):
        w = tf.compat.v1.get_variable(
            "kernel", [int(x.shape[-1]), units],
            initializer=tf.compat.v1.truncated_normal_initializer(stddev=0.02),
        )  # fmt: skip
        b = tf.compat.v1.get_variable("bias", [units], initializer=tf.zeros_initializer())
    return tf.nn.bias_add(tf.matmul(x, w), b)


def _layer_norm(tf: Any, x: Any, name: str) -> Any:
    with tf.compat.v1.variable_scope(name):
        width = int(x.shape[-1])
        gamma = tf.compat.v1.get_variable("gamma", [width], initializer=tf.ones_initializer())
        beta = tf.compat.v1.get_variable("beta", [width], initializer=tf.zeros_initializer())
    mean, var = tf.nn.moments(x, [-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(var + 1e-12) * gamma + beta


def _gelu(tf: Any, x: Any) -> Any:
    cdf = 0.5 * (1.0 + tf.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))
    return x * cdf


def _attention(tf: Any, h: Any, s: Sizes) -> Any:
    """Multi-head self-attention over ``h`` ([batch * seq, hidden]); returns the same shape."""
    head = s.hidden // s.heads

    def split(t: Any) -> Any:
        return tf.transpose(tf.reshape(t, [s.batch, s.seq, s.heads, head]), [0, 2, 1, 3])

    q, k, v = (split(_dense(tf, h, s.hidden, n)) for n in ("query", "key", "value"))
    scores = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(head))
    probs = tf.nn.softmax(scores)
    context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
    return tf.reshape(context, [s.batch * s.seq, s.hidden])


def build(tf: Any, s: Sizes) -> Built:
    """The BERT-style training step (see the module docstring)."""
    import numpy as np

    rng = np.random.default_rng(0)
    ids = tf.compat.v1.placeholder(tf.int32, [s.batch, s.seq], name="input_ids")
    labels = tf.compat.v1.placeholder(tf.int32, [s.batch], name="labels")
    init = tf.compat.v1.truncated_normal_initializer(stddev=0.02)
    table = tf.compat.v1.get_variable("word_embeddings", [s.vocab, s.hidden], initializer=init)
    position = tf.compat.v1.get_variable("position_embeddings", [s.seq, s.hidden], initializer=init)
    h = tf.nn.embedding_lookup(table, ids) + position
    h = _layer_norm(tf, tf.reshape(h, [s.batch * s.seq, s.hidden]), "embeddings_ln")
    for layer in range(s.layers):
        with tf.compat.v1.variable_scope(f"layer_{layer}"):
            attn = _dense(tf, _attention(tf, h, s), s.hidden, "attention_output")
            h = _layer_norm(tf, attn + h, "attention_ln")
            ffn = _dense(tf, _gelu(tf, _dense(tf, h, s.ffn, "intermediate")), s.hidden, "output")
            h = _layer_norm(tf, ffn + h, "output_ln")
    first = tf.reshape(h, [s.batch, s.seq, s.hidden])[:, 0]
    logits = _dense(tf, tf.tanh(_dense(tf, first, s.hidden, "pooler")), 2, "classifier")
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )
    train = tf.compat.v1.train.AdamOptimizer(1e-4).minimize(loss)
    feed = {
        ids: rng.integers(0, s.vocab, (s.batch, s.seq)).astype("int32"),
        labels: rng.integers(0, 2, s.batch).astype("int32"),
    }
    return Built([train, loss], tf.compat.v1.global_variables_initializer(), feed)


# -- sessions and their dump writers ------------------------------------------------------------


@dataclass
class WriterClock:
    """Times a ``DumpWriter``'s work in its thread: whole steps, and ``np.save`` alone.

    Wraps the writer's own methods on the instance (the queue looks them up per item).
    """

    writer: Any
    step_s: float = 0.0
    save_s: float = 0.0
    fetched: int = 0
    """Bytes of the distinct tensors the dumped runs fetched."""
    profiler: cProfile.Profile | None = None
    _seen: int = 0

    def __post_init__(self) -> None:
        write_step, save = self.writer._write_step, self.writer._save

        def timed_step(*args: Any) -> None:
            values = args[2]
            if id(values) != self._seen:  # the models of one run share its values
                self._seen = id(values)
                self.fetched += sum(getattr(v, "nbytes", 0) for v in values)
            start = time.perf_counter()
            if self.profiler is None:
                write_step(*args)
            else:
                self.profiler.runcall(write_step, *args)
            self.step_s += time.perf_counter() - start

        def timed_save(*args: Any) -> None:
            start = time.perf_counter()
            save(*args)
            self.save_s += time.perf_counter() - start

        self.writer._write_step = timed_step
        self.writer._save = timed_save

    def figures(self) -> tuple[int, int, float, float, int]:
        """(files, bytes, writer busy seconds, np.save seconds, bytes fetched) so far."""
        return self.writer.files, self.writer.bytes, self.step_s, self.save_s, self.fetched


@dataclass
class Side:
    """One session of the comparison and what it measured."""

    mode: str
    sess: Any
    clock: WriterClock | None = None
    step_s: list[float] = field(default_factory=list)
    run_s: list[float] = field(default_factory=list)
    faults: list[int] = field(default_factory=list)

    def step(self, built: Built) -> None:
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        self.sess.run(built.fetches, feed_dict=built.feed)
        ran = time.perf_counter()
        self.faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults)
        if self.clock is not None:
            self.clock.writer.flush()
        end = time.perf_counter()
        self.run_s.append(ran - start)
        self.step_s.append(end - start)


def npu_config(values: dict[str, Any]) -> Any:
    from tf2npu.config.proto import write_parameter_map
    from tf2npu.runtime.protos import npu_session_config

    config = npu_session_config(None)
    write_parameter_map(config.graph_options.rewrite_options.custom_optimizers[0], values)
    return config


def open_sides(
    tf: Any, graph: Any, modes: Sequence[str], root: Path, args: argparse.Namespace
) -> list[Side]:
    """One session per mode over ``graph``, checked to be the kind it claims."""
    from tf2npu.runtime import context
    from tf2npu.runtime.session import NpuSession

    sides = []
    for mode in modes:
        values: dict[str, Any] = {"precision_mode": args.precision_mode}
        data = DUMPED.get(mode)
        path = root / mode.replace(" + ", "_").replace(" ", "_")
        if data is not None:
            path.mkdir()
            values |= {"enable_dump": True, "dump_path": str(path), "dump_data": data,
                       "dump_mode": args.dump_mode}  # fmt: skip
            if mode == "npu + fetch only":
                values["dump_step"] = NEVER
        config = None if mode == "stock" else npu_config(values)
        sess = tf.compat.v1.Session(graph=graph, config=config)
        if isinstance(sess, NpuSession) != (mode != "stock"):
            raise RuntimeError(f"{mode}: the session hook picked the wrong session class")
        writer = context().dump_writers.get(path.absolute()) if data else None
        if data is not None and writer is None:
            raise RuntimeError(f"{mode}: no dump writer for {path}")
        sides.append(Side(mode, sess, None if writer is None else WriterClock(writer)))
    return sides


# -- measuring ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """Medians per mode and the tensor dump's volume and throughput."""

    sizes: dict[str, int]
    steps: int
    step_ms: dict[str, float]
    run_ms: dict[str, float]
    run_faults: dict[str, float]
    """Median minor page faults of the process during ``run``."""
    stats_files_per_step: float
    fetched_mb_per_step: float
    tensor_files_per_step: float
    tensor_mb_per_step: float
    tensor_mbs_end_to_end: float
    tensor_mbs_writer: float
    tensor_mbs_save: float

    @property
    def stats_ratio(self) -> float:
        return self.step_ms["npu + stats"] / self.step_ms["npu"]

    @property
    def tensor_ratio(self) -> float:
        return self.step_ms["npu + tensor"] / self.step_ms["npu"]


def measure(tf: Any, root: Path, args: argparse.Namespace) -> Result:
    sizes = Sizes(layers=args.layers, batch=args.batch, seq=args.seq, hidden=args.hidden)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        built = build(tf, sizes)
    sides = open_sides(tf, graph, MODES, root, args)
    try:
        for side in sides:
            side.sess.run(built.init)
            for _ in range(args.warmup):
                side.step(built)
            side.step_s.clear()
            side.run_s.clear()
            side.faults.clear()
        before = {s.mode: s.clock.figures() for s in sides if s.clock is not None}
        gc.collect()
        for step in range(args.steps):
            for k in range(len(sides)):
                sides[(k + step) % len(sides)].step(built)
            _progress(f"step {step + 1}/{args.steps}")
        after = {s.mode: s.clock.figures() for s in sides if s.clock is not None}
    finally:
        for side in sides:
            side.sess.close()
    tensor = next(s for s in sides if s.mode == "npu + tensor")
    files, nbytes, writer_s, save_s, fetched = (
        a - b for a, b in zip(after["npu + tensor"], before["npu + tensor"], strict=True)
    )
    stats_files = after["npu + stats"][0] - before["npu + stats"][0]
    return Result(
        sizes=asdict(sizes),
        steps=args.steps,
        step_ms={s.mode: statistics.median(s.step_s) * 1e3 for s in sides},
        run_ms={s.mode: statistics.median(s.run_s) * 1e3 for s in sides},
        run_faults={s.mode: statistics.median(s.faults) for s in sides},
        stats_files_per_step=stats_files / args.steps,
        fetched_mb_per_step=fetched / MB / args.steps,
        tensor_files_per_step=files / args.steps,
        tensor_mb_per_step=nbytes / MB / args.steps,
        tensor_mbs_end_to_end=nbytes / MB / sum(tensor.step_s),
        tensor_mbs_writer=nbytes / MB / writer_s,
        tensor_mbs_save=nbytes / MB / save_s,
    )


def profile(tf: Any, root: Path, args: argparse.Namespace) -> None:
    """One dump session alone: ``--steps`` timed steps (run, flush, the writer's busy time),
    then ``--steps`` more under ``cProfile``, the main thread and the writer thread apart."""
    mode = f"npu + {args.profile}"
    sizes = Sizes(layers=args.layers, batch=args.batch, seq=args.seq, hidden=args.hidden)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        built = build(tf, sizes)
    [side] = open_sides(tf, graph, [mode], root, args)
    clock = side.clock
    assert clock is not None
    try:
        side.sess.run(built.init)
        for _ in range(args.warmup):
            side.step(built)
        side.step_s.clear()
        side.run_s.clear()
        before = clock.figures()
        for _ in range(args.steps):
            side.step(built)
        files, nbytes, busy, save, _ = (a - b for a, b in zip(clock.figures(), before, strict=True))
        clock.profiler = writer = cProfile.Profile()
        main = cProfile.Profile()
        main.runcall(lambda: [side.step(built) for _ in range(args.steps)])
    finally:
        side.sess.close()
    n = args.steps
    print(
        f"## {mode}, {n} steps: step {statistics.median(side.step_s) * 1e3:.1f} ms, run() "
        f"{statistics.median(side.run_s) * 1e3:.1f} ms (medians); writer busy "
        f"{busy / n * 1e3:.1f} ms a step, of which np.save {save / n * 1e3:.1f} ms; "
        f"{files / n:.0f} files, {nbytes / MB / n:.1f} MB a step"
    )
    for title, prof in (("main thread", main), ("writer thread", writer)):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.top)
        print(f"\n## {mode}: cProfile of {n} more steps, {title} (tottime)\n")
        print("```\n" + out.getvalue().strip() + "\n```")


# -- main ---------------------------------------------------------------------------------------


def report(result: Result) -> list[str]:
    lines = [
        "| session | step (median) | run() alone | page faults in run() | step / npu |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    npu = result.step_ms["npu"]
    for mode in MODES:
        step, run = result.step_ms[mode], result.run_ms[mode]
        faults = result.run_faults[mode]
        lines.append(
            f"| {mode} | {step:.1f} ms | {run:.1f} ms | {faults:,.0f} | {step / npu:.2f} |"
        )
    lines += [
        "",
        f"dumped runs fetch {result.fetched_mb_per_step:.1f} MB of distinct tensors a step; "
        f"stats dump: {result.stats_files_per_step:.0f} CSV files a step",
        f"tensor dump: {result.tensor_files_per_step:.0f} .npy files, "
        f"{result.tensor_mb_per_step:.1f} MB of tensor data a step",
        f"tensor dump throughput: {result.tensor_mbs_end_to_end:.0f} MB/s end to end "
        f"(bytes / summed step times incl. flush), {result.tensor_mbs_writer:.0f} MB/s "
        f"writer thread busy time, {result.tensor_mbs_save:.0f} MB/s inside np.save",
        "",
    ]
    ok_stats = result.stats_ratio <= STATS_BUDGET
    ok_tensor = result.tensor_mbs_end_to_end >= TENSOR_BUDGET_MBS
    lines.append(
        f"stats / npu {result.stats_ratio:.2f}; target <= {STATS_BUDGET}: "
        + ("met" if ok_stats else "MISSED")
    )
    lines.append(
        f"tensor dump {result.tensor_mbs_end_to_end:.0f} MB/s; target >= "
        f"{TENSOR_BUDGET_MBS:.0f}: " + ("met" if ok_tensor else "MISSED")
    )
    return lines


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30, help="timed steps per session (30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per session (3)")
    parser.add_argument("--layers", type=int, default=2, help="encoder layers (2)")
    parser.add_argument("--batch", type=int, default=8, help="batch size (8)")
    parser.add_argument("--seq", type=int, default=128, help="sequence length (128)")
    parser.add_argument("--hidden", type=int, default=256, help="hidden width (256)")
    parser.add_argument("--dump-mode", default="all", choices=("input", "output", "all"))
    parser.add_argument("--precision-mode", default="must_keep_origin_dtype")
    parser.add_argument("--dir", type=Path, help="parent of the temporary dump folder")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--profile", choices=("stats", "tensor"), help="profile one dump mode")
    parser.add_argument("--top", type=int, default=25, help="entries per --profile table (25)")
    return parser.parse_args(argv)


def _progress(text: str) -> None:
    print(f"... {text}", file=sys.stderr, flush=True)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    import tensorflow as tf

    import tf2npu.runtime as runtime

    load_before = os.getloadavg()
    runtime.install()
    root = Path(tempfile.mkdtemp(prefix="tf2npu-dumpbench-", dir=args.dir))
    try:
        runtime.configure(report_dir=root)
        if args.profile:
            profile(tf, root, args)
            return 0
        result = measure(tf, root, args)
    finally:
        runtime.uninstall()
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"TF_ENABLE_ONEDNN_OPTS={os.environ.get('TF_ENABLE_ONEDNN_OPTS', '(unset)')}; "
        f"{args.steps} interleaved steps per session after {args.warmup} warm-up; "
        f"dump_mode={args.dump_mode}, precision_mode={args.precision_mode}; sizes "
        + ", ".join(f"{k} {v}" for k, v in result.sizes.items())
        + "; load average (1, 5, 15 min) before: "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after: "
        + ", ".join(f"{x:.2f}" for x in os.getloadavg())
        + f"; cores: {os.cpu_count()}\n"
    )
    print("\n".join(report(result)))
    if args.json is not None:
        figures = asdict(result) | {
            "stats_ratio": result.stats_ratio,
            "tensor_ratio": result.tensor_ratio,
        }
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

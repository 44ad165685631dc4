"""Measures what tensor dumps (``enable_dump``) cost on a BERT-style training step.

Usage: ``TF_CPP_MIN_LOG_LEVEL=2 TF_ENABLE_ONEDNN_OPTS=0 .venv/bin/python
benchmarks/dump_overhead.py [--steps N] [--block K] [--dump-mode M] [--dir DIR] [--json OUT]
[--profile stats|tensor]``.

One graph (our own code): token ids -> embedding lookup (+ position embedding) -> ``--layers``
BERT encoder layers (multi-head self-attention, residual + layer norm, GELU FFN, residual +
layer norm) -> pooler on the first token -> 2-way classifier, softmax cross-entropy, Adam;
batch 8, sequence 128, hidden 256, 4 heads, FFN 1024 by default. Five sessions are opened on
it in one process:

* *stock*: a plain ``tf.compat.v1.Session`` (no ``NpuOptimizer``), for reference;
* *npu*: an ``NpuSession`` under ``--precision-mode`` (``must_keep_origin_dtype``: the CPU
  computes what stock computes, so the dump's cost is not hidden behind float16 emulation);
* *npu + step not dumped*: ``enable_dump`` with a ``dump_step`` never reached: what a step that
  ``dump_step`` leaves out costs (the dump fetches nothing on such a step; before the seam let
  a hook choose per run, it fetched every dumped tensor and wrote nothing: 1.33-1.49x);
* *npu + stats*: ``enable_dump``, ``dump_data=stats``, ``dump_mode=--dump-mode`` (``output``,
  the option's default), every step;
* *npu + tensor*: the same with ``dump_data=tensor`` (one raw device file per op), every step.

Two phases, each interleaved: *stats* (stock, npu, step not dumped, stats) and then *tensor* (npu,
tensor), so the gigabytes the tensor dump leaves for the kernel to write back do not slow the
stats dump's file creation; the page cache is synced (untimed) before each phase. Each phase
has two passes. *Flushed every step*: after ``--warmup`` steps of each session, steps go round
the sessions (the order rotates every step, so load drift hits all alike); a dumping session's
step is ``run`` **plus** waiting for its writer thread to finish that step's files
(``DumpWriter.flush``), so it pays for its dump inside its own step and never while another
session is timed; medians over ``--steps`` steps. *Pipelined*: the same, in blocks of
``--block`` steps with one flush at the end of each block, so the writer overlaps the next
steps as in a training loop; the step time is the block's wall time over its steps, median
over the blocks. The time ``run`` alone took and the process's minor page faults in it are
reported too.

Throughput of the tensor dump: tensor bytes written (``DumpWriter.bytes``, the raw files'
tensor payload without headers) over (a) the summed step (or block) times including the flushes,
(b) the writer thread's busy time (``_write_step``), (c) the time inside the raw file writes
alone. The dumps go to a temporary folder (``--dir``, default the system's, local disk). The
tensor dump's files are deleted after each block, untimed (this model's dump writes 0.7 GB a
step with ``dump_mode=output``, 1.7 GB with ``all``); the other sessions' after each pass, so
no deletion runs while the stats dump creates its files; the folder at exit. The page cache
absorbs the writes (no ``fsync``; the device tools do not sync either).

``--profile stats|tensor`` instead runs that dump session alone for ``--steps`` steps, then
``--steps`` more under ``cProfile``: the main thread (run, fetch, hook) and the writer thread.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import math
import os
import pstats
import resource
import shutil
import signal
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
MODES = ("stock", "npu", "npu + step not dumped", "npu + stats", "npu + tensor")
DUMPED = {"npu + step not dumped": "tensor", "npu + stats": "stats", "npu + tensor": "tensor"}
PHASES = {
    "stats": ("stock", "npu", "npu + step not dumped", "npu + stats"),
    "tensor": ("npu", "npu + tensor"),
}
NEVER = "999999999"
"""``dump_step`` of the *step not dumped* session: no step it runs is dumped."""


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
    """Times a ``DumpWriter``'s work in its thread: whole steps, and the file writes alone
    (``_write_raw``, one raw device file per op).

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
        write_step, save = self.writer._write_step, self.writer._write_raw

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
        self.writer._write_raw = timed_save

    def figures(self) -> tuple[int, int, float, float, int]:
        """(files, bytes, writer busy seconds, file-write seconds, bytes fetched) so far."""
        return self.writer.files, self.writer.bytes, self.step_s, self.save_s, self.fetched


@dataclass
class Side:
    """One session of the comparison."""

    mode: str
    sess: Any
    clock: WriterClock | None = None

    def block(self, built: Built, steps: int, timing: Timing) -> None:
        """``steps`` steps, then the flush of their dump; recorded in ``timing``."""
        start = time.perf_counter()
        for _ in range(steps):
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            began = time.perf_counter()
            self.sess.run(built.fetches, feed_dict=built.feed)
            timing.run_s.append(time.perf_counter() - began)
            timing.faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults)
        if self.clock is not None:
            self.clock.writer.flush()
        timing.step_s.append((time.perf_counter() - start) / steps)
        timing.total_s += time.perf_counter() - start
        if self.mode == "npu + tensor":  # untimed: the disk holds one block of its dumps
            self.prune()

    def prune(self) -> None:
        """Delete what this session dumped so far (its writer is idle)."""
        if self.clock is not None:
            shutil.rmtree(self.clock.writer.time_dir, ignore_errors=True)


@dataclass
class Timing:
    """One session in one pass of one phase."""

    step_s: list[float] = field(default_factory=list)
    """Per step (flushed every step) or per block, divided by its steps (pipelined)."""
    run_s: list[float] = field(default_factory=list)
    faults: list[int] = field(default_factory=list)
    total_s: float = 0.0
    writer: tuple[float, ...] = ()
    """What the writer did meanwhile: :meth:`WriterClock.figures` differences."""

    def figures(self) -> dict[str, float]:
        out = {
            "step_ms": statistics.median(self.step_s) * 1e3,
            "run_ms": statistics.median(self.run_s) * 1e3,
            "faults": statistics.median(self.faults),
            "steps": len(self.run_s),
        }
        if self.writer:
            files, nbytes, busy, save, fetched = self.writer
            steps = len(self.run_s)
            out |= {"files_per_step": files / steps, "mb_per_step": nbytes / MB / steps,
                    "fetched_mb_per_step": fetched / MB / steps,
                    "writer_ms_per_step": busy / steps * 1e3}  # fmt: skip
            if nbytes:
                out["mbs_end_to_end"] = nbytes / MB / self.total_s
                out["mbs_writer"] = nbytes / MB / busy
                out["mbs_save"] = nbytes / MB / save
        return out


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
            if mode == "npu + step not dumped":
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


def interleave(sides: Sequence[Side], built: Built, steps: int, block: int) -> list[Timing]:
    """``steps`` steps of each session in blocks of ``block``, the sessions taking turns."""
    os.sync()  # the earlier dumps' dirty pages: written back before, not during, the pass
    gc.collect()
    timings = [Timing() for _ in sides]
    before = [s.clock.figures() if s.clock else () for s in sides]
    for turn in range(steps // block):
        for k in range(len(sides)):
            i = (k + turn) % len(sides)
            sides[i].block(built, block, timings[i])
        _progress(f"{turn * block + block}/{steps} steps (blocks of {block})")
    for side, timing, was in zip(sides, timings, before, strict=True):
        if side.clock is not None:
            timing.writer = tuple(a - b for a, b in zip(side.clock.figures(), was, strict=True))
        side.prune()
    return timings


def measure(tf: Any, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Figures per phase, pass and session (see the module docstring)."""
    from tf2npu.runtime import context

    sizes = Sizes(layers=args.layers, batch=args.batch, seq=args.seq, hidden=args.hidden)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        built = build(tf, sizes)
    sides = {s.mode: s for s in open_sides(tf, graph, MODES, root, args)}
    results: dict[str, Any] = {"sizes": asdict(sizes)}
    try:
        for side in sides.values():
            side.sess.run(built.init)
            side.block(built, args.warmup, Timing())
        for phase, modes in PHASES.items():
            for name, block in (("flushed every step", 1), ("pipelined", args.block)):
                _progress(f"{phase} phase, {name}")
                timings = interleave([sides[m] for m in modes], built, args.steps, block)
                results.setdefault(phase, {})[name] = {
                    mode: t.figures() for mode, t in zip(modes, timings, strict=True)
                }
    finally:
        for side in sides.values():
            side.sess.close()
        with contextlib.suppress(OSError):  # the writers idle before their folder goes
            context().close()
    return results


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
        side.block(built, args.warmup, Timing())
        [timing] = interleave([side], built, args.steps, 1)
        clock.profiler = writer = cProfile.Profile()
        main = cProfile.Profile()
        main.runcall(lambda: interleave([side], built, args.steps, 1))
    finally:
        side.sess.close()
    _, _, busy, save, _ = timing.writer
    figures, n = timing.figures(), args.steps
    print(
        f"## {mode}, {n} steps: step {figures['step_ms']:.1f} ms, run() "
        f"{figures['run_ms']:.1f} ms (medians); writer busy {busy / n * 1e3:.1f} ms a step, "
        f"of which raw file writes {save / n * 1e3:.1f} ms; {figures['files_per_step']:.0f} files, "
        f"{figures['mb_per_step']:.1f} MB a step"
    )
    for title, prof in (("main thread", main), ("writer thread", writer)):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.top)
        print(f"\n## {mode}: cProfile of {n} more steps, {title} (tottime)\n")
        print("```\n" + out.getvalue().strip() + "\n```")


# -- main ---------------------------------------------------------------------------------------


def phase_table(phase: dict[str, dict[str, dict[str, float]]], block: int) -> list[str]:
    """One phase: per session, both passes, ratios to its *npu* session."""
    flushed, piped = phase["flushed every step"], phase["pipelined"]
    lines = [
        "| session | step, flushed every step | run() alone | page faults in run() "
        f"| step, pipelined (blocks of {block}) | / npu, flushed | / npu, pipelined |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mode, f in flushed.items():
        p = piped[mode]
        lines.append(
            f"| {mode} | {f['step_ms']:.1f} ms | {f['run_ms']:.1f} ms | {f['faults']:,.0f} "
            f"| {p['step_ms']:.1f} ms | {f['step_ms'] / flushed['npu']['step_ms']:.2f} "
            f"| {p['step_ms'] / piped['npu']['step_ms']:.2f} |"
        )
    return lines


def report(results: dict[str, Any], block: int) -> list[str]:
    stats, tensor = results["stats"], results["tensor"]
    lines = ["## stats phase", "", *phase_table(stats, block), ""]
    for name, figures in stats.items():
        s = figures["npu + stats"]
        lines.append(
            f"stats dump, {name}: {s['files_per_step']:.0f} CSV files a step, of "
            f"{s['fetched_mb_per_step']:.1f} MB of fetched tensors; writer thread busy "
            f"{s['writer_ms_per_step']:.0f} ms a step"
        )
    lines += ["", "## tensor phase", "", *phase_table(tensor, block), ""]
    for name, figures in tensor.items():
        t = figures["npu + tensor"]
        lines.append(
            f"tensor dump, {name}: {t['files_per_step']:.0f} raw files, "
            f"{t['mb_per_step']:.1f} MB of tensor data a step; {t['mbs_end_to_end']:.0f} MB/s "
            f"end to end (bytes / wall time of the steps incl. flushes), "
            f"{t['mbs_writer']:.0f} MB/s of writer thread busy time, "
            f"{t['mbs_save']:.0f} MB/s inside the raw file writes"
        )
    lines.append("")
    for name in ("flushed every step", "pipelined"):
        ratio = stats[name]["npu + stats"]["step_ms"] / stats[name]["npu"]["step_ms"]
        mbs = tensor[name]["npu + tensor"]["mbs_end_to_end"]
        lines.append(
            f"{name}: stats / npu {ratio:.2f} (target <= {STATS_BUDGET}: "
            f"{'met' if ratio <= STATS_BUDGET else 'MISSED'}); tensor dump {mbs:.0f} MB/s "
            f"(target >= {TENSOR_BUDGET_MBS:.0f}: "
            f"{'met' if mbs >= TENSOR_BUDGET_MBS else 'MISSED'})"
        )
    return lines


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per pass (20)")
    parser.add_argument("--block", type=int, default=5, help="steps per pipelined block (5)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per session (3)")
    parser.add_argument("--layers", type=int, default=2, help="encoder layers (2)")
    parser.add_argument("--batch", type=int, default=8, help="batch size (8)")
    parser.add_argument("--seq", type=int, default=128, help="sequence length (128)")
    parser.add_argument("--hidden", type=int, default=256, help="hidden width (256)")
    parser.add_argument("--dump-mode", default="output", choices=("input", "output", "all"))
    parser.add_argument("--precision-mode", default="must_keep_origin_dtype")
    parser.add_argument("--dir", type=Path, help="parent of the temporary dump folder")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--profile", choices=("stats", "tensor"), help="profile one dump mode")
    parser.add_argument("--top", type=int, default=25, help="entries per --profile table (25)")
    args = parser.parse_args(argv)
    if args.steps < args.block or args.steps % args.block:
        parser.error(f"--steps {args.steps} is not a multiple of --block {args.block}")
    return args


def _progress(text: str) -> None:
    print(f"... {text}", file=sys.stderr, flush=True)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
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
        results = measure(tf, root, args)
    finally:  # also on SIGTERM (below): the dumps take gigabytes
        runtime.uninstall()
        shutil.rmtree(root, ignore_errors=True)
    results["setup"] = {
        "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "(unset)"),
        "steps": args.steps, "block": args.block, "warmup": args.warmup,
        "dump_mode": args.dump_mode, "precision_mode": args.precision_mode,
        "dump_dir": str(root.parent), "cores": os.cpu_count(),
        "load_before": load_before, "load_after": os.getloadavg(),
    }  # fmt: skip
    setup = results["setup"]
    print(
        ", ".join(f"{k} {v}" for k, v in results["sizes"].items())
        + "; "
        + "; ".join(f"{k} {v}" for k, v in setup.items() if not k.startswith("load"))
        + "; load average (1, 5, 15 min) before: "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after: "
        + ", ".join(f"{x:.2f}" for x in os.getloadavg())
        + "\n"
    )
    print("\n".join(report(results, args.block)))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

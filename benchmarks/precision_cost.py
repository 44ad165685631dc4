"""Measures what the default precision mode's CPU emulation costs over stock TensorFlow.

Usage: ``TF_CPP_MIN_LOG_LEVEL=2 TF_ENABLE_ONEDNN_OPTS=0 .venv/bin/python
benchmarks/precision_cost.py [--steps N] [--rounds R] [--only NAME] [--profile NAME]``.

Six small TF1 training workloads in the style of Ascend ModelZoo scripts (our own code): a
ResNet-style CNN with batch norm (NHWC), a MobileNet-style one (depthwise convolutions), a
wide-and-deep model with embeddings, a BERT-style transformer encoder block, an LSTM through
``tf.compat.v1.nn.dynamic_rnn`` and a Keras model trained in a TF1 session. For each, one
graph is built and five sessions are opened on it in one process: *stock* (a plain
``tf.compat.v1.Session``, what ``tf2npu run --no-npu`` gives an original script), *stock, NPU
config* (the NPU config minus ``NpuOptimizer``: ``remapping`` and ``memory_optimization`` off,
what the engine's inner session runs with), and three ``NpuSession`` s: ``allow_fp32_to_fp16``
(the default of a migrated training script), ``force_fp32`` and ``must_keep_origin_dtype``.
After a warm-up, steps go round the sessions (the order rotates every step) and the median
per-step wall time of each session is taken; each round builds everything afresh; ratios are
the median over rounds; the geometric mean is over workloads.

``--profile NAME`` instead prints, for that workload, TensorFlow's step stats
(``RunOptions(trace_level=FULL_TRACE)``) summed per op type for stock and the default mode,
and a ``cProfile`` of the default mode's Python side.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import math
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MODES: dict[str, dict[str, str] | None] = {
    "stock": None,
    "stock, NPU config": None,
    "default": {"precision_mode": "allow_fp32_to_fp16"},
    "force_fp32": {"precision_mode": "force_fp32"},
    "keep dtype": {"precision_mode": "must_keep_origin_dtype"},
}
TARGET = 1.15
"""Issue 23: the default mode on the CNNs (resnet, mobilenet, keras_cnn) at most 1.15x stock
(the earlier 1.3 was over all six workloads)."""


# -- workloads ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Built:
    """What one training step runs, how to start, and what it is fed."""

    fetches: Any
    init: Any
    feed: dict[Any, Any]


def _rng() -> Any:
    import numpy as np

    return np.random.default_rng(0)


def _conv_bn(tf: Any, x: Any, filters: int, stride: int, training: Any, name: str) -> Any:
    layers = tf.compat.v1.layers
    with tf.compat.v1.variable_scope(name):
        y = layers.conv2d(x, filters, 3, stride, padding="same", use_bias=False)
        return layers.batch_normalization(y, training=training, momentum=0.9)


def _resnet(tf: Any) -> Built:
    """ResNet-style: stem conv + 3x3/2 max-pool, 2 stages of one basic block, 32x32x3, b32."""
    rng = _rng()
    images = tf.compat.v1.placeholder(tf.float32, [32, 32, 32, 3], name="images")
    labels = tf.compat.v1.placeholder(tf.int32, [32], name="labels")
    training = True
    h = tf.nn.relu(_conv_bn(tf, images, 16, 1, training, "stem"))
    h = tf.nn.max_pool2d(h, 3, 2, "SAME")  # ResNet's stem pool: overlapping 3x3 windows
    for stage, (filters, stride) in enumerate(((16, 1), (32, 2))):
        shortcut = h
        y = tf.nn.relu(_conv_bn(tf, h, filters, stride, training, f"block{stage}_a"))
        y = _conv_bn(tf, y, filters, 1, training, f"block{stage}_b")
        if stride != 1 or int(shortcut.shape[-1]) != filters:
            shortcut = tf.compat.v1.layers.conv2d(
                shortcut, filters, 1, stride, use_bias=False, name=f"proj{stage}"
            )
        h = tf.nn.relu(y + shortcut)
    pooled = tf.reduce_mean(h, axis=[1, 2])
    logits = tf.compat.v1.layers.dense(pooled, 10, name="fc")
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    loss += 1e-4 * tf.add_n([tf.nn.l2_loss(v) for v in tf.compat.v1.trainable_variables()])
    updates = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(updates):
        train = tf.compat.v1.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
    feed = {
        images: rng.standard_normal((32, 32, 32, 3)).astype("float32"),
        labels: rng.integers(0, 10, 32).astype("int32"),
    }
    return Built([train, loss], tf.compat.v1.global_variables_initializer(), feed)


def _mobilenet(tf: Any) -> Built:
    """MobileNet-style: conv + 3 depthwise-separable blocks (BN, ReLU6), 48x48x3, batch 32."""
    rng = _rng()
    images = tf.compat.v1.placeholder(tf.float32, [32, 48, 48, 3], name="images")
    labels = tf.compat.v1.placeholder(tf.int32, [32], name="labels")
    bn = tf.compat.v1.layers.batch_normalization
    h = tf.nn.relu6(_conv_bn(tf, images, 16, 2, True, "stem"))
    for i, (filters, stride) in enumerate(((32, 1), (64, 2), (64, 1))):
        with tf.compat.v1.variable_scope(f"sep{i}"):
            depthwise = tf.compat.v1.get_variable("depthwise", [3, 3, int(h.shape[-1]), 1])
            h = tf.nn.depthwise_conv2d(h, depthwise, [1, stride, stride, 1], "SAME")
            h = tf.nn.relu6(bn(h, training=True, momentum=0.9))
            h = tf.compat.v1.layers.conv2d(h, filters, 1, use_bias=False)
            h = tf.nn.relu6(bn(h, training=True, momentum=0.9))
    logits = tf.compat.v1.layers.dense(tf.reduce_mean(h, axis=[1, 2]), 10, name="fc")
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    updates = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(updates):
        train = tf.compat.v1.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
    feed = {
        images: rng.standard_normal((32, 48, 48, 3)).astype("float32"),
        labels: rng.integers(0, 10, 32).astype("int32"),
    }
    return Built([train, loss], tf.compat.v1.global_variables_initializer(), feed)


def _wide_deep(tf: Any) -> Built:
    """Wide & deep: 8 categorical fields (embedding 16) + 13 dense, MLP 256-128-64, batch 256."""
    rng = _rng()
    batch, fields, vocab = 256, 8, 1000
    ids = tf.compat.v1.placeholder(tf.int32, [batch, fields], name="ids")
    dense = tf.compat.v1.placeholder(tf.float32, [batch, 13], name="dense")
    labels = tf.compat.v1.placeholder(tf.float32, [batch, 1], name="labels")
    table = tf.compat.v1.get_variable("embedding", [vocab, 16])
    wide_w = tf.compat.v1.get_variable("wide", [vocab, 1])
    emb = tf.reshape(tf.nn.embedding_lookup(table, ids), [batch, fields * 16])
    h = tf.concat([emb, dense], axis=1)
    for i, units in enumerate((256, 128, 64)):
        h = tf.compat.v1.layers.dense(h, units, activation=tf.nn.relu, name=f"deep{i}")
    deep = tf.compat.v1.layers.dense(h, 1, name="deep_out")
    wide = tf.reduce_sum(tf.nn.embedding_lookup(wide_w, ids), axis=1)
    logits = deep + wide
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    train = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(loss)
    feed = {
        ids: rng.integers(0, vocab, (batch, fields)).astype("int32"),
        dense: rng.standard_normal((batch, 13)).astype("float32"),
        labels: rng.integers(0, 2, (batch, 1)).astype("float32"),
    }
    return Built([train, loss], tf.compat.v1.global_variables_initializer(), feed)


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


def _transformer(tf: Any) -> Built:
    """BERT-style encoder block: seq 64, hidden 128, 4 heads, FFN 512, batch 16, Adam."""
    rng = _rng()
    batch, seq, hidden, heads = 16, 64, 128, 4
    dense = tf.compat.v1.layers.dense
    x = tf.compat.v1.placeholder(tf.float32, [batch, seq, hidden], name="x")
    target = tf.compat.v1.placeholder(tf.int32, [batch], name="target")
    flat = tf.reshape(x, [batch * seq, hidden])

    def split(t: Any) -> Any:
        t = tf.reshape(t, [batch, seq, heads, hidden // heads])
        return tf.transpose(t, [0, 2, 1, 3])

    q, k, v = (split(dense(flat, hidden, name=n)) for n in ("query", "key", "value"))
    scores = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(hidden // heads))
    probs = tf.nn.softmax(scores)
    context = tf.reshape(tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3]), [batch * seq, hidden])
    h = _layer_norm(tf, dense(context, hidden, name="attn_out") + flat, "ln1")
    ffn = dense(_gelu(tf, dense(h, 4 * hidden, name="ffn_in")), hidden, name="ffn_out")
    h = _layer_norm(tf, ffn + h, "ln2")
    pooled = tf.tanh(dense(tf.reshape(h, [batch, seq, hidden])[:, 0], hidden, name="pooler"))
    logits = dense(pooled, 2, name="cls")
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=target, logits=logits)
    )
    train = tf.compat.v1.train.AdamOptimizer(1e-4).minimize(loss)
    feed = {
        x: rng.standard_normal((batch, seq, hidden)).astype("float32"),
        target: rng.integers(0, 2, batch).astype("int32"),
    }
    return Built([train, loss], tf.compat.v1.global_variables_initializer(), feed)


def _lstm(tf: Any) -> Built:
    """LSTM language-model step: vocab 2000, embedding 64, LSTM 128, seq 20, batch 32."""
    rng = _rng()
    batch, seq, vocab = 32, 20, 2000
    tokens = tf.compat.v1.placeholder(tf.int32, [batch, seq], name="tokens")
    nexts = tf.compat.v1.placeholder(tf.int32, [batch, seq], name="nexts")
    emb = tf.nn.embedding_lookup(tf.compat.v1.get_variable("embedding", [vocab, 64]), tokens)
    cell = tf.compat.v1.nn.rnn_cell.LSTMCell(128)
    out, _ = tf.compat.v1.nn.dynamic_rnn(cell, emb, dtype=tf.float32)
    logits = tf.compat.v1.layers.dense(tf.reshape(out, [batch * seq, 128]), vocab, name="proj")
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.reshape(nexts, [-1]), logits=logits
        )
    )
    grads, variables = zip(
        *tf.compat.v1.train.AdamOptimizer(1e-3).compute_gradients(loss), strict=True
    )
    clipped, _ = tf.clip_by_global_norm(grads, 5.0)
    train = tf.compat.v1.train.AdamOptimizer(1e-3).apply_gradients(
        zip(clipped, variables, strict=True)
    )
    feed = {
        tokens: rng.integers(0, vocab, (batch, seq)).astype("int32"),
        nexts: rng.integers(0, vocab, (batch, seq)).astype("int32"),
    }
    return Built([train, loss], tf.compat.v1.global_variables_initializer(), feed)


def _keras(tf: Any) -> Built:
    """Keras layers in a TF1 session: conv + pool + dense on 28x28x1, batch 64, RMSProp."""
    rng = _rng()
    layers = tf.keras.layers
    x = tf.compat.v1.placeholder(tf.float32, [64, 28, 28, 1], name="x")
    y = tf.compat.v1.placeholder(tf.float32, [64, 10], name="y")
    model = tf.keras.Sequential(
        [
            layers.Conv2D(16, 3, activation="relu"),
            layers.MaxPooling2D(),
            layers.Conv2D(32, 3, activation="relu"),
            layers.MaxPooling2D(),
            layers.Flatten(),
            layers.Dense(64, activation="relu"),
            layers.Dense(10),
        ]
    )
    logits = model(x)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.compat.v1.train.RMSPropOptimizer(1e-3).minimize(loss)
    feed = {
        x: rng.standard_normal((64, 28, 28, 1)).astype("float32"),
        y: __import__("numpy").eye(10, dtype="float32")[rng.integers(0, 10, 64)],
    }
    return Built([train, loss], tf.compat.v1.global_variables_initializer(), feed)


WORKLOADS: dict[str, Callable[[Any], Built]] = {
    "resnet": _resnet,
    "mobilenet": _mobilenet,
    "wide_deep": _wide_deep,
    "transformer": _transformer,
    "lstm": _lstm,
    "keras_cnn": _keras,
}


# -- sessions -----------------------------------------------------------------------------------


def open_sessions(tf: Any, graph: Any, modes: Sequence[str]) -> dict[str, Any]:
    """One session per mode over ``graph``, each checked to be the kind it claims."""
    from tf2npu.config.proto import write_parameter_map
    from tf2npu.runtime.protos import npu_session_config, without_npu_optimizer
    from tf2npu.runtime.session import NpuSession

    sessions = {}
    for mode in modes:
        values = MODES[mode]
        npu = npu_session_config(None)
        if values is None:
            config = None if mode == "stock" else without_npu_optimizer(npu)
        else:
            write_parameter_map(npu.graph_options.rewrite_options.custom_optimizers[0], values)
            config = npu
        sess = tf.compat.v1.Session(graph=graph, config=config)
        if isinstance(sess, NpuSession) != (values is not None):
            raise RuntimeError(f"{mode}: the session hook picked the wrong session class")
        sessions[mode] = sess
    return sessions


def measure(tf: Any, name: str, modes: Sequence[str], args: argparse.Namespace) -> dict[str, float]:
    """One round: median step seconds per mode, the sessions taking turns in rotating order."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        built = WORKLOADS[name](tf)
    sessions = open_sessions(tf, graph, modes)
    try:
        runs = []
        for sess in sessions.values():
            sess.run(built.init)
            runs.append(lambda s=sess: s.run(built.fetches, feed_dict=built.feed))
        for _ in range(args.warmup):
            for run in runs:
                run()
        gc.collect()
        times: list[list[float]] = [[] for _ in runs]
        began = time.perf_counter()
        for step in range(args.steps):
            for k in range(len(runs)):
                side = (k + step) % len(runs)
                start = time.perf_counter()
                runs[side]()
                times[side].append(time.perf_counter() - start)
            if step >= 9 and time.perf_counter() - began > args.max_seconds:
                break
    finally:
        for sess in sessions.values():
            sess.close()
    return {mode: statistics.median(t) for mode, t in zip(sessions, times, strict=True)}


# -- profile ------------------------------------------------------------------------------------


def op_times(tf: Any, sess: Any, built: Built, runs: int) -> dict[str, float]:
    """Microseconds per op type per step, from FULL_TRACE step stats summed over ``runs``."""
    from tensorflow.core.protobuf import config_pb2

    totals: dict[str, float] = {}
    options = config_pb2.RunOptions(trace_level=config_pb2.RunOptions.FULL_TRACE)
    for _ in range(runs):
        meta = config_pb2.RunMetadata()
        sess.run(built.fetches, feed_dict=built.feed, options=options, run_metadata=meta)
        for device in meta.step_stats.dev_stats:
            for node in device.node_stats:
                op = node.timeline_label.split("(")[0].split(" = ")[-1].strip() or node.node_name
                totals[op] = totals.get(op, 0.0) + node.op_end_rel_micros
    return {op: t / runs for op, t in totals.items()}


def profile(tf: Any, name: str, args: argparse.Namespace) -> None:
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        built = WORKLOADS[name](tf)
    sessions = open_sessions(tf, graph, ["stock, NPU config", "default"])
    try:
        for sess in sessions.values():
            sess.run(built.init)
            for _ in range(args.warmup):
                sess.run(built.fetches, feed_dict=built.feed)
        stock = op_times(tf, sessions["stock, NPU config"], built, args.steps)
        default = op_times(tf, sessions["default"], built, args.steps)
        print(f"\n## {name}: op time per step (µs, step stats, {args.steps} traced steps)\n")
        print("| op | stock, NPU config | default | difference |\n| --- | ---: | ---: | ---: |")
        ops = sorted(
            set(stock) | set(default), key=lambda o: -(default.get(o, 0) - stock.get(o, 0))
        )
        for op in ops[: args.top]:
            s, d = stock.get(op, 0.0), default.get(op, 0.0)
            print(f"| {op} | {s:.0f} | {d:.0f} | {d - s:+.0f} |")
        print(f"| **total** | {sum(stock.values()):.0f} | {sum(default.values()):.0f} | |")
        profiler = cProfile.Profile()
        sess = sessions["default"]
        profiler.runcall(
            lambda: [sess.run(built.fetches, feed_dict=built.feed) for _ in range(args.steps)]
        )
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(12)
        print(f"\n## {name}: cProfile of {args.steps} default-mode steps (tottime)\n")
        print("```\n" + out.getvalue().strip() + "\n```")
    finally:
        for sess in sessions.values():
            sess.close()


# -- main ---------------------------------------------------------------------------------------


def report(results: dict[str, list[dict[str, float]]], modes: Sequence[str]) -> None:
    others = [m for m in modes if m != "stock"]
    print("| workload | stock median | " + " | ".join(f"{m} / stock" for m in others) + " |")
    print("| --- | ---: |" + " ---: |" * len(others))
    logs: dict[str, list[float]] = {m: [] for m in others}
    for name, rounds in results.items():
        cells = []
        for mode in others:
            ratios = [r[mode] / r["stock"] for r in rounds]
            ratio = statistics.median(ratios)
            logs[mode].append(math.log(ratio))
            spread = ", ".join(f"{x:.2f}" for x in ratios)
            cells.append(f"**{ratio:.2f}** ({spread})")
        stock_ms = statistics.median(r["stock"] for r in rounds) * 1e3
        print(f"| {name} | {stock_ms:.2f} ms | " + " | ".join(cells) + " |")
    means = [f"**{math.exp(statistics.fmean(logs[m])):.2f}**" for m in others]
    print("| geometric mean | | " + " | ".join(means) + " |")
    default = math.exp(statistics.fmean(logs["default"])) if "default" in logs else None
    if default is not None:
        verdict = "met" if default <= TARGET else "MISSED"
        print(f"\ndefault / stock, geometric mean {default:.2f}; target <= {TARGET}: {verdict}")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60, help="timed steps per session (60)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps per session (5)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per workload (3)")
    parser.add_argument("--max-seconds", type=float, default=40.0, help="per round (40)")
    parser.add_argument("--only", action="append", choices=sorted(WORKLOADS), help="workload")
    parser.add_argument("--profile", choices=sorted(WORKLOADS), help="profile one workload")
    parser.add_argument("--top", type=int, default=15, help="op types shown by --profile (15)")
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    import tensorflow as tf

    import tf2npu.runtime as runtime

    load_before = os.getloadavg()
    modes = list(MODES)
    results: dict[str, list[dict[str, float]]] = {}
    runtime.install()
    try:
        with tempfile.TemporaryDirectory(prefix="tf2npu-bench-") as tmp:
            runtime.configure(report_dir=tmp)
            if args.profile:
                profile(tf, args.profile, args)
                return 0
            for round_ in range(args.rounds):
                for name in args.only or WORKLOADS:
                    print(f"... round {round_ + 1}: {name}", file=sys.stderr, flush=True)
                    results.setdefault(name, []).append(measure(tf, name, modes, args))
    finally:
        runtime.uninstall()
    print(
        f"TF_ENABLE_ONEDNN_OPTS={os.environ.get('TF_ENABLE_ONEDNN_OPTS', '(unset)')}; "
        f"{args.rounds} round(s) of up to {args.steps} steps after {args.warmup} warm-up; "
        "load average (1, 5, 15 min) before: "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after: "
        + ", ".join(f"{x:.2f}" for x in os.getloadavg())
        + f"; cores: {os.cpu_count()}\n"
    )
    report(results, modes)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

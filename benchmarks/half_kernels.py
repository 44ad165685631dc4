"""How fast TensorFlow's CPU float16 kernels are against the float32 ones (and a Cast).

Usage: ``TF_CPP_MIN_LOG_LEVEL=2 TF_ENABLE_ONEDNN_OPTS=0 .venv/bin/python
benchmarks/half_kernels.py [--rounds R] [--links N]``.

Each case is a chain of ``--links`` copies of one op on a 64x26x26x16 tensor (692,224
elements, a small CNN's activation) held in a variable; every round runs each chain once, in
turn; the figure is the median per-op time in milliseconds. The ``Cast`` figure is per
``Cast`` of a float32 → float16 → float32 chain; a rounding to float16 costs two. With
``src`` on ``PYTHONPATH`` and ``half_round.so`` built (``make half-round``), the
``Tf2npuHalfRound`` case is the same rounding in one op, per rounding.

Two *lower bounds* of a rounding to float16 precision done in float32 without casts, per
rounding: the integer-op rounding of normal numbers (bitcast, add the round-to-nearest-even
bias, mask; an exact one also needs the subnormal range, overflow to infinity and NaN: more
ops) and Veltkamp's split (multiply by 2^13+1, two subtractions; ties, subnormals and overflow
not handled). An exact version is slower than either, so beating two ``Cast`` s needs at least
these to. The ``MaxPoolGrad 3x3/2`` cases pool a ReLU output (half zeros: ties), as ResNet's
stem pool does: the float16 kernel, the float32 one, and the lowering's form of the float16
one (``MaxPoolWithArgmax`` in float32, ``MaxPoolGradWithArgmax`` in float16).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any


def chains(tf: Any, links: int) -> dict[str, tuple[Any, int]]:
    """Case name -> (fetch, ops in the chain)."""
    import numpy as np

    values = np.random.default_rng(0).standard_normal((64, 26, 26, 16)).astype(np.float32)
    v32, v16 = tf.Variable(values), tf.Variable(values.astype(np.float16))

    def chain(x: Any, step: Callable[[Any], Any], per_link: int) -> tuple[Any, int]:
        for _ in range(links):
            x = step(x)
        return tf.reduce_sum(x[0]), links * per_link

    half = tf.constant(0.5, tf.float16)
    pool = {"ksize": 2, "strides": 2, "padding": "VALID"}

    def round_trip(x: Any) -> Any:
        return tf.cast(tf.cast(x, tf.float16), tf.float32)

    def integer_rounding(x: Any) -> Any:
        bits = tf.bitcast(x, tf.int32)
        even = tf.bitwise.bitwise_and(tf.bitwise.right_shift(bits, 13), 1)
        return tf.bitcast(tf.bitwise.bitwise_and(bits + (even + 0xFFF), -0x2000), tf.float32)

    def veltkamp(x: Any) -> Any:
        scaled = x * 8193.0
        return scaled - (scaled - x)

    relu32, relu16 = tf.nn.relu(v32), tf.nn.relu(v16)
    stem = {"ksize": 3, "strides": 2, "padding": "SAME"}
    native = half_round_op(tf)
    return {
        "Cast (of a f32→f16→f32 pair)": chain(v32, round_trip, 2),
        **(
            {"Tf2npuHalfRound (the pair's bits in one op; per rounding)": chain(v32, native, 1)}
            if native is not None
            else {}
        ),
        "rounding by integer ops, normal range (5 ops; per rounding)": chain(
            v32, integer_rounding, 1
        ),
        "rounding by Veltkamp's split (3 ops; per rounding)": chain(v32, veltkamp, 1),
        "Relu f32": chain(v32, tf.nn.relu, 1),
        "Relu f16": chain(v16, tf.nn.relu, 1),
        "Add+Mul f32": chain(v32, lambda x: (x + x) * 0.5, 2),
        "Add+Mul f16": chain(v16, lambda x: (x + x) * half, 2),
        "MaxPool 1x1 f32": chain(v32, lambda x: tf.nn.max_pool2d(x, 1, 1, "VALID"), 1),
        "MaxPool 1x1 f16": chain(v16, lambda x: tf.nn.max_pool2d(x, 1, 1, "VALID"), 1),
        "MaxPoolGrad 2x2/2 f32": grad_chain(tf, v32, pool, links),
        "MaxPoolGrad 2x2/2 f16": grad_chain(tf, v16, pool, links),
        "MaxPoolGrad 3x3/2 SAME f32, ReLU output": grad_chain(tf, relu32, stem, links),
        "MaxPoolGrad 3x3/2 SAME f16, ReLU output": grad_chain(tf, relu16, stem, links),
        "MaxPoolGrad 3x3/2 SAME f16 as lowered (argmax in f32)": grad_chain(
            tf, relu16, stem, links, argmax_from=relu32
        ),
    }


def half_round_op(tf: Any) -> Callable[[Any], Any] | None:
    """The lowering's rounding op when ``make half-round`` built it (else None: not shown)."""
    from tf2npu.runtime.native import HALF_ROUND_LIBRARY, half_round_available

    if not half_round_available():
        return None
    return tf.load_op_library(str(HALF_ROUND_LIBRARY)).tf2npu_half_round


def grad_chain(
    tf: Any, x: Any, pool: dict[str, Any], links: int, argmax_from: Any = None
) -> tuple[Any, int]:
    """``links`` MaxPoolGrad ops of one pool (each on a differently scaled gradient); with
    ``argmax_from`` (``x`` in float32) the lowering's form: one argmax, ``links`` scatters."""
    from tensorflow.python.ops import gen_nn_ops

    window = [1, pool["ksize"], pool["ksize"], 1]
    strides = [1, pool["strides"], pool["strides"], 1]
    out = tf.nn.max_pool2d(x, pool["ksize"], pool["strides"], pool["padding"])
    grads = []
    for i in range(links):
        grad = out * tf.constant(float(i + 1), x.dtype)
        if argmax_from is None:
            found = gen_nn_ops.max_pool_grad(x, out, grad, window, strides, pool["padding"])
        else:  # a fresh argmax per link: the lowered graph computes one per MaxPoolGrad
            argmax = gen_nn_ops.max_pool_with_argmax(
                argmax_from * tf.constant(float(i + 1)), window, strides, pool["padding"],
                Targmax=tf.int64, include_batch_in_index=True,
            )[1]  # fmt: skip
            found = gen_nn_ops.max_pool_grad_with_argmax(
                x, grad, argmax, window, strides, pool["padding"], include_batch_in_index=True
            )
        grads.append(tf.reduce_sum(found[0]))
    return tf.add_n(grads), links


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="runs of every chain (15)")
    parser.add_argument("--links", type=int, default=20, help="ops per chain (20)")
    args = parser.parse_args(argv)
    import os

    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    graph = tf.Graph()
    with graph.as_default():
        cases = chains(tf, args.links)
        init = tf.compat.v1.global_variables_initializer()
    times: dict[str, list[float]] = {name: [] for name in cases}
    with tf.compat.v1.Session(graph=graph) as sess:
        sess.run(init)
        for fetch, _ in cases.values():
            sess.run(fetch)
        for _ in range(args.rounds):
            for name, (fetch, ops) in cases.items():
                start = time.perf_counter()
                sess.run(fetch)
                times[name].append((time.perf_counter() - start) / ops)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"TF_ENABLE_ONEDNN_OPTS={os.environ.get('TF_ENABLE_ONEDNN_OPTS', '(unset)')}; "
          f"load average after: {load}\n")  # fmt: skip
    print("| op (692,224 elements) | ms per op |\n| --- | ---: |")
    for name, found in times.items():
        print(f"| {name} | {statistics.median(found) * 1e3:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

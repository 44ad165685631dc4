"""Every float32 bit pattern through ``Tf2npuHalfRound`` and through the ``Cast`` pair.

Usage: ``TF_CPP_MIN_LOG_LEVEL=2 TF_ENABLE_ONEDNN_OPTS=0 PYTHONPATH=src .venv/bin/python
benchmarks/half_round_exhaustive.py [--chunk-bits B]``.

The suite checks boundary cases and a strided sweep (``tests/runtime/native/``); this checks
all 2^32 inputs, in chunks of 2^B patterns (default 2^24, 64 MB), in one graph session (the
executor's threads, denormals flushed, as in a training run). It prints the number of patterns
whose bits differ (the first few of them) and the time; exit status 1 if any differ.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunk-bits", type=int, default=24, help="log2 of a chunk (24)")
    args = parser.parse_args(argv)
    import tensorflow as tf

    from tf2npu.runtime.native import HALF_ROUND_LIBRARY, half_round_available

    if not half_round_available():
        print(f"{HALF_ROUND_LIBRARY} is not built or does not load: run `make half-round`")
        return 2
    library = tf.load_op_library(str(HALF_ROUND_LIBRARY))
    graph = tf.Graph()
    with graph.as_default():
        start = tf.compat.v1.placeholder(tf.int64, [])
        patterns = tf.cast(tf.range(start, start + 2**args.chunk_bits), tf.uint32)
        x = tf.bitcast(patterns, tf.float32)
        pair = tf.bitcast(tf.cast(tf.cast(x, tf.float16), tf.float32), tf.uint32)
        op = tf.bitcast(library.tf2npu_half_round(x), tf.uint32)
        wrong = tf.reshape(tf.where(tf.not_equal(pair, op)), [-1])
        found = (tf.size(wrong), tf.gather(patterns, wrong[:5]), tf.gather(pair, wrong[:5]),
                 tf.gather(op, wrong[:5]))  # fmt: skip
    began = time.perf_counter()
    differ = 0
    with tf.compat.v1.Session(graph=graph) as session:
        for first in range(0, 2**32, 2**args.chunk_bits):
            count, inputs, by_pair, by_op = session.run(found, {start: first})
            if count and not differ:
                for a, b, c in zip(inputs, by_pair, by_op, strict=True):
                    print(f"{int(a):#010x}: pair {int(b):#010x}, op {int(c):#010x}")
            differ += int(count)
    seconds = time.perf_counter() - began
    print(f"{2**32:,} float32 bit patterns: {differ:,} differ from the Cast pair ({seconds:.0f} s)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""tf.contrib.data under tf2npu run: the fused transformations give the plain pipeline's data."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = [pytest.mark.tf, pytest.mark.slow]


def test_data_transformations(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        def batches(ds):
            nxt = tf.data.make_one_shot_iterator(ds).get_next()
            got = []
            with tf.Session() as sess:
                try:
                    while True:
                        got.append(sess.run(nxt).tolist())
                except tf.errors.OutOfRangeError:
                    return got
        base = tf.data.Dataset.range(7)
        fused = base.apply(tf.contrib.data.map_and_batch(lambda i: i * 10, batch_size=3))
        plain = base.map(lambda i: i * 10).batch(3)
        print(batches(fused))
        print(batches(fused) == batches(plain))
        print(batches(base.apply(tf.contrib.data.batch_and_drop_remainder(3))))
        padded = tf.data.Dataset.range(1, 4).map(lambda n: tf.fill([n], n))
        print(batches(padded.apply(tf.contrib.data.padded_batch_and_drop_remainder(2, [None]))))
        files = tf.data.Dataset.range(2)
        inter = files.apply(tf.contrib.data.parallel_interleave(
            lambda f: tf.data.Dataset.range(f * 10, f * 10 + 2), cycle_length=2))
        print(sorted(batches(inter.batch(4))[0]))
    """)
    assert out.splitlines() == [
        "[[0, 10, 20], [30, 40, 50], [60]]",
        "True",
        "[[0, 1, 2], [3, 4, 5]]",
        "[[[1, 0], [2, 2]]]",
        "[0, 1, 10, 11]",
    ]

"""tf.contrib.metrics under tf2npu run: argument order, streaming_concat, Pearson's r."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = [pytest.mark.tf, pytest.mark.slow]


def test_streaming_metrics(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        m = tf.contrib.metrics
        pred = tf.placeholder(tf.float32, [None])
        label = tf.placeholder(tf.float32, [None])
        weight = tf.placeholder(tf.float32, [None])
        precision, precision_up = m.streaming_precision(pred, label)  # positional, contrib order
        concat, concat_up = m.streaming_concat(pred)
        r, r_up = m.streaming_pearson_correlation(pred, label, weights=weight)
        mse, mse_up = m.streaming_mean_squared_error(pred, label)
        batches = [([1., 0., 1.], [1., 1., 0.], [1., 1., 1.]),
                   ([2., 4.], [1., 5.], [1., 0.])]
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            for p, l, w in batches:
                sess.run([precision_up, concat_up, r_up, mse_up], {pred: p, label: l, weight: w})
            got = sess.run([precision, concat, r, mse])
        xs, ys = np.array([1., 0., 1., 2.]), np.array([1., 1., 0., 1.])  # weight-0 pair dropped
        print(got[0], got[1].tolist())
        print(np.isclose(got[2], np.corrcoef(xs, ys)[0, 1], atol=1e-5))
        print(np.isclose(got[3], np.mean((np.array([1, 0, 1, 2, 4.]) - [1, 1, 0, 1, 5.]) ** 2)))
        print(len(tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)) >= 4)
    """)
    # precision casts to bool (non-zero): predictions [1,0,1,2,4], labels [1,1,0,1,5]: tp 3, fp 1
    assert out.splitlines() == ["0.75 [1.0, 0.0, 1.0, 2.0, 4.0]", "True", "True", "True"]

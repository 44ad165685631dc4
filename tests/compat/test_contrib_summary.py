"""tf.contrib.summary under tf2npu run: graph-mode summaries as in a TPU host_call."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = [pytest.mark.tf, pytest.mark.slow]


def test_graph_mode_scalar_summary_is_written(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import glob, tempfile
        import tensorflow as tf
        from tensorflow.python.summary.summary_iterator import summary_iterator
        logdir = tempfile.mkdtemp()
        step = tf.train.get_or_create_global_step()
        writer = tf.contrib.summary.create_file_writer(logdir)
        with writer.as_default(), tf.contrib.summary.always_record_summaries():
            tf.contrib.summary.scalar("loss", tf.constant(2.5), step=step)
            ops = tf.contrib.summary.all_summary_ops()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with writer.as_default():
                tf.contrib.summary.initialize(graph=tf.get_default_graph(), session=sess)
            sess.run(ops)
            sess.run(writer.flush())
        for path in glob.glob(logdir + "/*"):
            for event in summary_iterator(path):
                for value in event.summary.value:
                    print(value.tag, value.simple_value, event.step)
    """)
    assert out.split() == ["loss", "2.5", "0"]

"""tf.contrib.lookup under tf2npu run: TF 1.15 argument names, TF 2.15 tables."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = [pytest.mark.tf, pytest.mark.slow]


def test_lookup_tables(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        vocab = tf.constant(["the", "cat", "sat"])
        ids = tf.contrib.lookup.index_table_from_tensor(mapping=vocab).lookup(
            tf.constant(["sat", "dog", "the"]))
        oov = tf.contrib.lookup.index_table_from_tensor(vocab, num_oov_buckets=1).lookup(
            tf.constant(["dog"]))
        words = tf.contrib.lookup.index_to_string_table_from_tensor(vocab).lookup(
            tf.constant([1, 7], tf.int64))
        table = tf.contrib.lookup.HashTable(
            tf.contrib.lookup.KeyValueTensorInitializer(["a", "b"], [5, 6]), -1)
        with tf.Session() as sess:
            sess.run(tf.tables_initializer())
            print(sess.run(ids).tolist(), sess.run(oov).tolist(), sess.run(words).tolist())
            print(sess.run(table.lookup(tf.constant(["b", "z"]))).tolist())
        try:
            tf.contrib.lookup.index_table_from_tensor(None)
        except ValueError as err:
            print(err)
    """)
    assert out.splitlines() == [
        "[2, -1, 0] [3] [b'cat', b'UNK']",
        "[6, -1]",
        "mapping must be specified.",
    ]

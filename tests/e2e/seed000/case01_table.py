"""Seed 000 case 01: a lookup table initialised in the session, looked up in tf.data."""
# ruff: noqa: F403, F405  (a migrated script: npu_bridge.npu_init is star-imported)

import tensorflow as tf

from npu_bridge.npu_init import *

keys = tf.constant(["cat", "dog", "bird"])
values = tf.constant([0, 1, 2], dtype=tf.int64)
table = tf.contrib.lookup.HashTable(tf.contrib.lookup.KeyValueTensorInitializer(keys, values), -1)

words = tf.data.Dataset.from_tensor_slices(["dog", "cat", "bird", "dog"])
ids = words.map(lambda w: table.lookup(w)).batch(2, drop_remainder=True)
iterator = ids.make_initializable_iterator()
batch = iterator.get_next()
total = tf.reduce_sum(tf.cast(batch, tf.float32))

with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.tables_initializer())
    sess.run(iterator.initializer)
    for _ in range(2):
        print("sum", sess.run(total))

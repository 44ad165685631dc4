"""Seed 000 case 02: a tf.Variable read by the input pipeline."""
# ruff: noqa: F403, F405  (a migrated script: npu_bridge.npu_init is star-imported)

import numpy as np
import tensorflow as tf

from npu_bridge.npu_init import *

batch_size = tf.Variable(
    tf.placeholder(tf.int64, [], "batch_size"), trainable=False, collections=[]
)
data = tf.data.Dataset.from_tensor_slices(np.arange(32, dtype=np.float32).reshape(16, 2))
data = data.batch(batch_size, drop_remainder=True)
iterator = data.make_initializable_iterator()
x = iterator.get_next()
w = tf.get_variable("w", [2, 1])
loss = tf.reduce_mean(tf.matmul(x, w))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session(config=npu_config_proto()) as sess:
    sess.run(batch_size.initializer, {"batch_size:0": 4})
    sess.run(tf.global_variables_initializer())
    sess.run(iterator.initializer)
    for _ in range(2):
        print("loss", sess.run([train_op, loss])[1])

"""Seed 000 case 03: v1 control flow in a dynamic-shape network."""
# ruff: noqa: F403, F405  (a migrated script: npu_bridge.npu_init is star-imported)

import numpy as np
import tensorflow as tf

from npu_bridge.npu_init import *

x = tf.placeholder(tf.float32, [None, 4], name="x")
i0 = tf.constant(0)


def body(i, acc):
    return i + 1, tf.concat([acc, acc[:1] * 0.5], axis=0)


_, grown = tf.while_loop(
    lambda i, acc: i < 3,
    body,
    [i0, x],
    shape_invariants=[i0.get_shape(), tf.TensorShape([None, 4])],
)
w = tf.get_variable("w", [4, 1])
loss = tf.reduce_mean(tf.matmul(grown, w))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer())
    for n in (2, 3):
        print("loss", sess.run([train_op, loss], {x: np.ones((n, 4), np.float32)})[1])

"""Small TF1 training scripts that tests run with ``tf2npu run`` (written to a file first)."""

from __future__ import annotations

__all__ = ["DENSE_TRAINING", "OVERFLOWING_MATMUL"]

DENSE_TRAINING = """\
import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

x = tf.placeholder(tf.float32, [4, 3], name="x")
w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10, name="w")
b = tf.Variable([0.5, -0.5], name="b")
y = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b), name="y")
loss = tf.reduce_mean(tf.square(y), name="loss")
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        print(sess.run([loss, train], {x: np.ones([4, 3], np.float32)})[0])
"""
"""A dense layer (MatMul + BiasAdd + Relu, which matmul_biasadd fuses) trained for 3 steps
with SGD in an NPU session; prints the loss of each step."""

OVERFLOWING_MATMUL = """\
import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

x = tf.placeholder(tf.float32, [2, 3], name="x")
w = tf.Variable(np.full([3, 2], 100.0, np.float32), name="w")
y = tf.matmul(x, w, name="y")
loss = tf.reduce_mean(y, name="loss")
with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer())
    for scale in (1.0, 300.0, 400.0):
        print(sess.run(loss, {x: np.full([2, 3], scale, np.float32)}))
"""
"""A MatMul of 3 x 300 x 100 = 90000 (step 1) and 120000 (step 2): beyond float16's 65504 under
a mixed precision mode, where MatMul computes in float16; step 0 (x = 1) does not overflow."""

"""Small TF1 training scripts that tests run with ``tf2npu run`` (written to a file first)."""

from __future__ import annotations

__all__ = ["DENSE_TRAINING"]

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

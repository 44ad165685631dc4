"""A small regression whose activity penalty overflows in float16 (for bisect precision).

A migrated TF 1.15 Session script: two dense layers fit a linear target, plus a small penalty on
the squared hidden activations, summed per example. The inputs are large (scale 80), so the
hidden activations reach about 50 (at most ~200): each square fits float16 (max 65504), but
their sum over the 64 units of one example (~80000) does not. Under allow_mix_precision the
MatMul is float16 (allow list) and the BiasAdd, Relu, Square and Sum after it follow it (gray
list): the sum overflows to Inf and the loss with it. Under must_keep_origin_dtype every op is
float32 and the loss is finite. Moving Sum (GE ``ReduceSumD``) to float32 (the black list)
restores the loss; moving only the Mean after it does not (its input is Inf already).

Usage: tf2npu run [--option precision_mode=MODE] fp16_overflow.py [--steps N]
"""

import argparse

import numpy as np
import tensorflow as tf

from npu_bridge.npu_init import npu_config_proto

FEATURES, HIDDEN, BATCH = 16, 64, 32


def build(x, y):
    hidden = tf.layers.dense(x, HIDDEN, activation=tf.nn.relu, name="hidden")
    # zero-initialised: the squared error stays small, only the penalty can overflow
    pred = tf.layers.dense(hidden, 1, kernel_initializer=tf.zeros_initializer(), name="out")
    with tf.name_scope("penalty"):
        energy = tf.reduce_sum(tf.square(hidden), axis=1)
        penalty = 1e-7 * tf.reduce_mean(energy)
    with tf.name_scope("loss"):
        loss = tf.reduce_mean(tf.square(pred - y)) + penalty
    return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    x_data = (rng.randn(BATCH, FEATURES) * 80).astype(np.float32)
    y_data = (x_data @ rng.randn(FEATURES, 1) * 0.01).astype(np.float32)
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        x = tf.constant(x_data, name="x")
        y = tf.constant(y_data, name="y")
        loss = build(x, y)
        train = tf.train.GradientDescentOptimizer(1e-5).minimize(loss)
        with tf.Session(config=npu_config_proto()) as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(args.steps):
                value, _ = sess.run([loss, train])
                print(f"step {step} loss {value:.6f}")


if __name__ == "__main__":
    main()

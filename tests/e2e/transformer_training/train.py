"""A 2-block pre-LN Transformer trained with Sess.run and Adam, for the training-fusion tests.

A migrated TF 1.15 Session script (tf2npu's own; no library code). Block 0 normalises with
``tf.nn.moments`` + ``rsqrt`` (plain TF), block 1 with GPT-2's ``reduce_mean``/``square``
spelling; both MLPs use GPT-2's tanh GELU written with ``tf.pow``. Every dense layer is
``tf.matmul(x, w) + b`` with variables. Prints ``step N loss L`` per step and ``final_loss=L``.

Usage: tf2npu run [--option ...] train.py [--steps N] [--optimizer adam|sgd]
"""

import argparse

import numpy as np
import tensorflow as tf

from npu_bridge.npu_init import npu_config_proto

BATCH, SEQ, WIDTH, FFN, VOCAB = 4, 8, 16, 32, 11


def dense(x, units, name, bias=True):
    with tf.variable_scope(name):
        w = tf.get_variable("w", [int(x.shape[-1]), units])
        flat = tf.matmul(tf.reshape(x, [-1, int(x.shape[-1])]), w)
        if bias:
            b = tf.get_variable("b", [units], initializer=tf.random_normal_initializer(0.0, 0.1))
            flat = flat + b
        return tf.reshape(flat, [-1, SEQ, units])


def gelu(x):  # openai/gpt-2 model.gelu
    return 0.5 * x * (1 + tf.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * tf.pow(x, 3))))


def norm_moments(x, name, epsilon=1e-5):
    with tf.variable_scope(name):
        g = tf.get_variable("g", [WIDTH], initializer=tf.random_normal_initializer(1.0, 0.1))
        b = tf.get_variable("b", [WIDTH], initializer=tf.random_normal_initializer(0.0, 0.1))
        mean, variance = tf.nn.moments(x, [-1], keep_dims=True)
        return (x - mean) * tf.rsqrt(variance + epsilon) * g + b


def norm_gpt2(x, name, epsilon=1e-5):  # openai/gpt-2 model.norm
    with tf.variable_scope(name):
        g = tf.get_variable("g", [WIDTH], initializer=tf.random_normal_initializer(1.0, 0.1))
        b = tf.get_variable("b", [WIDTH], initializer=tf.random_normal_initializer(0.0, 0.1))
        u = tf.reduce_mean(x, axis=-1, keepdims=True)
        s = tf.reduce_mean(tf.square(x - u), axis=-1, keepdims=True)
        return (x - u) * tf.rsqrt(s + epsilon) * g + b


def block(x, name, norm):
    with tf.variable_scope(name):
        h = norm(x, "ln_1")
        # no key bias: softmax over the keys ignores it, so its gradient is rounding noise that
        # Adam's first step (about lr * sign(g)) would turn into full steps
        q, k, v = dense(h, WIDTH, "q"), dense(h, WIDTH, "k", bias=False), dense(h, WIDTH, "v")
        weights = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) / np.sqrt(WIDTH))
        x = x + dense(tf.matmul(weights, v), WIDTH, "proj")
        h = norm(x, "ln_2")
        return x + dense(gelu(dense(h, FFN, "fc")), WIDTH, "out")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--optimizer", choices=("adam", "sgd"), default="adam")
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    ids = rng.randint(0, VOCAB, (BATCH, SEQ))
    targets = rng.randint(0, VOCAB, (BATCH, SEQ))
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        tokens = tf.placeholder(tf.int32, [None, SEQ], name="tokens")
        labels = tf.placeholder(tf.int32, [None, SEQ], name="labels")
        embedding = tf.get_variable("embedding", [VOCAB, WIDTH])
        x = tf.gather(embedding, tokens)
        x = block(x, "block_0", norm_moments)
        x = block(x, "block_1", norm_gpt2)
        logits = dense(x, VOCAB, "logits")
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        if args.optimizer == "adam":
            train = tf.train.AdamOptimizer(1e-2, epsilon=1e-6).minimize(loss)  # BERT's epsilon
        else:
            train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        feed = {tokens: ids, labels: targets}
        with tf.Session(config=npu_config_proto()) as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(args.steps):
                value, _ = sess.run([loss, train], feed)
                print(f"step {step} loss {value:.9g}")
            print(f"final_loss={sess.run(loss, feed):.9g}")


if __name__ == "__main__":
    main()

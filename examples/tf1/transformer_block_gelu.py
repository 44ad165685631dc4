"""A single BERT-style transformer encoder block trained on a toy regression task.

gelu() and dropout() follow google-research/bert modeling.py. Layer norm is
written out with tf.nn.moments so the script needs nothing from tf.contrib.
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

FLAGS = None
SEQ_LEN, HIDDEN, NUM_HEADS, FFN = 8, 32, 4, 64


def gelu(input_tensor):
    """Gaussian Error Linear Unit.

    This is a smoother version of the RELU.
    Original paper: https://arxiv.org/abs/1606.08415

    Args:
      input_tensor: float Tensor to perform activation.

    Returns:
      `input_tensor` with the GELU activation applied.
    """
    cdf = 0.5 * (1.0 + tf.tanh(
        (np.sqrt(2 / np.pi) * (input_tensor + 0.044715 * tf.pow(input_tensor, 3)))))
    return input_tensor * cdf


def dropout(input_tensor, dropout_prob):
    """Perform dropout; `dropout_prob` is the probability of dropping a value."""
    if dropout_prob is None or dropout_prob == 0.0:
        return input_tensor
    output = tf.nn.dropout(input_tensor, 1.0 - dropout_prob)
    return output


def layer_norm(input_tensor, name=None):
    """Layer normalization over the last axis (hand-written, no tf.contrib)."""
    with tf.variable_scope(name, default_name="LayerNorm"):
        dim = input_tensor.shape[-1].value
        gamma = tf.get_variable("gamma", [dim], initializer=tf.ones_initializer())
        beta = tf.get_variable("beta", [dim], initializer=tf.zeros_initializer())
        mean, variance = tf.nn.moments(input_tensor, axes=[-1], keep_dims=True)
        return (input_tensor - mean) * tf.rsqrt(variance + 1e-12) * gamma + beta


def self_attention(x, num_heads, dropout_prob):
    head_size = HIDDEN // num_heads

    def split_heads(t):  # [B, S, H] -> [B, heads, S, head_size]
        t = tf.reshape(t, [-1, SEQ_LEN, num_heads, head_size])
        return tf.transpose(t, [0, 2, 1, 3])

    q = split_heads(tf.layers.dense(x, HIDDEN, name="query"))
    k = split_heads(tf.layers.dense(x, HIDDEN, name="key"))
    v = split_heads(tf.layers.dense(x, HIDDEN, name="value"))
    scores = tf.matmul(q, k, transpose_b=True) * (1.0 / np.sqrt(float(head_size)))
    probs = dropout(tf.nn.softmax(scores), dropout_prob)
    context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
    return tf.reshape(context, [-1, SEQ_LEN, HIDDEN])


def encoder_block(x, dropout_prob=0.1):
    with tf.variable_scope("attention"):
        attn = tf.layers.dense(self_attention(x, NUM_HEADS, dropout_prob), HIDDEN, name="output")
        x = layer_norm(x + dropout(attn, dropout_prob))
    with tf.variable_scope("ffn"):
        inter = tf.layers.dense(x, FFN, activation=gelu, name="intermediate")
        out = tf.layers.dense(inter, HIDDEN, name="output")
        return layer_norm(x + dropout(out, dropout_prob))


def main(_):
    np.random.seed(0)
    tf.set_random_seed(0)
    model_dir = FLAGS.model_dir or tempfile.mkdtemp(prefix="transformer_")
    rng = np.random.RandomState(0)
    data_x = rng.randn(1024, SEQ_LEN, HIDDEN).astype(np.float32)
    w_true = rng.randn(HIDDEN, 1).astype(np.float32) / np.sqrt(HIDDEN)
    data_y = np.tanh(data_x.dot(w_true)).mean(axis=1)  # [N, 1] regression target

    inputs = tf.placeholder(tf.float32, [None, SEQ_LEN, HIDDEN], name="inputs")
    targets = tf.placeholder(tf.float32, [None, 1], name="targets")
    encoded = encoder_block(inputs, dropout_prob=FLAGS.dropout)
    pooled = tf.reduce_mean(encoded, axis=1)
    predictions = tf.layers.dense(pooled, 1, name="regressor")
    loss = tf.reduce_mean(tf.square(predictions - targets))
    train_op = tf.train.AdamOptimizer(learning_rate=1e-3).minimize(loss)

    saver = tf.train.Saver()
    log_every = max(1, FLAGS.steps // 5)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(FLAGS.steps):
            idx = rng.randint(0, len(data_x), size=FLAGS.batch_size)
            _, loss_value = sess.run([train_op, loss],
                                     feed_dict={inputs: data_x[idx], targets: data_y[idx]})
            if step % log_every == 0:
                print("step %d loss=%.5f" % (step, loss_value))
        saver.save(sess, os.path.join(model_dir, "model.ckpt"))
    print("final_loss=%f" % loss_value)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", dest="batch_size", type=int, default=32)
    parser.add_argument("--model-dir", dest="model_dir", default=None)
    parser.add_argument("--dropout", type=float, default=0.1,
                        help="dropout_prob of every dropout in the block (0 disables dropout)")
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(argv=[sys.argv[0]] + unparsed)

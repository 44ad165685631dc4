"""Plain tf.Session training loop fed by a tf.data initializable iterator.

Trains a small MLP regressor with dropout on synthetic data and saves a
checkpoint with tf.train.Saver at the end.
"""
import argparse
import os
import tempfile

import numpy as np
import tensorflow as tf


def build_dataset(num_examples=4096, num_features=20):
    rng = np.random.RandomState(0)
    x = rng.randn(num_examples, num_features).astype(np.float32)
    w = rng.randn(num_features, 1).astype(np.float32)
    # Non-linear target with a little noise.
    y = np.tanh(x.dot(w) / 4.0) + 0.05 * rng.randn(num_examples, 1)
    return x, y.astype(np.float32)


def mlp(features, dropout_rate, training=True):
    h = tf.layers.dense(features, 64, activation=tf.nn.relu, name="hidden1")
    if training and dropout_rate > 0:
        h = tf.nn.dropout(h, rate=dropout_rate)  # 0.1: drop 10% of activations
    h = tf.layers.dense(h, 32, activation=tf.nn.relu, name="hidden2")
    return tf.layers.dense(h, 1, name="output")


def main(args):
    np.random.seed(0)
    tf.set_random_seed(0)
    model_dir = args.model_dir or tempfile.mkdtemp(prefix="sessrun_")

    x, y = build_dataset()
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    dataset = dataset.shuffle(buffer_size=1000).repeat().batch(args.batch_size)
    iterator = dataset.make_initializable_iterator()
    features, labels = iterator.get_next()

    predictions = mlp(features, args.dropout, training=True)
    loss = tf.losses.mean_squared_error(labels=labels, predictions=predictions)
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(1e-3).minimize(loss, global_step=global_step)

    saver = tf.train.Saver(max_to_keep=1)
    config = tf.ConfigProto()
    config.gpu_options.allow_growth = True  # don't grab all GPU memory up front

    log_every = max(1, args.steps // 5)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(iterator.initializer)
        for step in range(args.steps):
            _, loss_value = sess.run([train_op, loss])
            if step % log_every == 0:
                print("step %d loss=%.5f" % (step, loss_value))
        ckpt_path = saver.save(sess, os.path.join(model_dir, "model.ckpt"),
                               global_step=global_step)
        print("saved checkpoint to %s" % ckpt_path)
    print("final_loss=%f" % loss_value)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", dest="batch_size", type=int, default=64)
    parser.add_argument("--model-dir", dest="model_dir", default=None)
    parser.add_argument("--dropout", type=float, default=0.1,
                        help="fraction of hidden activations to drop (0 disables dropout)")
    main(parser.parse_args())

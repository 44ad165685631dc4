"""MNIST-like classifier trained with a custom tf.estimator.Estimator.

The data is synthetic: 28x28 "images" flattened to 784 features, each a noisy
copy of one of ten fixed random prototypes, so the model has something
learnable without downloading MNIST.

Usage:
    python estimator_mnist_like.py --steps 50 --model-dir /tmp/mnist_est
"""
import argparse
import sys
import tempfile

import numpy as np
import tensorflow as tf

NUM_CLASSES = 10
NUM_FEATURES = 784  # 28 * 28 pixels, flattened

FLAGS = None


def make_data(num_examples, seed):
    """Generates (features, labels) as numpy arrays with a fixed seed."""
    rng = np.random.RandomState(seed)
    # One fixed "prototype digit" per class; every example is a noisy copy.
    prototypes = np.random.RandomState(1234).rand(NUM_CLASSES, NUM_FEATURES)
    y = rng.randint(0, NUM_CLASSES, size=num_examples).astype(np.int32)
    x = prototypes[y] + 0.5 * rng.randn(num_examples, NUM_FEATURES)
    return np.clip(x, 0.0, 1.0).astype(np.float32), y


def train_input_fn(x, y, batch_size):
    dataset = tf.data.Dataset.from_tensor_slices(({"pixels": x}, y))
    dataset = dataset.shuffle(1000).repeat().batch(batch_size)
    return dataset


def eval_input_fn(x, y, batch_size):
    # No repeat() here: evaluate() runs until the dataset is exhausted.
    dataset = tf.data.Dataset.from_tensor_slices(({"pixels": x}, y))
    return dataset.batch(batch_size)


def model_fn(features, labels, mode, params):
    """Two hidden dense layers followed by a softmax classifier."""
    net = features["pixels"]
    for units in params["hidden_units"]:
        net = tf.layers.dense(net, units, activation=tf.nn.relu)
    logits = tf.layers.dense(net, NUM_CLASSES, activation=None)
    predicted_classes = tf.argmax(logits, axis=1)

    if mode == tf.estimator.ModeKeys.PREDICT:
        predictions = {
            "class_ids": predicted_classes,
            "probabilities": tf.nn.softmax(logits),
        }
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)

    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    accuracy = tf.metrics.accuracy(labels=labels, predictions=predicted_classes)
    eval_metric_ops = {"accuracy": accuracy}

    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, eval_metric_ops=eval_metric_ops)

    # TRAIN
    optimizer = tf.train.GradientDescentOptimizer(learning_rate=params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(_):
    tf.logging.set_verbosity(tf.logging.INFO)
    np.random.seed(0)
    model_dir = FLAGS.model_dir or tempfile.mkdtemp(prefix="estimator_mnist_")

    train_x, train_y = make_data(2048, seed=0)
    eval_x, eval_y = make_data(512, seed=1)

    run_config = tf.estimator.RunConfig(
        model_dir=model_dir,
        tf_random_seed=0,  # graph-level seed for the graphs the Estimator builds
        save_checkpoints_steps=25,
        log_step_count_steps=10,
        session_config=tf.ConfigProto(allow_soft_placement=True))

    estimator = tf.estimator.Estimator(
        model_fn=model_fn,
        config=run_config,
        params={"hidden_units": [128, 64], "learning_rate": 0.1})

    estimator.train(
        input_fn=lambda: train_input_fn(train_x, train_y, FLAGS.batch_size),
        max_steps=FLAGS.steps)
    eval_result = estimator.evaluate(
        input_fn=lambda: eval_input_fn(eval_x, eval_y, FLAGS.batch_size))

    print("eval accuracy=%.4f" % eval_result["accuracy"])
    print("final_loss=%f" % eval_result["loss"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50, help="Training steps.")
    parser.add_argument("--batch-size", dest="batch_size", type=int, default=64)
    parser.add_argument("--model-dir", dest="model_dir", type=str, default=None,
                        help="Checkpoint directory (default: a fresh temp dir).")
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)

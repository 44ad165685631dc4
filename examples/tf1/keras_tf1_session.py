"""Keras model trained in TF1 graph mode with an explicitly configured session.

The session is created by hand and handed to Keras with
keras.backend.set_session(), which is how TF 1.x users controlled the
ConfigProto (GPU memory growth, soft placement, ...) for Keras models.
"""
import argparse
import math
import os
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow import keras

NUM_EXAMPLES = 1024
NUM_FEATURES = 16
NUM_CLASSES = 4


def make_data():
    rng = np.random.RandomState(0)
    x = rng.randn(NUM_EXAMPLES, NUM_FEATURES).astype(np.float32)
    centers = rng.randn(NUM_CLASSES, NUM_FEATURES)
    # Label = nearest class center, so the problem is learnable.
    dists = ((x[:, None, :] - centers[None, :, :]) ** 2).sum(axis=-1)
    y = np.argmin(dists, axis=1).astype(np.int32)
    return x, y


def build_model(dropout_rate):
    model = keras.Sequential([
        keras.layers.Dense(64, activation="relu", input_shape=(NUM_FEATURES,)),
        keras.layers.Dropout(dropout_rate),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(NUM_CLASSES, activation="softmax"),
    ])
    model.compile(optimizer=tf.train.AdamOptimizer(learning_rate=1e-3),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def main(args):
    np.random.seed(0)
    tf.set_random_seed(0)
    model_dir = args.model_dir or tempfile.mkdtemp(prefix="keras_tf1_")
    if not os.path.isdir(model_dir):
        os.makedirs(model_dir)  # save_weights() does not create it

    # Hand Keras a session with our own config instead of the default one.
    sess = tf.Session(config=tf.ConfigProto())
    keras.backend.set_session(sess)

    x, y = make_data()
    model = build_model(args.dropout)

    # --steps counts optimizer updates; round up to whole epochs.
    steps_per_epoch = int(math.ceil(NUM_EXAMPLES / float(args.batch_size)))
    epochs = max(1, int(math.ceil(args.steps / float(steps_per_epoch))))
    history = model.fit(x, y, epochs=epochs, batch_size=args.batch_size,
                        verbose=0)

    model.save_weights(os.path.join(model_dir, "weights.h5"))
    losses = history.history["loss"]
    print("epochs=%d first_epoch_loss=%.5f" % (epochs, losses[0]))
    print("final_loss=%f" % losses[-1])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", dest="batch_size", type=int, default=128)
    parser.add_argument("--model-dir", dest="model_dir", default=None)
    parser.add_argument("--dropout", type=float, default=0.2,
                        help="Dropout layer rate (0 disables dropout)")
    main(parser.parse_args())

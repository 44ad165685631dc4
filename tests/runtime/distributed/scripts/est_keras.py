"""Data-parallel NPUEstimator (train_and_evaluate, Adam) and Keras fit in a TF1 session.

Each rank trains on its shard of every global batch of 32 rows; one rank (RANK_SIZE unset) on
the whole batch. Writes OUT/est_<rank>.npz (the checkpoint's variables, Adam slots included)
and OUT/keras_<rank>.npz.   usage: est_keras.py OUT
"""

import os
import sys

import numpy as np
import tensorflow as tf

from npu_bridge.npu_init import (
    NPUBroadcastGlobalVariablesCallback,
    NPUDistributedOptimizer,
    NPUEstimator,
    NPURunConfig,
    get_rank_id,
    get_rank_size,
    npu_config_proto,
    npu_distributed_optimizer_wrapper,
)

out = sys.argv[1]
rank, size = get_rank_id(), get_rank_size()
data = np.random.RandomState(0)
X = data.randn(256, 8).astype(np.float32)
Y = (X @ data.randn(8, 1)).astype(np.float32)
per = 32 // size


def input_fn(training):
    def fn():
        ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(32, drop_remainder=True)
        ds = ds.map(
            lambda x, y: (x[rank * per : (rank + 1) * per], y[rank * per : (rank + 1) * per])
        )
        return ds.repeat() if training else ds

    return fn


def model_fn(features, labels, mode):
    h = tf.layers.dense(
        features, 16, tf.nn.relu, kernel_initializer=tf.glorot_uniform_initializer(seed=1)
    )
    pred = tf.layers.dense(h, 1, kernel_initializer=tf.glorot_uniform_initializer(seed=2))
    loss = tf.losses.mean_squared_error(labels, pred)
    opt = NPUDistributedOptimizer(tf.train.AdamOptimizer(0.01))
    train = opt.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)


config = NPURunConfig(model_dir=os.path.join(out, f"est_{rank}"), save_checkpoints_steps=20)
est = NPUEstimator(model_fn=model_fn, config=config)
tf.estimator.train_and_evaluate(
    est,
    tf.estimator.TrainSpec(input_fn(True), max_steps=20),
    tf.estimator.EvalSpec(input_fn(False), steps=2, throttle_secs=0),
)
names = [n for n in tf.train.list_variables(est.model_dir) if n[0].startswith("dense")]
np.savez(
    os.path.join(out, f"est_{rank}.npz"),
    **{n: tf.train.load_variable(est.model_dir, n) for n, _ in names},
)

# Keras in a TF1 session
tf.compat.v1.disable_eager_execution()
sess = tf.compat.v1.Session(config=npu_config_proto())
tf.compat.v1.keras.backend.set_session(sess)
model = tf.keras.Sequential(
    [
        tf.keras.layers.Dense(
            16,
            activation="relu",
            input_shape=(8,),
            kernel_initializer=tf.keras.initializers.glorot_uniform(seed=3),
        ),
        tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.glorot_uniform(seed=4)),
    ]
)
opt = npu_distributed_optimizer_wrapper(tf.keras.optimizers.legacy.SGD(0.05))
model.compile(opt, "mse")
xs = np.concatenate([X[i * 32 + rank * per : i * 32 + (rank + 1) * per] for i in range(8)])
ys = np.concatenate([Y[i * 32 + rank * per : i * 32 + (rank + 1) * per] for i in range(8)])
model.fit(
    xs,
    ys,
    batch_size=per,
    epochs=1,
    shuffle=False,
    verbose=0,
    callbacks=[NPUBroadcastGlobalVariablesCallback(0)],
)
np.savez(os.path.join(out, f"keras_{rank}.npz"), *model.get_weights())
print("done", rank)

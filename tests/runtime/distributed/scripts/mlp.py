"""Data-parallel MLP: each rank trains on its shard of every global batch of 64 rows.

Ranks start from different seeds; NPUBroadcastGlobalVariablesHook gives them rank 0's
variables, NPUDistributedOptimizer averages the gradients. One rank (RANK_SIZE unset) trains on
the whole batch. Writes OUT/weights_<rank>.npz.   usage: mlp.py OUT [--steps N] [--fault MODE]
"""

import os
import signal
import sys
import time

import numpy as np
import tensorflow as tf

from npu_bridge.npu_init import *  # noqa: F403

out, steps = sys.argv[1], 8
fault = sys.argv[sys.argv.index("--fault") + 1] if "--fault" in sys.argv else ""
rank, size = get_rank_id(), get_rank_size()  # noqa: F405
with open(os.path.join(out, f"pid_{rank}"), "w") as handle:
    handle.write(str(os.getpid()))

tf.set_random_seed(7 + rank)
data = np.random.RandomState(0)
inputs = data.randn(64 * steps, 16).astype(np.float32)
labels = np.argmax(inputs @ data.randn(16, 4), axis=1).astype(np.int32)

x = tf.placeholder(tf.float32, [None, 16])
y = tf.placeholder(tf.int32, [None])
hidden = tf.layers.dense(x, 32, tf.nn.tanh)
logits = tf.layers.dense(hidden, 4)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
opt = NPUDistributedOptimizer(tf.train.GradientDescentOptimizer(0.5))  # noqa: F405
train = opt.minimize(loss, global_step=tf.train.get_or_create_global_step())
hooks = [NPUBroadcastGlobalVariablesHook(0, rank)]  # noqa: F405

per = 64 // size
with tf.train.MonitoredTrainingSession(hooks=hooks, config=npu_config_proto()) as sess:  # noqa: F405
    for step in range(steps):
        if step == 3 and rank == 1 and fault:
            print(f"FAULT {fault} at {time.time():.3f}", flush=True)
            if fault == "raise":
                raise ValueError("rank 1 gave up")
            if fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if fault == "hang":
                time.sleep(600)
        start = step * 64 + rank * per
        feed = {x: inputs[start : start + per], y: labels[start : start + per]}
        _, value = sess.run([train, loss], feed)
    weights = {v.op.name.replace("/", "."): sess.run(v) for v in tf.trainable_variables()}
np.savez(os.path.join(out, f"weights_{rank}.npz"), **weights)
print("final loss", value)

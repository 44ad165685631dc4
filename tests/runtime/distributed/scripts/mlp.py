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


def check_collectives() -> None:
    """Every HCCL op against numpy on this rank, in a stock session (2 ranks)."""
    from npu_bridge.hccl import hccl_ops, manage

    mine = np.array([[1.0 + rank, 2.0], [3.0, 4.0 * (rank + 1)]], np.float32)
    both = [np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[2.0, 2.0], [3.0, 8.0]])]
    with tf.Graph().as_default():
        x = tf.constant(mine)
        manage.create_group("all", 2, [1, 0])  # a sub-group in another order
        got = {
            "max": hccl_ops.allreduce(x, "max"),
            "gather": hccl_ops.allgather(x, 2),
            "bcast": hccl_ops.broadcast([x], 1)[0],
            "rs": hccl_ops.reduce_scatter(x, "sum", 2),
            "group_sum": hccl_ops.allreduce(x, "sum", group="all"),
        }
        if rank == 0:
            extra = [hccl_ops.send(x * 10, 7, 1)]
        else:
            got["received"] = hccl_ops.receive([2, 2], tf.float32, 7, 0)
            extra = []
        rows = tf.placeholder(tf.float32, [None, 2])  # a shape that changes between runs
        varying = hccl_ops.allgather(rows * (rank + 1), 2)
        with tf.Session() as session:
            values = session.run([got, extra])[0]
            for count in (1, 3, 1):
                block = np.ones([count, 2], np.float32)
                gathered = session.run(varying, {rows: block})
                if not np.array_equal(gathered, np.concatenate([block, 2 * block])):
                    raise AssertionError(f"rank {rank}: gather of {count} rows = {gathered}")
    want = {
        "max": np.maximum(*both),
        "gather": np.concatenate(both),
        "bcast": both[1],
        "rs": (both[0] + both[1])[rank : rank + 1],
        "group_sum": both[0] + both[1],
        "received": both[0] * 10,
    }
    for name, value in values.items():
        if not np.array_equal(value, want[name]):
            raise AssertionError(f"rank {rank}: {name} = {value.tolist()}, want {want[name]}")
    print("collectives ok", sorted(values))


if size > 1 and not fault:
    check_collectives()
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
            if fault == "exit0":  # ends well while rank 0 still calls collectives
                sys.exit(0)
        start = step * 64 + rank * per
        feed = {x: inputs[start : start + per], y: labels[start : start + per]}
        _, value = sess.run([train, loss], feed)
    weights = {v.op.name.replace("/", "."): sess.run(v) for v in tf.trainable_variables()}
np.savez(os.path.join(out, f"weights_{rank}.npz"), **weights)
print("final loss", value)

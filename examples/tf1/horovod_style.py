"""Data-parallel training written the Horovod way (TF 1.x).

Launch with e.g. `horovodrun -np 4 python horovod_style.py --steps 50`.
Each worker reads its own shard of the data, gradients are averaged by
hvd.DistributedOptimizer, and only rank 0 writes checkpoints.
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

try:
    import horovod.tensorflow as hvd
except ImportError:
    # Horovod is not installed: run as one worker with the stand-in module
    # next to this file (it does no communication at all).
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _hvd_standin as hvd


def make_dataset(batch_size):
    rng = np.random.RandomState(0)
    x = rng.randn(8192, 32).astype(np.float32)
    w = rng.randn(32, 1).astype(np.float32)
    y = (x.dot(w) + 0.1 * rng.randn(8192, 1)).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    # Each worker only sees 1/size of the examples.
    dataset = dataset.shard(hvd.size(), hvd.rank())
    return dataset.shuffle(2048).repeat().batch(batch_size)


def main(args):
    # Horovod: initialize Horovod.
    hvd.init()
    np.random.seed(0)
    tf.set_random_seed(0)

    features, labels = make_dataset(args.batch_size).make_one_shot_iterator().get_next()
    hidden = tf.layers.dense(features, 64, activation=tf.nn.relu)
    predictions = tf.layers.dense(hidden, 1)
    loss = tf.losses.mean_squared_error(labels, predictions)

    global_step = tf.train.get_or_create_global_step()
    # Horovod: scale the learning rate by the number of workers.
    opt = tf.train.MomentumOptimizer(0.01 * hvd.size(), momentum=0.9)
    # Horovod: add Horovod Distributed Optimizer.
    opt = hvd.DistributedOptimizer(opt)
    train_op = opt.minimize(loss, global_step=global_step)

    hooks = [
        # Horovod: broadcast initial variable states from rank 0 to all other
        # processes, so every worker starts from the same weights.
        hvd.BroadcastGlobalVariablesHook(0),
        # Horovod: adjust number of steps based on number of workers.
        tf.train.StopAtStepHook(last_step=args.steps // hvd.size()),
    ]

    # Horovod: pin GPU to be used to process local rank (one GPU per process).
    config = tf.ConfigProto()
    config.gpu_options.allow_growth = True
    config.gpu_options.visible_device_list = str(hvd.local_rank())

    # Horovod: save checkpoints only on worker 0 to prevent other workers from
    # corrupting them.
    model_dir = args.model_dir or tempfile.mkdtemp(prefix="hvd_")
    checkpoint_dir = model_dir if hvd.rank() == 0 else None

    loss_value = None
    with tf.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir,
                                           hooks=hooks,
                                           config=config) as mon_sess:
        while not mon_sess.should_stop():
            _, loss_value, step = mon_sess.run([train_op, loss, global_step])
            if hvd.rank() == 0 and (step == 1 or step % 10 == 0):
                print("rank %d/%d step %d loss=%.5f" % (hvd.rank(), hvd.size(), step, loss_value))

    if hvd.rank() == 0:
        print("final_loss=%f" % loss_value)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", dest="batch_size", type=int, default=64)
    parser.add_argument("--model-dir", dest="model_dir", default=None)
    main(parser.parse_args())

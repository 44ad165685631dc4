"""Single-process stand-in for `horovod.tensorflow`, used by horovod_style.py.

horovod_style.py imports this module as `hvd` only when Horovod itself is not
installed, so that the example runs anywhere. It mimics the handful of hvd.*
calls the example uses for a job with exactly one worker and does no
communication at all. It is a helper, not an example script.
"""
import tensorflow as tf


def init():
    pass


def rank():
    return 0


def size():
    return 1


def local_rank():
    return 0


def local_size():
    return 1


def DistributedOptimizer(optimizer, **kwargs):
    return optimizer  # nothing to all-reduce with one worker


class BroadcastGlobalVariablesHook(tf.train.SessionRunHook):
    """No-op: with one worker the variables are already in sync."""

    def __init__(self, root_rank, device=""):
        self.root_rank = root_rank

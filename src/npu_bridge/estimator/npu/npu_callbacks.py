"""Keras callbacks of the latest adapter: broadcast the initial variables from one rank.

With ``RANK_SIZE`` 1 (or unset) the only rank already holds the values, so the callback does
nothing; with more ranks it broadcasts the root's values at the first batch.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from npu_bridge.hccl import hccl_ops
from npu_bridge.hccl.manage import world_rank_size
from tf2npu.client import groups as _groups

__all__ = ["NPUBroadcastGlobalVariablesCallback", "broadcast_global_variables"]


def broadcast_global_variables(root_rank: int) -> Any:
    """Set every floating global variable to its value on ``root_rank``.

    Graph mode: returns the op that does it. Eager mode: assigns right away, returns None.
    With one rank each variable is re-assigned its own value.
    """
    assigns = []
    for var in tf.compat.v1.global_variables():
        if not var.dtype.base_dtype.is_floating:
            continue
        (value,) = hccl_ops.broadcast([var.read_value()], root_rank=root_rank)
        assigns.append(var.assign(value))
    if tf.executing_eagerly():
        return None
    return tf.group(*assigns)


class NPUBroadcastGlobalVariablesCallback(tf.keras.callbacks.Callback):  # type: ignore[misc]
    """On the first batch, broadcast the variables from ``root_rank`` (nothing with one rank).

    Keras creates its variables lazily; the first batch is the first moment they all exist.
    """

    def __init__(self, root_rank: int) -> None:
        super().__init__()
        self.root_rank = root_rank
        self.broadcast_done = False

    def on_batch_begin(self, batch: int, logs: Any = None) -> None:
        if self.broadcast_done:
            return
        self.broadcast_done = True
        if world_rank_size() == 1:
            return
        _groups.require_cluster("NPUBroadcastGlobalVariablesCallback")
        if tf.executing_eagerly():
            broadcast_global_variables(self.root_rank)
            return
        session = tf.compat.v1.keras.backend.get_session()  # initialises Keras' variables
        session.run(broadcast_global_variables(self.root_rank))

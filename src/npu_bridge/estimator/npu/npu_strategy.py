"""``NPUStrategy``: the adapter's one-device ``tf.distribute`` strategy.

Each process drives one device; data parallelism comes from every rank reading its own shard of
the input. So the only change from TensorFlow's ``OneDeviceStrategy`` (v1 API) is
:meth:`NPUStrategy.experimental_distribute_dataset`, which returns
``dataset.shard(get_rank_size(), get_rank_id())`` — a plain ``tf.data.Dataset``, as in the
adapter. Rank size and id come from :mod:`npu_bridge.hccl.manage` (``RANK_SIZE`` / ``RANK_ID``
here; 1 and 0 by default, which keeps every element).

Example:
    >>> import tensorflow as tf
    >>> strategy = NPUStrategy()
    >>> shard = strategy.experimental_distribute_dataset(tf.data.Dataset.range(4))
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["NPUStrategy"]


class NPUStrategy(tf.compat.v1.distribute.OneDeviceStrategy):  # type: ignore[misc]
    """A one-device strategy whose distributed dataset is this rank's shard.

    Args:
        device: the device variables and computation are placed on (the adapter's default,
            ``"/cpu:0"``: the graph engine, not TensorFlow, moves work to the NPU).
    """

    def __init__(self, device: str = "/cpu:0") -> None:
        super().__init__(device)

    def experimental_distribute_dataset(self, dataset: Any, options: Any = None) -> Any:
        """``dataset.shard(rank_size, rank_id)``; ``options`` is accepted and unused, as in the
        adapter (a single device needs no input replication)."""
        from npu_bridge.hccl.manage import get_rank_id, get_rank_size

        return dataset.shard(get_rank_size(), get_rank_id())

"""Regular renames: an API whose every use becomes another name, arguments unchanged.

A row says which rule applies it, so one table serves several rules; a rule looks its rows up
with :func:`renames_for`. ``old`` is a canonical API name (as :mod:`tf2npu.migrate.names`
produces it: ``hvd.rank``, ``hvd.keras.rank``); ``new`` is the text that replaces the reference,
a name the ``from npu_bridge.npu_init import *`` import provides. Calls and plain references are
renamed alike (``hvd.rank()`` and ``rank_fn = hvd.rank``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class Rename:
    """``old`` becomes ``new`` wherever it is used; ``note`` explains the change to the user."""

    old: str
    new: str
    rule: str
    note: str = ""


_HCCL = "the HCCL rank API (hccl.manage.api, re-exported by npu_init)"

RENAMES: tuple[Rename, ...] = (
    # Horovod's process queries -> HCCL's (valid once init_resource() has initialised HCCL).
    Rename("hvd.rank", "get_rank_id", "horovod", f"global rank from {_HCCL}"),
    Rename("hvd.local_rank", "get_local_rank_id", "horovod", f"rank on this server from {_HCCL}"),
    Rename("hvd.size", "get_rank_size", "horovod", f"number of ranks from {_HCCL}"),
    Rename("hvd.local_size", "get_local_rank_size", "horovod",
           f"ranks on this server from {_HCCL}"),
    Rename("hvd.keras.rank", "get_rank_id", "horovod", f"global rank from {_HCCL}"),
    Rename("hvd.keras.local_rank", "get_local_rank_id", "horovod",
           f"rank on this server from {_HCCL}"),
    Rename("hvd.keras.size", "get_rank_size", "horovod", f"number of ranks from {_HCCL}"),
    Rename("hvd.keras.local_size", "get_local_rank_size", "horovod",
           f"ranks on this server from {_HCCL}"),
    # tf.contrib.mixed_precision's loss scaling: the NPU classes keep its signatures and add the
    # NPU float-status overflow check.
    Rename("tf.contrib.mixed_precision.LossScaleOptimizer", "NPULossScaleOptimizer",
           "loss_scale", "same (opt, loss_scale_manager) signature; checks NPU overflow status"),
    Rename("tf.contrib.mixed_precision.FixedLossScaleManager", "FixedLossScaleManager",
           "loss_scale", "same signature"),
    Rename("tf.contrib.mixed_precision.ExponentialUpdateLossScaleManager",
           "ExponentialUpdateLossScaleManager", "loss_scale", "same signature and update rule"),
)  # fmt: skip


@cache
def renames_for(rule: str) -> Mapping[str, Rename]:
    """The rows a rule applies, by old name."""
    return MappingProxyType({row.old: row for row in RENAMES if row.rule == rule})

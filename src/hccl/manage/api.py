"""CANN's ``hccl.manage.api`` for one process: :mod:`npu_bridge.hccl.manage`'s rank helpers.

Example:
    >>> from hccl.manage.api import get_rank_id, get_rank_size
    >>> get_rank_size(), get_rank_id()  # RANK_SIZE / RANK_ID unset: one rank
    (1, 0)
"""

from npu_bridge.hccl.manage import (
    create_group,
    destroy_group,
    get_group_rank_from_world_rank,
    get_local_rank_id,
    get_local_rank_size,
    get_rank_id,
    get_rank_size,
    get_world_rank_from_group_rank,
)

__all__ = [
    "create_group",
    "destroy_group",
    "get_group_rank_from_world_rank",
    "get_local_rank_id",
    "get_local_rank_size",
    "get_rank_id",
    "get_rank_size",
    "get_world_rank_from_group_rank",
]

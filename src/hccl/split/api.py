"""CANN's ``hccl.split.api`` for one process: the split strategies of :mod:`npu_bridge.hccl.manage`.

With one rank there is nothing to fuse, so a strategy is validated and recorded only.
"""

from npu_bridge.hccl.manage import set_split_strategy_by_idx, set_split_strategy_by_size

__all__ = ["set_split_strategy_by_idx", "set_split_strategy_by_size"]

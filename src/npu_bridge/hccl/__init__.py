"""``npu_bridge.hccl``: collective communication (HCCL) for one process.

:mod:`~npu_bridge.hccl.hccl_ops` holds the collective ops, :mod:`~npu_bridge.hccl.manage` the
rank helpers that the real adapter takes from CANN's separate ``hccl.manage.api`` /
``hccl.split.api`` packages. tf2npu runs one process: with ``RANK_SIZE`` 1 (or unset) every
collective is an exact identity; more ranks raise an error saying how to run.
"""

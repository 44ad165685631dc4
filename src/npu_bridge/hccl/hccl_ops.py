"""``npu_bridge.hccl.hccl_ops``: HCCL collective ops with the adapter's signatures.

With one rank (``RANK_SIZE`` 1 or unset) a collective over the world group is mathematically
the identity (the sum, product, max or min over one rank is the value itself; gathering or
broadcasting from one rank returns it), so each op is a ``tf.identity`` named like the real op
(``HcomAllReduce``, ``HcomAllGather``, ...), bit-exact, and its gradient is the identity of the
incoming gradient. In a ``tf2npu run --ranks N`` job each op is an ``Hcom*`` node (built by
:mod:`tf2npu.client.hcom`) executed by TensorFlow's collective runtime among the group's ranks;
``send`` / ``receive`` need a second rank.

Arguments are checked like the real wrappers check them (reduction names, fusion modes, group
names, ranks) first, so a script that is wrong on the device is wrong here too.

The RDMA ops ``remote_read`` / ``remote_write`` move rows between the graph and host memory
made by ``npu_plugin.malloc_shared_memory``, addressed by ``[rank_id, address, length]`` rows
(``npu_cpu_ops.embeddingrankid``); here they read and write this process's buffers
(:mod:`npu_bridge._shared_memory`). ``remote_ref_read`` / ``remote_scatter_write`` work on the
device's RDMA cache, which does not exist off the device: they raise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from npu_bridge import _shared_memory
from npu_bridge.hccl import manage as _manage
from npu_bridge.hccl.manage import WORLD_GROUP, _collective_group, _members
from tf2npu.client import hcom as _hcom
from tf2npu.errors import Tf2NpuError

__all__ = [
    "allgather",
    "allreduce",
    "broadcast",
    "receive",
    "reduce",
    "reduce_scatter",
    "remote_read",
    "remote_ref_read",
    "remote_scatter_write",
    "remote_write",
    "send",
]

REDUCTIONS = ("sum", "prod", "max", "min")


def _check_reduction(op: str, reduction: object) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(
            f"hccl_ops.{op}: reduction={reduction!r} is not supported; use one of: "
            f"{', '.join(REDUCTIONS)}"
        )


def _check_fusion(op: str, fusion: object, fusion_id: object, allowed: tuple[int, ...]) -> None:
    if not isinstance(fusion, int) or isinstance(fusion, bool) or fusion not in allowed:
        raise ValueError(
            f"hccl_ops.{op}: fusion={fusion!r}; use one of {allowed} (0 = no fusion, "
            "1 = by the gradient split strategy, 2 = by fusion_id)"
        )
    if not isinstance(fusion_id, int) or isinstance(fusion_id, bool):
        raise TypeError(f"hccl_ops.{op}: fusion_id={fusion_id!r} must be an int (-1 = none)")


def _check_rank(op: str, what: str, rank: object, group: str) -> None:
    size = len(_members(group))
    if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < size:
        raise ValueError(
            f"hccl_ops.{op}: {what}={rank!r} is not a rank of group {group!r}; use 0..{size - 1}"
        )


def _check_rank_size(op: str, rank_size: object, group: str) -> None:
    size = len(_members(group))
    if rank_size != size:
        raise ValueError(
            f"hccl_ops.{op}: rank_size={rank_size!r} but group {group!r} has {size} rank(s); "
            "pass get_rank_size(group)"
        )


def allreduce(
    tensor: Any,
    reduction: str,
    fusion: int = 1,
    fusion_id: int = -1,
    group: str = WORLD_GROUP,
) -> Any:
    """Reduce ``tensor`` over all ranks of ``group`` with ``reduction``; every rank gets it."""
    _check_reduction("allreduce", reduction)
    _check_fusion("allreduce", fusion, fusion_id, (0, 1, 2))
    found = _collective_group(group, "hccl_ops.allreduce")
    if found is None:
        return tf.identity(tensor, name="HcomAllReduce")
    return _hcom.all_reduce(tensor, reduction, *found)


def allgather(
    tensor: Any, rank_size: int, group: str = WORLD_GROUP, fusion: int = 0, fusion_id: int = -1
) -> Any:
    """Concatenate ``tensor`` from the ``rank_size`` ranks of ``group`` along dimension 0."""
    _check_fusion("allgather", fusion, fusion_id, (0, 2))
    _check_rank_size("allgather", rank_size, group)
    found = _collective_group(group, "hccl_ops.allgather")
    if found is None:
        return tf.identity(tensor, name="HcomAllGather")
    return _hcom.all_gather(tensor, *found)


def broadcast(
    tensor: Sequence[Any],
    root_rank: int,
    fusion: int = 2,
    fusion_id: int = 0,
    group: str = WORLD_GROUP,
) -> list[Any]:
    """Send the tensors of rank ``root_rank`` to every rank; takes and returns a **list**."""
    if not isinstance(tensor, (list, tuple)):
        raise TypeError(
            f"hccl_ops.broadcast: tensor={tensor!r} must be a list of tensors (the op takes and "
            "returns lists), e.g. broadcast([t], root_rank=0)"
        )
    _check_fusion("broadcast", fusion, fusion_id, (0, 2))
    _check_rank("broadcast", "root_rank", root_rank, group)
    found = _collective_group(group, "hccl_ops.broadcast")
    if found is None:
        return [tf.identity(t, name="HcomBroadcast") for t in tensor]
    return [_hcom.broadcast(t, root_rank, *found) for t in tensor]


def reduce(
    tensor: Any,
    reduction: str,
    root_rank: int,
    fusion: int = 0,
    fusion_id: int = -1,
    group: str = WORLD_GROUP,
) -> Any:
    """Reduce ``tensor`` over ``group`` into rank ``root_rank``."""
    _check_reduction("reduce", reduction)
    _check_fusion("reduce", fusion, fusion_id, (0, 1, 2))
    _check_rank("reduce", "root_rank", root_rank, group)
    found = _collective_group(group, "hccl_ops.reduce")
    if found is None:
        return tf.identity(tensor, name="HcomReduce")
    return _hcom.reduce(tensor, reduction, root_rank, *found)


def reduce_scatter(
    tensor: Any,
    reduction: str,
    rank_size: int,
    group: str = WORLD_GROUP,
    fusion: int = 0,
    fusion_id: int = -1,
) -> Any:
    """Reduce ``tensor`` over ``group``; rank ``i`` keeps the ``i``-th slice along dim 0."""
    _check_reduction("reduce_scatter", reduction)
    _check_fusion("reduce_scatter", fusion, fusion_id, (0, 2))
    _check_rank_size("reduce_scatter", rank_size, group)
    found = _collective_group(group, "hccl_ops.reduce_scatter")
    if found is None:
        return tf.identity(tensor, name="HcomReduceScatter")
    return _hcom.reduce_scatter(tensor, reduction, *found)


def _peer_group(op: str, what: str, rank: object, group: str) -> Any:
    """The group of a point-to-point op, or an error when it has no second rank."""
    found = _collective_group(group, f"hccl_ops.{op}")
    if found is None:
        raise Tf2NpuError(
            f"hccl_ops.{op}: {what}={rank!r} needs a second rank, but group {group!r} has one "
            f"(RANK_SIZE={_manage.world_rank_size()}); run several ranks with tf2npu run --ranks N"
        )
    _check_rank(op, what, rank, group)
    if found[0].rank == rank:
        raise ValueError(f"hccl_ops.{op}: {what}={rank!r} is this rank; give another rank")
    return found


def send(tensor: Any, sr_tag: int, dest_rank: int, group: str = WORLD_GROUP) -> Any:
    """Send ``tensor`` to ``dest_rank`` of ``group``; the matching ``receive`` has ``sr_tag``."""
    found = _peer_group("send", "dest_rank", dest_rank, group)
    return _hcom.send(tensor, sr_tag, dest_rank, *found)


def receive(
    shape: Any, data_type: Any, sr_tag: int, src_rank: int, group: str = WORLD_GROUP
) -> Any:
    """Receive the tensor ``src_rank`` of ``group`` sends with ``sr_tag`` (static shape)."""
    found = _peer_group("receive", "src_rank", src_rank, group)
    return _hcom.receive(shape, data_type, sr_tag, src_rank, *found)


def remote_read(tensorRemote: Any, data_type: Any) -> Any:
    """Rows of host shared memory: one output row of ``data_type`` per ``[rank, addr, len]``."""
    dtype = tf.dtypes.as_dtype(data_type)
    remote = tf.convert_to_tensor(tensorRemote, tf.uint64, name="remote")

    def read(triples: Any) -> Any:
        return _shared_memory.read_rows(triples, dtype.as_numpy_dtype)

    rows = tf.numpy_function(read, [remote], dtype, stateful=True, name="HcomRemoteRead")
    rows.set_shape([remote.shape[0] if remote.shape.rank == 2 else None, None])
    return rows


def remote_write(tensorRemote: Any, tensorLocal: Any, data_type: Any = None) -> Any:
    """Write row ``i`` of ``tensorLocal`` to host shared memory at the ``i``-th triple."""
    remote = tf.convert_to_tensor(tensorRemote, tf.uint64, name="remote")
    local = tf.convert_to_tensor(tensorLocal, data_type, name="local")

    def write(triples: Any, values: Any) -> Any:
        _shared_memory.write_rows(triples, values)
        return np.int32(0)

    done = tf.numpy_function(write, [remote, local], tf.int32, stateful=True)
    return tf.group(done, name="HcomRemoteWrite")


def _no_rdma_cache(op: str) -> Tf2NpuError:
    return Tf2NpuError(
        f"hccl_ops.{op}: reads or writes the device's RDMA cache (npu_plugin.get_rdma_cache), "
        "which does not exist off the device; use remote_read / remote_write over "
        "malloc_shared_memory buffers, or tf.gather / tf.scatter_update on a tf.Variable"
    )


def remote_ref_read(tensorRemote: Any, cache: Any, offset: Any) -> Any:
    """Read remote rows into the RDMA cache (device only: always an error here)."""
    raise _no_rdma_cache("remote_ref_read")


def remote_scatter_write(tensorRemote: Any, tensorLocal: Any, offset: Any) -> Any:
    """Write RDMA-cache rows to remote memory (device only: always an error here)."""
    raise _no_rdma_cache("remote_scatter_write")

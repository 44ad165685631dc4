"""HCCL collectives (``HcomAllReduce`` ...) whose CPU bodies are TensorFlow collective ops.

``npu_bridge.hccl.hccl_ops`` emits these in a multi-rank job; the graph keeps the device's op
types, so placement, dumps and profiles show ``HcomAllReduce``, and a stock session runs the
same nodes as calls of their bodies. A body is TensorFlow's own collective (``CollectiveReduceV2``,
``CollectiveGatherV2``, ``CollectiveBcastSendV2``/``RecvV2``), which meets the same op of the
other ranks through the collective executor of this rank's server
(:mod:`tf2npu.runtime.distributed.world`).

Every rank must give the same ``group_key``, ``group_size`` and ``instance_key`` to the same
collective, and the same shape and dtype: the keys are chosen by
:mod:`tf2npu.client.groups`, never here.

The ops get no TensorFlow ``timeout``: a collective op given one starts two threads on every
execution that sleep for the whole timeout, so at ``HCCL_EXEC_TIMEOUT`` = 1800 s a rank running
ten collectives a second held 36,000 threads and the machine ran out of them. How long a rank
waits for the others is bounded per ``session.run`` instead
(:func:`tf2npu.runtime.distributed.world.distributed_config`).

A collective whose shape is not static when it is built (``dynamic``) may change shape from one
run to the next: the ranks first all-gather the shape, then use a key per shape (see ``_key``).

What differs from the device: ``HcomReduce`` all-reduces (every rank gets the result, not only
the root) and ``HcomReduceScatter`` all-reduces then keeps this rank's slice (TensorFlow has no
CPU reduce-scatter); both give the root / this rank exactly the device's values.
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import DT_FLOAT, DT_HALF, DT_INT32, DT_INT64
from tf2npu.graph.npu_ops.opdef import ArgDef, AttrDef, NpuOpDef

__all__ = [
    "HCOM_ALL_GATHER",
    "HCOM_ALL_REDUCE",
    "HCOM_BROADCAST",
    "HCOM_OPS",
    "HCOM_RECEIVE",
    "HCOM_REDUCE",
    "HCOM_REDUCE_SCATTER",
    "HCOM_SEND",
    "KEY_BASE",
    "KEY_SPAN",
    "MERGE_OPS",
    "SHAPES_DIFFER",
]

#: HCCL reduction -> ``merge_op`` of TensorFlow's collective reduce.
MERGE_OPS = {"sum": "Add", "prod": "Mul", "max": "Max", "min": "Min"}
_DTYPES = (DT_FLOAT, DT_HALF, DT_INT32, DT_INT64)
_REDUCE_DTYPES = (DT_FLOAT, DT_HALF, DT_INT32, DT_INT64)


def _keys(*extra: AttrDef) -> tuple[AttrDef, ...]:
    return (
        *extra,
        AttrDef("group_size", "int", 1, "ranks in the group"),
        AttrDef("group_key", "int", 1, "TensorFlow's id of the group (same on every rank)"),
        AttrDef("instance_key", "int", 0, "TensorFlow's id of the collective (same on all ranks)"),
        AttrDef(
            "dynamic",
            "bool",
            False,
            "the shape may change between runs: the ranks first agree on it, then use a key "
            "per shape",
        ),
    )


#: The assertion a ``dynamic`` collective fails with when the ranks' shapes differ (the
#: gathered shapes, one row per rank, follow it in TensorFlow's message).
SHAPES_DIFFER = "the ranks passed tensors of different shapes to one collective"

#: Instance keys (static ones chosen by ``tf2npu.client.groups``, and those
#: derived from a runtime shape here) are ``KEY_BASE + h % KEY_SPAN``.
KEY_BASE, KEY_SPAN = 1 << 24, (1 << 31) - (1 << 24) - 1
_PRIME = (1 << 31) - 1


def _key(x: Any, *, group_size: int, group_key: int, instance_key: int, dynamic: bool) -> Any:
    """The instance key of this execution: ``instance_key`` itself for a static shape.

    TensorFlow's group leader remembers the shape of an instance key for the life of the
    process, so a collective whose shape changes between runs (the last, smaller batch) would
    fail with "Shape mismatch". A ``dynamic`` collective therefore first all-gathers the
    members' shapes under ``instance_key`` (always the same shape: one row of the rank), stops
    with an error naming them when they differ, and then runs under a key hashed from
    ``instance_key`` and the shape: the same on every rank, another one per shape.
    """
    if not dynamic:
        return instance_key
    import tensorflow as tf
    from tensorflow.python.ops import collective_ops

    shape = tf.shape(x, out_type=tf.int64)
    row = tf.expand_dims(shape, 0)
    shapes = collective_ops.all_gather_v2(
        row, group_size=group_size, group_key=group_key, instance_key=instance_key
    )
    same = tf.debugging.assert_equal(
        shapes, tf.tile(row, [group_size, 1]), summarize=64,
        message=SHAPES_DIFFER,
    )  # fmt: skip

    def mix(hashed: Any, dim: Any) -> Any:
        return tf.math.floormod(hashed * 1000003 + dim + 1, _PRIME)

    with tf.control_dependencies([same]):
        hashed = tf.foldl(mix, shape, initializer=tf.constant(instance_key, tf.int64))
        return tf.cast(KEY_BASE + tf.math.floormod(hashed, KEY_SPAN), tf.int32)


def _reduce(x: Any, *, reduction: str, group_size: int, group_key: int, instance_key: int,
            dynamic: bool = False) -> Any:  # fmt: skip
    from tensorflow.python.ops import collective_ops

    key = _key(x, group_size=group_size, group_key=group_key, instance_key=instance_key,
               dynamic=dynamic)  # fmt: skip
    return collective_ops.all_reduce_v2(
        x, group_size=group_size, group_key=group_key, instance_key=key,
        merge_op=MERGE_OPS[reduction], final_op="Id",
    )  # fmt: skip


def _all_reduce(x: Any, **attrs: Any) -> Any:
    return _reduce(x, **attrs)


def _all_gather(x: Any, **keys: Any) -> Any:
    from tensorflow.python.ops import collective_ops

    return collective_ops.all_gather_v2(
        x, group_size=keys["group_size"], group_key=keys["group_key"],
        instance_key=_key(x, **keys),
    )  # fmt: skip


def _broadcast(x: Any, *, root_rank: int, rank: int, **keys: Any) -> Any:
    import tensorflow as tf
    from tensorflow.python.ops import collective_ops

    key = _key(x, **keys)
    args = {"group_size": keys["group_size"], "group_key": keys["group_key"],
            "instance_key": key}  # fmt: skip
    if rank == root_rank:
        return collective_ops.broadcast_send_v2(x, **args)
    return collective_ops.broadcast_recv_v2(tf.shape(x), x.dtype, **args)


def _reduce_to_root(x: Any, *, root_rank: int, **attrs: Any) -> Any:
    del root_rank  # every rank gets the reduction (see the module docstring)
    return _reduce(x, **attrs)


def _reduce_scatter(x: Any, *, rank: int, **attrs: Any) -> Any:
    import tensorflow as tf

    reduced = _reduce(x, **attrs)
    return tf.split(reduced, attrs["group_size"], axis=0)[rank]


def _send(x: Any, *, dest_rank: int, sr_tag: int, dynamic: bool, **keys: Any) -> Any:
    from tensorflow.python.ops import collective_ops

    del dest_rank, sr_tag, dynamic  # a send's shape is static (checked when it is built)
    return collective_ops.broadcast_send_v2(x, **keys)


def _receive(shape: Any, like: Any, *, src_rank: int, sr_tag: int, dynamic: bool,
             **keys: Any) -> Any:  # fmt: skip
    from tensorflow.python.ops import collective_ops

    del src_rank, sr_tag, dynamic
    return collective_ops.broadcast_recv_v2(shape, like.dtype, **keys)


_REDUCTION = AttrDef("reduction", "string", "sum", "sum, prod, max or min")
_ROOT = AttrDef("root_rank", "int", 0, "the rank (in the group) that sends / receives the result")
_RANK = AttrDef("rank", "int", 0, "this process's rank in the group")
_X = (ArgDef("x", "this rank's tensor"),)
_Y = (ArgDef("y", "the collective's result"),)

HCOM_ALL_REDUCE = NpuOpDef(
    name="HcomAllReduce",
    summary="Reduce a tensor over the ranks of a group; every rank gets the result.",
    math="y = x_0 ∘ x_1 ∘ … ∘ x_{n-1}, ∘ = reduction (TensorFlow's ring all-reduce)",
    inputs=_X,
    outputs=_Y,
    dtypes=_REDUCE_DTYPES,
    body=_all_reduce,
    attrs=_keys(_REDUCTION),
    exactness="every rank gets bit-identical values (one ring order for all ranks)",
)
HCOM_ALL_GATHER = NpuOpDef(
    name="HcomAllGather",
    summary="Concatenate the ranks' tensors along dimension 0, in rank order.",
    math="y = concat([x_0, …, x_{n-1}], axis=0); every rank's x has the same shape",
    inputs=_X,
    outputs=_Y,
    dtypes=_DTYPES,
    body=_all_gather,
    attrs=_keys(),
    exactness="exact (a copy)",
)
HCOM_BROADCAST = NpuOpDef(
    name="HcomBroadcast",
    summary="Every rank gets root_rank's tensor (one tensor per node; the adapter's list "
    "becomes one node per tensor).",
    math="y = x_root",
    inputs=_X,
    outputs=_Y,
    dtypes=_DTYPES,
    body=_broadcast,
    attrs=_keys(_ROOT, _RANK),
    exactness="exact (a copy)",
)
HCOM_REDUCE = NpuOpDef(
    name="HcomReduce",
    summary="Reduce a tensor over the ranks into root_rank (here every rank gets it).",
    math="y = x_0 ∘ … ∘ x_{n-1} on root_rank",
    inputs=_X,
    outputs=_Y,
    dtypes=_REDUCE_DTYPES,
    body=_reduce_to_root,
    attrs=_keys(_REDUCTION, _ROOT),
    exactness="the root's value is the all-reduce's, bit for bit",
)
HCOM_REDUCE_SCATTER = NpuOpDef(
    name="HcomReduceScatter",
    summary="Reduce over the ranks; rank i keeps slice i of dimension 0 (an all-reduce, then "
    "the slice).",
    math="y = split(x_0 ∘ … ∘ x_{n-1}, n, axis=0)[rank]",
    inputs=_X,
    outputs=_Y,
    dtypes=_REDUCE_DTYPES,
    body=_reduce_scatter,
    attrs=_keys(_REDUCTION, _RANK),
    exactness="the slice of the all-reduce, bit for bit",
)
HCOM_SEND = NpuOpDef(
    name="HcomSend",
    summary="Send a tensor to dest_rank (a broadcast in the two-rank group of the pair).",
    math="(x goes to dest_rank's HcomReceive with the same sr_tag); y = x",
    inputs=_X,
    outputs=_Y,
    dtypes=_DTYPES,
    body=_send,
    attrs=_keys(
        AttrDef("dest_rank", "int", 0, "the receiving rank"),
        AttrDef("sr_tag", "int", 0, "pairs a send with its receive"),
    ),
    exactness="exact (a copy)",
)
HCOM_RECEIVE = NpuOpDef(
    name="HcomReceive",
    summary="Receive the tensor src_rank sends with the same sr_tag.",
    math="y = x sent by src_rank",
    inputs=(
        ArgDef("shape", "the shape to receive", type_attr="", dtype=DT_INT32),
        ArgDef("like", "an empty tensor of the dtype to receive"),
    ),
    outputs=_Y,
    dtypes=_DTYPES,
    body=_receive,
    attrs=_keys(
        AttrDef("src_rank", "int", 0, "the sending rank"),
        AttrDef("sr_tag", "int", 0, "pairs a send with its receive"),
    ),
    exactness="exact (a copy)",
)

HCOM_OPS = (
    HCOM_ALL_REDUCE,
    HCOM_ALL_GATHER,
    HCOM_BROADCAST,
    HCOM_REDUCE,
    HCOM_REDUCE_SCATTER,
    HCOM_SEND,
    HCOM_RECEIVE,
)

"""Build the HCCL collectives of a multi-rank job: groups, keys, devices, then ``Hcom*`` nodes.

TensorFlow matches a collective across ranks by ``(group_key, instance_key)``, and the group
leader caches what it learnt about each key **for the life of the process** (shape, dtype,
kind). So keys are never counted per graph: an Estimator's eval graph would reuse the train
graph's numbers for other tensors ("Shape mismatch in the collective instance"). An instance
key is a hash of what every rank knows alike about the op: its kind, its graph-unique node name,
static shape, dtype and group; a collision inside one graph is re-salted the same way on every
rank. Ranks must therefore build the same collectives under the same names, as data-parallel
scripts do.

Group keys: 1 is the world group, ``create_group`` groups hash their name and members into
``[2**20, 2**30)``, and a point-to-point pair ``(src, dst)`` is ``2 + src * size + dst``.

A collective of a shape that is not static is built ``dynamic``: at run time the ranks agree on
its shape and use a key per shape (:mod:`tf2npu.graph.npu_ops.hcom`), so it may change shape
between runs.

Every node is pinned to this rank's device (a session forgetting the server then fails at once
instead of hanging); a rank's runs wait at most ``HCCL_EXEC_TIMEOUT`` for the other ranks
(:func:`~tf2npu.runtime.distributed.world.distributed_config`).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tf2npu.config import cluster as cluster_lib
from tf2npu.config.cluster import Cluster
from tf2npu.config.env import ADDRESSES_VARIABLE
from tf2npu.errors import Tf2NpuError
from tf2npu.graph.npu_ops.hcom import KEY_BASE, KEY_SPAN
from tf2npu.runtime.distributed.world import WORLD_GROUP_KEY, device_of

__all__ = [
    "FUSED_ATTR",
    "Group",
    "all_gather",
    "all_reduce",
    "all_reduce_fused",
    "all_reduce_gradient",
    "broadcast",
    "group_key",
    "hcom_type",
    "instance_key",
    "receive",
    "reduce",
    "reduce_scatter",
    "require_cluster",
    "send",
]

#: Private attr on a fused ``HcomAllReduce``: how many tensors it carries.
FUSED_ATTR = "_tf2npu_fused"

_GROUP_BASE, _GROUP_SPAN = 1 << 20, (1 << 30) - (1 << 20)


@dataclass(frozen=True)
class Group:
    """A group as TensorFlow's collectives see it."""

    name: str
    members: tuple[int, ...]
    """World ranks, in group-rank order."""
    key: int
    rank: int
    """This process's rank in the group."""

    @property
    def size(self) -> int:
        return len(self.members)


def require_cluster(what: str) -> Cluster:
    """The job's cluster, when ``what`` (a collective) can reach the other ranks.

    Raises:
        Tf2NpuError: more than one rank, but not started by ``tf2npu run --ranks``.
    """
    cluster = cluster_lib.current()
    if cluster.distributed and not cluster.addresses:
        raise Tf2NpuError(
            f"{what}: RANK_SIZE={cluster.size} asks for {cluster.size} ranks, but this process "
            f"was not started by the launcher ({ADDRESSES_VARIABLE} is unset), so it cannot "
            f"reach the other ranks; run tf2npu run --ranks {cluster.size} SCRIPT, or set "
            "RANK_SIZE=1 for one rank"
        )
    return cluster


def group_key(name: str, members: Sequence[int], world_group: str) -> int:
    """TensorFlow's group key of HCCL group ``name`` (the same on every rank)."""
    if name == world_group:
        return WORLD_GROUP_KEY
    digest = hashlib.sha256(repr((name, tuple(members))).encode()).digest()
    return _GROUP_BASE + int.from_bytes(digest[:8], "big") % _GROUP_SPAN


_USED: weakref.WeakKeyDictionary[Any, set[int]] = weakref.WeakKeyDictionary()


def instance_key(graph: Any, *parts: object) -> int:
    """A key from ``parts`` that no other collective of ``graph`` has (see the module doc)."""
    used = _USED.setdefault(graph, set())
    salt = 0
    while True:
        digest = hashlib.sha256(repr((parts, salt)).encode()).digest()
        key = KEY_BASE + int.from_bytes(digest[:8], "big") % KEY_SPAN
        if key not in used:  # the same salts on every rank give the same key
            used.add(key)
            return key
        salt += 1


def _emit(op_type: str, inputs: Sequence[Any], attrs: Mapping[str, Any], group: Group,
          cluster: Cluster, kind: str = "") -> Any:  # fmt: skip
    """One ``op_type`` node on this rank's device with its group and instance keys."""
    import tensorflow as tf

    from tf2npu.graph.npu_ops.client import emit

    graph = tf.compat.v1.get_default_graph()
    name = graph.unique_name(op_type, mark_as_used=False)
    first = tf.convert_to_tensor(inputs[-1])
    key = instance_key(graph, kind or op_type, name, str(first.shape), first.dtype.name, group.key)
    keys = {"group_size": group.size, "group_key": group.key, "instance_key": key,
            "dynamic": not first.shape.is_fully_defined()}  # fmt: skip
    with tf.device(device_of(cluster.rank)):
        return emit(op_type, list(inputs), {**attrs, **keys}, name=op_type)[0]


def all_reduce(tensor: Any, reduction: str, group: Group, cluster: Cluster) -> Any:
    """``HcomAllReduce``: ``reduction`` of ``tensor`` over ``group``, on every member."""
    return _emit("HcomAllReduce", [tensor], {"reduction": reduction}, group, cluster)


def all_reduce_fused(tensors: Sequence[Any], reduction: str, group: Group,
                     cluster: Cluster) -> list[Any]:  # fmt: skip
    """One ``HcomAllReduce`` for several tensors of one dtype and static shapes (HCCL's
    gradient fusion): flattened and concatenated, reduced, split and reshaped back.

    Elementwise the same reduction as one all-reduce per tensor, so every rank still gets
    bit-identical values; with two ranks they are also the per-tensor values bit for bit.
    The node carries ``_tf2npu_fused`` = the number of tensors, for the run summary.
    """
    import tensorflow as tf
    from tensorflow.core.framework.attr_value_pb2 import AttrValue

    values = [tf.convert_to_tensor(t) for t in tensors]
    shapes = [v.shape for v in values]
    if len(values) < 2 or not all(s.is_fully_defined() for s in shapes):
        raise ValueError(
            "all_reduce_fused: give two or more tensors of static shape, got "
            + ", ".join(str(shape) for shape in shapes)
        )
    with tf.name_scope("HcomFusion"):
        flat = tf.concat([tf.reshape(v, [-1]) for v in values], 0)
        reduced = all_reduce(flat, reduction, group, cluster)
        reduced.op._set_attr(FUSED_ATTR, AttrValue(i=len(values)))
        parts = tf.split(reduced, [s.num_elements() for s in shapes], 0)
        return [tf.reshape(part, shape) for part, shape in zip(parts, shapes, strict=True)]


def all_gather(tensor: Any, group: Group, cluster: Cluster) -> Any:
    """``HcomAllGather``: the members' tensors concatenated on dimension 0, in rank order."""
    return _emit("HcomAllGather", [tensor], {}, group, cluster)


def broadcast(tensor: Any, root_rank: int, group: Group, cluster: Cluster) -> Any:
    """``HcomBroadcast``: member ``root_rank``'s tensor on every member."""
    attrs = {"root_rank": root_rank, "rank": group.rank}
    return _emit("HcomBroadcast", [tensor], attrs, group, cluster)


def reduce(tensor: Any, reduction: str, root_rank: int, group: Group, cluster: Cluster) -> Any:
    """``HcomReduce``: the reduction, computed on every member (the root's is the device's)."""
    attrs = {"reduction": reduction, "root_rank": root_rank}
    return _emit("HcomReduce", [tensor], attrs, group, cluster)


def reduce_scatter(tensor: Any, reduction: str, group: Group, cluster: Cluster) -> Any:
    """``HcomReduceScatter``: slice ``group.rank`` of dimension 0 of the reduction."""
    import tensorflow as tf

    value = tf.convert_to_tensor(tensor)
    rows = value.shape[0] if value.shape.rank else None
    if rows is not None and rows % group.size:
        raise ValueError(
            f"hccl_ops.reduce_scatter: dimension 0 of {value.shape} does not divide by the "
            f"{group.size} ranks of group {group.name!r}; pad it to a multiple of {group.size}"
        )
    attrs = {"reduction": reduction, "rank": group.rank}
    return _emit("HcomReduceScatter", [value], attrs, group, cluster)


def _pair(src: int, dst: int, cluster: Cluster) -> Group:
    """The two-member group of world ranks ``src`` -> ``dst`` (the sender is member 0)."""
    members = (src, dst)
    return Group(
        f"pair:{src}:{dst}", members, 2 + src * cluster.size + dst, members.index(cluster.rank)
    )


def _pair_key(src: int, dst: int, sr_tag: int, shape: object, dtype: object) -> int:
    """Both sides derive it from what they both know (not from node names, which differ)."""
    digest = hashlib.sha256(repr(("p2p", src, dst, sr_tag, shape, dtype)).encode()).digest()
    return KEY_BASE + int.from_bytes(digest[:8], "big") % KEY_SPAN


def send(tensor: Any, sr_tag: int, dest_rank: int, group: Group, cluster: Cluster) -> Any:
    """``HcomSend`` to group rank ``dest_rank``; returns the op."""
    import tensorflow as tf

    from tf2npu.graph.npu_ops.client import emit

    value = tf.convert_to_tensor(tensor)
    if not value.shape.is_fully_defined():
        raise ValueError(f"hccl_ops.send: the tensor's shape {value.shape} must be static")
    src, dst = cluster.rank, group.members[dest_rank]
    pair = _pair(src, dst, cluster)
    key = _pair_key(src, dst, sr_tag, value.shape.as_list(), value.dtype.name)
    attrs = {"dest_rank": dest_rank, "sr_tag": sr_tag, "group_size": 2, "group_key": pair.key,
             "instance_key": key}  # fmt: skip
    with tf.device(device_of(cluster.rank)):
        return emit("HcomSend", [value], attrs, name="HcomSend")[0].op


def receive(shape: Sequence[int], dtype: Any, sr_tag: int, src_rank: int, group: Group,
            cluster: Cluster) -> Any:  # fmt: skip
    """``HcomReceive`` of the tensor group rank ``src_rank`` sends with ``sr_tag``."""
    import tensorflow as tf

    from tf2npu.graph.npu_ops.client import emit

    dtype = tf.dtypes.as_dtype(dtype)
    dims = [int(d) for d in shape]
    src, dst = group.members[src_rank], cluster.rank
    pair = _pair(src, dst, cluster)
    key = _pair_key(src, dst, sr_tag, dims, dtype.name)
    attrs = {"src_rank": src_rank, "sr_tag": sr_tag, "group_size": 2, "group_key": pair.key,
             "instance_key": key}  # fmt: skip
    with tf.device(device_of(cluster.rank)):
        inputs = [tf.constant(dims, tf.int32), tf.zeros([0], dtype)]
        out = emit("HcomReceive", inputs, attrs, name="HcomReceive")[0]
    out.set_shape(dims)
    return out


def all_reduce_gradient(op: Any, grad: Any) -> Any:
    """The gradient of an ``HcomAllReduce`` node: all-reduce-sum of ``grad`` over its group."""
    import tensorflow as tf

    from tf2npu.graph.npu_ops.client import NPU_ATTR_PREFIX, emit

    reduction = op.get_attr(NPU_ATTR_PREFIX + "reduction")
    if reduction != b"sum":
        raise LookupError(
            f"HcomAllReduce {op.name!r} with reduction={reduction.decode()!r} has no gradient "
            "(only sum has one); stop the gradient before it (tf.stop_gradient)"
        )
    cluster = require_cluster("the gradient of HcomAllReduce")
    grad = tf.convert_to_tensor(grad)
    size = op.get_attr(NPU_ATTR_PREFIX + "group_size")
    group = op.get_attr(NPU_ATTR_PREFIX + "group_key")
    key = instance_key(grad.graph, "grad", op.name, str(grad.shape), grad.dtype.name, group)
    attrs = {"reduction": "sum", "group_size": size, "group_key": group, "instance_key": key,
             "dynamic": not grad.shape.is_fully_defined()}  # fmt: skip
    with tf.device(device_of(cluster.rank)):
        return emit("HcomAllReduce", [grad], attrs, name="HcomAllReduce")[0]


def _provide_gradients() -> None:
    from tf2npu.graph.npu_ops.client import provide_gradient

    provide_gradient("HcomAllReduce", all_reduce_gradient)


_provide_gradients()


def hcom_type(op: Any) -> str | None:
    """The HCCL op type ``op`` stands for (client ``_npu_op`` attr, or a lowered call's name)."""
    try:
        value = op.get_attr("_npu_op")
    except (ValueError, AttributeError):
        value = None
    if isinstance(value, bytes) and value.startswith(b"Hcom"):
        return value.decode()
    op_type = str(getattr(op, "type", ""))
    return op_type.partition("_")[0] if op_type.startswith("Hcom") else None

"""Build the HCCL collectives of a multi-rank job: ``Hcom*`` nodes on this rank's device.

``npu_bridge.hccl.hccl_ops`` and the distributed optimizers call these with a
:class:`~tf2npu.client.groups.Group` and the job's cluster; each builds one ``Hcom*`` node
(:func:`~tf2npu.client.ops.emit`) with the group and instance keys every rank gives it alike
(:mod:`tf2npu.client.groups`). The nodes run on TensorFlow's collective runtime among the
group's ranks (:mod:`tf2npu.runtime.distributed.world`). An ``HcomAllReduce``'s gradient, the
all-reduce of the incoming gradient over the same group, is a field of the op's
:class:`~tf2npu.client.ops.ClientOp`, like every NPU op's.

A collective of a shape that is not static is built ``dynamic``: at run time the ranks agree on
its shape and use a key per shape (:mod:`tf2npu.graph.npu_ops.hcom`), so it may change shape
between runs.

Every node is pinned to this rank's device (a session forgetting the server then fails at once
instead of hanging); a rank's runs wait at most ``HCCL_EXEC_TIMEOUT`` for the other ranks
(:func:`~tf2npu.runtime.distributed.world.distributed_config`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tf2npu.client.groups import Group, instance_key, pair_group, pair_key
from tf2npu.client.ops import emit
from tf2npu.config.cluster import Cluster, cpu_device
from tf2npu.graph.npu_ops.nodes import NPU_OP_ATTR

__all__ = [
    "FUSED_ATTR",
    "all_gather",
    "all_reduce",
    "all_reduce_fused",
    "broadcast",
    "hcom_type",
    "receive",
    "reduce",
    "reduce_scatter",
    "send",
]

#: Private attr on a fused ``HcomAllReduce``: how many tensors it carries.
FUSED_ATTR = "_tf2npu_fused"


def _emit(op_type: str, inputs: Sequence[Any], attrs: Mapping[str, Any], group: Group,
          cluster: Cluster, kind: str = "") -> Any:  # fmt: skip
    """One ``op_type`` node on this rank's device with its group and instance keys."""
    import tensorflow as tf

    graph = tf.compat.v1.get_default_graph()
    name = graph.unique_name(op_type, mark_as_used=False)
    first = tf.convert_to_tensor(inputs[-1])
    key = instance_key(graph, kind or op_type, name, str(first.shape), first.dtype.name, group.key)
    keys = {"group_size": group.size, "group_key": group.key, "instance_key": key,
            "dynamic": not first.shape.is_fully_defined()}  # fmt: skip
    with tf.device(cpu_device(cluster.rank)):
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


def send(tensor: Any, sr_tag: int, dest_rank: int, group: Group, cluster: Cluster) -> Any:
    """``HcomSend`` to group rank ``dest_rank``; returns the op."""
    import tensorflow as tf

    value = tf.convert_to_tensor(tensor)
    if not value.shape.is_fully_defined():
        raise ValueError(f"hccl_ops.send: the tensor's shape {value.shape} must be static")
    src, dst = cluster.rank, group.members[dest_rank]
    pair = pair_group(src, dst, cluster)
    key = pair_key(src, dst, sr_tag, value.shape.as_list(), value.dtype.name)
    attrs = {"dest_rank": dest_rank, "sr_tag": sr_tag, "group_size": 2, "group_key": pair.key,
             "instance_key": key}  # fmt: skip
    with tf.device(cpu_device(cluster.rank)):
        return emit("HcomSend", [value], attrs, name="HcomSend")[0].op


def receive(shape: Sequence[int], dtype: Any, sr_tag: int, src_rank: int, group: Group,
            cluster: Cluster) -> Any:  # fmt: skip
    """``HcomReceive`` of the tensor group rank ``src_rank`` sends with ``sr_tag``."""
    import tensorflow as tf

    dtype = tf.dtypes.as_dtype(dtype)
    dims = [int(d) for d in shape]
    src, dst = group.members[src_rank], cluster.rank
    pair = pair_group(src, dst, cluster)
    key = pair_key(src, dst, sr_tag, dims, dtype.name)
    attrs = {"src_rank": src_rank, "sr_tag": sr_tag, "group_size": 2, "group_key": pair.key,
             "instance_key": key}  # fmt: skip
    with tf.device(cpu_device(cluster.rank)):
        inputs = [tf.constant(dims, tf.int32), tf.zeros([0], dtype)]
        out = emit("HcomReceive", inputs, attrs, name="HcomReceive")[0]
    out.set_shape(dims)
    return out


def hcom_type(op: Any) -> str | None:
    """The HCCL op type ``op`` stands for (client ``_npu_op`` attr, or a lowered call's name)."""
    try:
        value = op.get_attr(NPU_OP_ATTR)
    except (ValueError, AttributeError):
        value = None
    if isinstance(value, bytes) and value.startswith(b"Hcom"):
        return value.decode()
    op_type = str(getattr(op, "type", ""))
    return op_type.partition("_")[0] if op_type.startswith("Hcom") else None

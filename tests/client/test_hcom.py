"""client.hcom: the Hcom* nodes each HCCL op builds, and the gradient of an all-reduce."""

from __future__ import annotations

import pytest
import tensorflow as tf

from npu_bridge.hccl import hccl_ops, manage
from tf2npu.client import hcom
from tf2npu.errors import Tf2NpuError
from tf2npu.graph.npu_ops.nodes import NPU_ATTR_PREFIX, NPU_OP_ATTR

DEVICE = "/job:worker/replica:0/task:1/device:CPU:0"


def _attr(op: tf.Operation, name: str) -> object:
    return op.get_attr(NPU_ATTR_PREFIX + name)


@pytest.mark.usefixtures("rank_one_of_two")
def test_allreduce_builds_an_hcom_node_on_this_rank() -> None:
    with tf.Graph().as_default():
        out = hccl_ops.allreduce(tf.constant([1.0, 2.0]), "max")
        op = out.op
        assert op.name == "HcomAllReduce"
        assert op.get_attr(NPU_OP_ATTR) == b"HcomAllReduce"
        assert op.device == DEVICE
        assert _attr(op, "reduction") == b"max"
        assert (_attr(op, "group_size"), _attr(op, "group_key"), _attr(op, "dynamic")) == (
            2,
            1,
            False,
        )
        again = hccl_ops.allreduce(tf.constant([1.0, 2.0]), "max")
        assert again.op.name == "HcomAllReduce_1"
        assert _attr(again.op, "instance_key") != _attr(op, "instance_key")


@pytest.mark.usefixtures("rank_one_of_two")
def test_every_op_type() -> None:
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        built = {
            "HcomAllGather": hccl_ops.allgather(x, 2),
            "HcomBroadcast": hccl_ops.broadcast([x], 0)[0],
            "HcomReduce": hccl_ops.reduce(x, "sum", 0),
            "HcomReduceScatter": hccl_ops.reduce_scatter(x, "sum", 2),
            "HcomReceive": hccl_ops.receive([2], tf.float32, 5, 0),
            "HcomSend": hccl_ops.send(x, 5, 0),
        }
        for name, item in built.items():
            op = item if isinstance(item, tf.Operation) else item.op
            assert op.get_attr(NPU_OP_ATTR) == name.encode()
        assert _attr(built["HcomBroadcast"].op, "rank") == 1
        assert _attr(built["HcomReduceScatter"].op, "rank") == 1
        send, receive = built["HcomSend"], built["HcomReceive"].op
        # Both sides of a pair derive the same group (src * size + dst + 2) from what they know.
        assert (_attr(send, "group_key"), _attr(receive, "group_key")) == (2 + 1 * 2 + 0, 2 + 0 + 1)
        assert built["HcomReceive"].shape.as_list() == [2]


@pytest.mark.usefixtures("rank_one_of_two")
def test_argument_errors() -> None:
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"dimension 0 of \(3,\) does not divide by the 2"):
            hccl_ops.reduce_scatter(tf.constant([1.0, 2.0, 3.0]), "sum", 2)
        with pytest.raises(ValueError, match="send: dest_rank=1 is this rank"):
            hccl_ops.send(tf.constant([1.0]), 0, 1)
        with pytest.raises(ValueError, match=r"the tensor's shape \(None,\) must be static"):
            hccl_ops.send(tf.compat.v1.placeholder(tf.float32, [None]), 0, 0)


@pytest.mark.usefixtures("rank_one_of_two")
def test_subgroup_of_one_is_the_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manage, "_groups", {})
    manage.create_group("solo", 1, [1])
    with tf.Graph().as_default():
        out = hccl_ops.allreduce(tf.constant([1.0]), "sum", group="solo")
        assert out.op.type == "Identity"


@pytest.mark.usefixtures("rank_one_of_two")
def test_allreduce_gradient_is_an_allreduce_of_the_gradient() -> None:
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        (grad,) = tf.gradients(tf.reduce_sum(hccl_ops.allreduce(x * x, "sum")), [x])
        reduced = [
            op
            for op in grad.graph.get_operations()
            if op.name.startswith("gradients/") and op.node_def.attr[NPU_OP_ATTR].s
        ]
        assert [op.get_attr(NPU_OP_ATTR) for op in reduced] == [b"HcomAllReduce"]
        with pytest.raises(LookupError, match="reduction='max' has no gradient"):
            tf.gradients(hccl_ops.allreduce(x, "max"), [x])


@pytest.mark.usefixtures("rank_one_of_two")
def test_without_the_launcher_collectives_are_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TF2NPU_CLUSTER")
    with tf.Graph().as_default(), pytest.raises(Tf2NpuError) as info:
        hccl_ops.allgather(tf.constant([1.0]), 2)
    assert str(info.value) == (
        "hccl_ops.allgather: RANK_SIZE=2 asks for 2 ranks, but this process was not started by "
        "the launcher (TF2NPU_CLUSTER is unset), so it cannot reach the other ranks; run tf2npu "
        "run --ranks 2 SCRIPT, or set RANK_SIZE=1 for one rank"
    )


@pytest.mark.usefixtures("rank_one_of_two")
def test_a_fused_all_reduce_needs_several_static_tensors() -> None:
    found = manage._collective_group(manage.WORLD_GROUP, "test")
    assert found is not None
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"two or more tensors of static shape, got \(2,\)$"):
            hcom.all_reduce_fused([tf.ones([2])], "sum", *found)
        unknown = tf.compat.v1.placeholder(tf.float32, [None])
        with pytest.raises(ValueError, match="static shape"):
            hcom.all_reduce_fused([tf.ones([2]), unknown], "sum", *found)

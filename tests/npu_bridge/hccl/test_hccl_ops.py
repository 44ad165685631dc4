"""hccl_ops: exact identities with one rank, argument checks, the multi-rank error."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.hccl import hccl_ops  # noqa: E402
from tf2npu.errors import Tf2NpuError  # noqa: E402

pytestmark = pytest.mark.tf

X = np.array([[1.5, -2.25e-38], [np.pi, 7e30]], dtype=np.float32)


@pytest.fixture(autouse=True)
def _one_rank(monkeypatch):
    monkeypatch.delenv("RANK_SIZE", raising=False)
    monkeypatch.delenv("CM_WORKER_SIZE", raising=False)


def _run(fetch):
    with tf.compat.v1.Session() as sess:
        return sess.run(fetch)


@pytest.mark.parametrize("reduction", ["sum", "prod", "max", "min"])
def test_allreduce_is_bit_exact_identity(reduction) -> None:
    with tf.Graph().as_default():
        y = hccl_ops.allreduce(tf.constant(X), reduction)
        assert y.op.type == "Identity"
        assert y.op.name == "HcomAllReduce"
        assert _run(y).tobytes() == X.tobytes()


def test_allreduce_with_rank_size_1_set_explicitly(monkeypatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "1")
    with tf.Graph().as_default():
        assert _run(hccl_ops.allreduce(tf.constant(X), "sum")).tobytes() == X.tobytes()


def test_allreduce_gradient_is_the_incoming_gradient() -> None:
    with tf.Graph().as_default():
        x = tf.constant(X)
        y = hccl_ops.allreduce(x, "sum")
        upstream = tf.constant(X * 3)
        (grad,) = tf.gradients(y, x, grad_ys=upstream)
        assert _run(grad).tobytes() == (X * 3).tobytes()


def test_allreduce_with_two_ranks_raises(monkeypatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "2")
    with tf.Graph().as_default(), pytest.raises(Tf2NpuError) as info:
        hccl_ops.allreduce(tf.constant(X), "sum")
    assert str(info.value) == (
        "hccl_ops.allreduce: RANK_SIZE=2 asks for 2 ranks, but this process was not started by "
        "the launcher (TF2NPU_CLUSTER is unset), so it cannot reach the other ranks; run tf2npu "
        "run --ranks 2 SCRIPT, or set RANK_SIZE=1 for one rank"
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"reduction": "mean"}, ValueError, "reduction='mean' is not supported; use one of: sum"),
        ({"reduction": "sum", "fusion": 3}, ValueError, "fusion=3; use one of"),
        ({"reduction": "sum", "fusion_id": "a"}, TypeError, "fusion_id='a' must be an int"),
        ({"reduction": "sum", "group": "g"}, ValueError, "group 'g' does not exist"),
        ({"reduction": "sum", "group": 1}, TypeError, "group=1 must be a string"),
    ],
)
def test_allreduce_argument_checks(kwargs, error, message) -> None:
    with tf.Graph().as_default(), pytest.raises(error, match=message):
        hccl_ops.allreduce(tf.constant(X), **kwargs)


def test_allgather_returns_the_tensor() -> None:
    with tf.Graph().as_default():
        y = hccl_ops.allgather(tf.constant(X), 1)
        assert y.op.name == "HcomAllGather"
        assert _run(y).tobytes() == X.tobytes()
        with pytest.raises(ValueError, match="rank_size=2 but group 'hccl_world_group' has 1"):
            hccl_ops.allgather(tf.constant(X), 2)


def test_broadcast_takes_and_returns_lists() -> None:
    with tf.Graph().as_default():
        a, b = tf.constant(X), tf.constant([1, 2])
        out = hccl_ops.broadcast([a, b], root_rank=0)
        assert isinstance(out, list)
        assert [t.op.name for t in out] == ["HcomBroadcast", "HcomBroadcast_1"]
        va, vb = _run(out)
        assert va.tobytes() == X.tobytes()
        assert vb.tolist() == [1, 2]
        with pytest.raises(TypeError, match="must be a list of tensors"):
            hccl_ops.broadcast(a, root_rank=0)
        with pytest.raises(ValueError, match="root_rank=1 is not a rank of group"):
            hccl_ops.broadcast([a], root_rank=1)


def test_reduce_and_reduce_scatter_are_identities() -> None:
    with tf.Graph().as_default():
        r = hccl_ops.reduce(tf.constant(X), "max", root_rank=0)
        s = hccl_ops.reduce_scatter(tf.constant(X), "sum", rank_size=1)
        assert (r.op.name, s.op.name) == ("HcomReduce", "HcomReduceScatter")
        vr, vs = _run([r, s])
        assert vr.tobytes() == X.tobytes() == vs.tobytes()


@pytest.mark.parametrize(
    "call",
    [
        lambda: hccl_ops.allgather(tf.constant(X), 4),
        lambda: hccl_ops.broadcast([tf.constant(X)], 0),
        lambda: hccl_ops.reduce(tf.constant(X), "sum", 0),
        lambda: hccl_ops.reduce_scatter(tf.constant(X), "sum", 4),
    ],
)
def test_every_collective_refuses_more_ranks(monkeypatch, call) -> None:
    monkeypatch.setenv("RANK_SIZE", "4")
    with tf.Graph().as_default(), pytest.raises(Tf2NpuError, match="RANK_SIZE=4 asks for 4"):
        call()


def test_send_and_receive_need_a_second_rank() -> None:
    with tf.Graph().as_default():
        with pytest.raises(Tf2NpuError, match="send: dest_rank=1 needs a second rank"):
            hccl_ops.send(tf.constant(X), sr_tag=0, dest_rank=1)
        with pytest.raises(Tf2NpuError, match="receive: src_rank=1 needs a second rank"):
            hccl_ops.receive([2, 2], tf.float32, sr_tag=0, src_rank=1)


# -- RDMA over this process's shared memory ------------------------------------------------------


def test_remote_write_then_read_round_trips_through_shared_memory(monkeypatch) -> None:
    from npu_bridge import _shared_memory
    from npu_bridge.estimator.npu import npu_plugin
    from npu_bridge.npu_cpu.npu_cpu_ops import embeddingrankid

    monkeypatch.setattr(_shared_memory, "_BUFFERS", {})
    address, size = npu_plugin.malloc_shared_memory("table", [4, 2], 1)  # DT_FLOAT
    with tf.Graph().as_default():
        where = tf.constant([[0, address, size]], tf.uint64)
        write = hccl_ops.remote_write(
            embeddingrankid(where, [2, 0], row_memory=8), [[1.0, 2.0], [3.0, 4.0]], tf.float32
        )
        read = hccl_ops.remote_read(embeddingrankid(where, [0, 1, 2], row_memory=8), tf.float32)
        assert read.dtype == tf.float32 and read.shape.as_list() == [3, None]
        with tf.compat.v1.Session() as sess:
            sess.run(write)
            value = sess.run(read)
    assert value.tolist() == [[3.0, 4.0], [0.0, 0.0], [1.0, 2.0]]


def test_remote_read_of_an_unknown_address_fails_when_run(monkeypatch) -> None:
    from npu_bridge import _shared_memory

    monkeypatch.setattr(_shared_memory, "_BUFFERS", {})
    with tf.Graph().as_default():
        read = hccl_ops.remote_read(tf.constant([[0, 64, 8]], tf.uint64), tf.float32)
        with (
            tf.compat.v1.Session() as sess,
            pytest.raises(
                tf.errors.InvalidArgumentError, match="in no buffer made by malloc_shared_memory"
            ),
        ):
            sess.run(read)


def test_rdma_cache_ops_raise() -> None:
    with pytest.raises(Tf2NpuError, match=r"hccl_ops.remote_ref_read: reads or writes the device"):
        hccl_ops.remote_ref_read([[0, 0, 0]], None, 0)
    with pytest.raises(Tf2NpuError, match=r"hccl_ops.remote_scatter_write"):
        hccl_ops.remote_scatter_write([[0, 0, 0]], None, 0)

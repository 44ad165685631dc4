"""distributed.instrument: sessions on the rank's server, fatal collective failures, collectives
and bytes per run, the last training loss."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import tensorflow as tf

from npu_bridge.hccl import hccl_ops
from tf2npu.runtime.distributed.instrument import (
    CollectiveCounter,
    DistributedInstrument,
    collectives_reached,
)
from tf2npu.runtime.instruments import RunSignature, SessionInfo


@pytest.mark.usefixtures("rank_one_of_two")
def test_counts_what_a_run_reaches() -> None:
    with tf.Graph().as_default() as graph:
        x = tf.constant(np.ones([4, 8], np.float32))
        summed = hccl_ops.allreduce(x, "sum")
        gathered = hccl_ops.allgather(tf.constant([1, 2], tf.int64), 2)
        with tf.control_dependencies([gathered]):
            loss = tf.reduce_sum(summed)
        unrelated = hccl_ops.allreduce(x, "max")
        received = hccl_ops.receive([3], tf.float32, 1, 0)
    assert collectives_reached([loss.op]) == [("HcomAllGather", 16, 1), ("HcomAllReduce", 128, 1)]
    assert collectives_reached([unrelated.op, unrelated.op]) == [("HcomAllReduce", 128, 1)]
    assert collectives_reached([received.op]) == [("HcomReceive", 12, 1)]  # what it gets

    counter = CollectiveCounter(1, 2)
    run = RunSignature(SessionInfo(1, False, graph), (), (loss,), step=True)
    hook = counter.plan(run)
    assert hook is not None
    hook.after_run([np.float32(0.5)], [])
    hook.after_run([np.float32(0.25)], [])
    assert counter.summary() == {
        "rank": 1,
        "size": 2,
        "loss": 0.25,
        "collectives": {
            "HcomAllGather": {"count": 2, "bytes": 32, "tensors": 2},
            "HcomAllReduce": {"count": 2, "bytes": 256, "tensors": 2},
        },
    }
    plain = RunSignature(SessionInfo(1, False, graph), (), (x,), step=False)
    assert counter.plan(plain) is None


@pytest.mark.usefixtures("rank_one_of_two")
def test_a_fused_all_reduce_counts_the_tensors_it_carries() -> None:
    from npu_bridge.hccl.manage import _collective_group
    from tf2npu.client.hcom import all_reduce_fused

    with tf.Graph().as_default():
        parts = [tf.ones([2, 3]), tf.ones([5])]
        found = _collective_group("hccl_world_group", "test")
        assert found is not None
        out = all_reduce_fused(parts, "sum", *found)
        assert [t.shape.as_list() for t in out] == [[2, 3], [5]]
        assert collectives_reached([t.op for t in out]) == [("HcomAllReduce", 44, 2)]


@dataclass
class _OpError(Exception):
    message: str
    op: object = None


class _Server:
    target = "grpc://127.0.0.1:7"


@pytest.mark.usefixtures("rank_one_of_two")
def test_the_distributed_instrument_moves_local_sessions_onto_the_ranks_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tf2npu.config import cluster as cluster_lib
    from tf2npu.config.options import NpuOptions
    from tf2npu.runtime.distributed import world

    monkeypatch.setattr(
        world, "current_world", lambda: world.World(cluster_lib.current(), _Server())
    )
    instrument = DistributedInstrument()
    npu = SessionInfo(1, True, None, NpuOptions.from_values({"hccl_timeout": 40}))
    target, config = instrument.session_target(npu, "", None)
    assert (target, config.operation_timeout_in_ms) == ("grpc://127.0.0.1:7", 40_000)
    target, config = instrument.session_target(SessionInfo(2, False, None), "", None)
    assert (target, config.operation_timeout_in_ms) == (
        "grpc://127.0.0.1:7",
        30_000,
    )  # HCCL_EXEC_TIMEOUT
    assert config.device_filters == ["/job:worker/task:1"]
    assert instrument.session_target(npu, "grpc://elsewhere:1", None) == (
        "grpc://elsewhere:1",
        None,
    )


@pytest.mark.usefixtures("rank_one_of_two")
def test_the_distributed_instrument_makes_a_failed_collective_fatal_naming_where_it_waited() -> (
    None
):
    from tf2npu.runtime.distributed.errors import CollectiveError

    with tf.Graph().as_default() as graph:
        summed = hccl_ops.allreduce(tf.constant(np.ones([4], np.float32)), "sum")
        loss = tf.reduce_sum(summed, name="loss")
    run = RunSignature(SessionInfo(1, False, graph), (), (loss,), step=True)
    instrument = DistributedInstrument()
    timed_out = instrument.on_run_error(run, _OpError("Operation timed out"))
    assert isinstance(timed_out, CollectiveError)
    assert str(timed_out).startswith(
        f"rank 1: a run in collective HcomAllReduce '{summed.op.name}' did not finish within "
        "HCCL_EXEC_TIMEOUT=30 s"
    )
    assert instrument.on_run_error(run, _OpError("Matrix size-incompatible")) is None

"""distributed.world: the config a rank's sessions get, and when there is no world."""

from __future__ import annotations

import pytest
from tensorflow.core.protobuf import config_pb2

from tf2npu.config.cluster import Cluster
from tf2npu.runtime.distributed import world


def test_distributed_config_copies_and_adds_the_cluster_fields() -> None:
    user = config_pb2.ConfigProto(use_per_session_threads=True, allow_soft_placement=True)
    user.session_inter_op_thread_pool.add().num_threads = 2
    user.device_filters.append("/job:localhost")
    config = world.distributed_config(Cluster(rank=1, size=2), user)
    assert config.experimental.collective_group_leader == "/job:worker/replica:0/task:0"
    assert list(config.device_filters) == ["/job:worker/task:1"]
    # A server (master) session rejects per-session thread pools.
    assert not config.use_per_session_threads and not config.session_inter_op_thread_pool
    assert config.allow_soft_placement and config.isolate_session_state
    assert user.use_per_session_threads and list(user.device_filters) == ["/job:localhost"]


def test_each_run_waits_at_most_the_exec_timeout_the_shorter_one_winning() -> None:
    cluster = Cluster(rank=0, size=2, exec_timeout=30.0)
    assert world.distributed_config(cluster).operation_timeout_in_ms == 30_000
    # An NPU session's hccl_timeout replaces HCCL_EXEC_TIMEOUT.
    assert world.distributed_config(cluster, None, 45).operation_timeout_in_ms == 45_000
    # A shorter run timeout of the script's own is kept; a longer one is cut.
    own = config_pb2.ConfigProto(operation_timeout_in_ms=5_000)
    assert world.distributed_config(cluster, own).operation_timeout_in_ms == 5_000
    own.operation_timeout_in_ms = 90_000
    assert world.distributed_config(cluster, own).operation_timeout_in_ms == 30_000


def test_distributed_config_turns_tfg_off_unless_its_code_motion_is_asked_for() -> None:
    # TFG leaves `tfg.legacy_call` on function-call nodes; every worker then logs an error.
    user = config_pb2.ConfigProto()
    config = world.distributed_config(Cluster(rank=0, size=2), user)
    assert config.graph_options.rewrite_options.disable_tfg_optimizer
    assert not user.graph_options.rewrite_options.disable_tfg_optimizer
    rewrite = user.graph_options.rewrite_options
    rewrite.experimental_conditional_code_motion = rewrite.ON
    config = world.distributed_config(Cluster(rank=0, size=2), user)
    assert not config.graph_options.rewrite_options.disable_tfg_optimizer


def test_device_of() -> None:
    assert world.device_of(3) == "/job:worker/replica:0/task:3/device:CPU:0"


@pytest.mark.usefixtures("one_rank")
def test_one_rank_keeps_sessions_as_they_are() -> None:
    config = config_pb2.ConfigProto()
    assert world.current_world() is None
    assert world.session_args("", config) == ("", config)


@pytest.mark.usefixtures("rank_one_of_two")
def test_a_given_target_is_kept_and_no_launcher_means_no_world(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert world.session_args("grpc://elsewhere:1", None) == ("grpc://elsewhere:1", None)
    monkeypatch.delenv("TF2NPU_CLUSTER")
    assert world.current_world() is None  # sessions stay local; collectives are the error


def test_a_rank_waits_for_the_leader_then_gives_up_naming_it() -> None:
    import socket

    from tf2npu.errors import Tf2NpuError

    with socket.socket() as listener:  # the leader's port, listening: returns at once
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        up = Cluster(rank=1, size=2, addresses=(f"127.0.0.1:{port}", "127.0.0.1:1"))
        world._wait_for_leader(up)
    down = Cluster(rank=1, size=2, addresses=(f"127.0.0.1:{port}", "127.0.0.1:1"),
                   connect_timeout=0.2)  # fmt: skip
    with pytest.raises(Tf2NpuError, match=rf"rank 1: rank 0 \(the collective group leader, "
                       rf"127.0.0.1:{port}\) did not start within HCCL_CONNECT_TIMEOUT=0.2 s"):  # fmt: skip
        world._wait_for_leader(down)

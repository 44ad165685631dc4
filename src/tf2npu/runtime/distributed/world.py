"""This rank's membership of the job: its gRPC server and the sessions that run on it.

Every rank of a ``tf2npu run --ranks N`` job runs one ``tf.distribute.Server`` (job
``worker``, task = ``RANK_ID``) on the address the launcher gave it. Sessions whose target is
local are moved onto that server, with the config that lets TensorFlow's collective executor
reach the other ranks: the collective group leader (rank 0), and a device filter so each rank's
master sees only its own task. Collective ops (:mod:`tf2npu.graph.npu_ops.hcom`) placed on
:attr:`World.device` then run ring all-reduce and friends over gRPC between the ranks.

Facts this relies on (measured in the distributed spike, see ``docs/distributed.md``):

* the **server's** config must name the group leader; the sessions' alone hangs;
* a server session is a master session, which rejects per-session thread pools;
* any collective error aborts the process's collective executor for good, so it is fatal.

With one rank nothing here runs: sessions keep their target and config untouched.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from tf2npu.client.groups import WORLD_GROUP_KEY
from tf2npu.config import cluster as cluster_lib
from tf2npu.config.cluster import JOB, Cluster, cpu_device
from tf2npu.errors import Tf2NpuError

__all__ = ["JOB", "World", "current_world", "session_args"]


@dataclass(frozen=True, eq=False)
class World:
    """The started server of this rank, and what sessions need to use it."""

    cluster: Cluster
    server: Any
    """The ``tf.distribute.Server``."""

    @property
    def rank(self) -> int:
        return self.cluster.rank

    @property
    def size(self) -> int:
        return self.cluster.size

    @property
    def target(self) -> str:
        """The session target of this rank's server (``grpc://127.0.0.1:PORT``)."""
        return str(self.server.target)

    @property
    def device(self) -> str:
        """Where this rank's collective ops run."""
        return device_of(self.cluster.rank)

    def session_config(self, config: Any = None, exec_timeout: float | None = None) -> Any:
        """A copy of ``config`` (or a new ``ConfigProto``) set up for this rank's server."""
        return distributed_config(self.cluster, config, exec_timeout)


def device_of(rank: int) -> str:
    """The CPU device of rank ``rank`` (collective ops are pinned there)."""
    return cpu_device(rank)


def distributed_config(cluster: Cluster, config: Any = None, exec_timeout: float | None = None
                       ) -> Any:  # fmt: skip
    """``config`` copied, with the collective group leader and this rank's device filter.

    The per-session thread pool fields are dropped: a server session rejects them
    ("Distributed session does not support session thread pool options"). Session state is
    isolated, so that two sessions never share variables (as two local sessions never do).

    Every run of the session ends after ``exec_timeout`` seconds (the session's
    ``hccl_timeout``; default ``HCCL_EXEC_TIMEOUT``), or the config's own
    ``operation_timeout_in_ms`` when that is shorter: this is how long a rank waits for the
    others. On the device the timeout bounds each collective's wait; here it bounds the run,
    since TensorFlow's per-op collective timeout costs two threads per execution that live for
    the whole timeout (see :mod:`tf2npu.graph.npu_ops.hcom`). A step slower than the timeout
    therefore fails too: raise ``HCCL_EXEC_TIMEOUT`` for such steps.
    """
    from tensorflow.core.protobuf import config_pb2

    copy = config_pb2.ConfigProto()
    if config is not None:
        copy.CopyFrom(config)
    copy.experimental.collective_group_leader = f"/job:{JOB}/replica:0/task:0"
    del copy.device_filters[:]
    copy.device_filters.append(f"/job:{JOB}/task:{cluster.rank}")
    copy.use_per_session_threads = False
    del copy.session_inter_op_thread_pool[:]
    # Variables live in the server's resource containers, shared by every session on it and
    # kept after a session closes: a second graph's variable of the same name would be the
    # first graph's. Each session gets its own, as a local session does.
    copy.isolate_session_state = True
    seconds = exec_timeout if exec_timeout else cluster.exec_timeout
    if seconds > 0:
        limit = int(seconds * 1000)
        own = copy.operation_timeout_in_ms
        copy.operation_timeout_in_ms = min(own, limit) if own > 0 else limit
    _without_tfg(copy.graph_options.rewrite_options)
    return copy


def _without_tfg(rewrite: Any) -> None:
    """Turn grappler's TFG optimizer off unless the config asks for its code motion.

    TFG marks a node that calls a function by its op name (how materialized NPU ops, the Hcom*
    ones included, are called) with ``tfg.legacy_call`` and leaves that attr in the graph it
    hands back; each worker then logs "NodeDef mentions attribute tfg.legacy_call which is not
    in the op definition" for every such node. The attr is ignored, but the message alarms
    users. TFG is where grappler does conditional code motion (moving ops into the branch that
    uses them), which does not change what is computed: examples/tf1/horovod_style.py on two
    ranks gives the same losses with and without it.
    """
    from tensorflow.core.protobuf import rewriter_config_pb2

    if rewrite.experimental_conditional_code_motion != rewriter_config_pb2.RewriterConfig.ON:
        rewrite.disable_tfg_optimizer = True


_lock = threading.Lock()
_worlds: dict[tuple[str, ...], World] = {}


def current_world() -> World | None:
    """This rank's world (its server started on first use); None with one rank.

    None too when ``RANK_SIZE`` > 1 but the process was not started by ``tf2npu run --ranks``
    (no address for the other ranks): its sessions stay local, and building a collective is
    the error (:func:`~tf2npu.client.groups.require_cluster`), so a script
    that only reads its rank to shard data still runs.

    Raises:
        Tf2NpuError: the ranks did not meet within ``HCCL_CONNECT_TIMEOUT``, or disagree on the
            job size.
    """
    cluster = cluster_lib.current()
    if not cluster.distributed or not cluster.addresses:
        return None
    with _lock:
        world = _worlds.get(cluster.addresses)
        if world is None:
            world = _worlds[cluster.addresses] = _start(cluster)
    return world


def session_args(target: str, config: Any, exec_timeout: float | None = None
                 ) -> tuple[str, Any]:  # fmt: skip
    """The target and config a session made with ``target``/``config`` really uses.

    A local target (``""``) in a multi-rank job becomes this rank's server, with
    :func:`distributed_config` (``exec_timeout``: an NPU session's ``hccl_timeout``); any other
    target, and every session of a one-rank job, is kept.
    """
    if target:
        return target, config
    world = current_world()
    if world is None:
        return target, config
    return world.target, world.session_config(config, exec_timeout)


def _start(cluster: Cluster) -> World:
    import tensorflow as tf

    spec = tf.train.ClusterSpec({JOB: list(cluster.addresses)})
    server = tf.distribute.Server(
        spec,
        job_name=JOB,
        task_index=cluster.rank,
        protocol="grpc",
        config=distributed_config(cluster),  # the server's config is the one that counts
        start=True,
    )
    world = World(cluster, server)
    if cluster.rank != 0:
        _wait_for_leader(cluster)
    _barrier(world)
    return world


def _wait_for_leader(cluster: Cluster, poll: float = 0.05) -> None:
    """Wait until rank 0 (the collective group leader) accepts connections.

    A rank whose first collective runs before the leader's server is up gets TensorFlow's
    ``GetStepSequence ... UNAVAILABLE ... Retrying`` errors on stderr, and that retry loop has
    no timeout at all (the op and run timeouts do not cover it). Waiting here keeps the log
    clean and gives the wait the ``HCCL_CONNECT_TIMEOUT`` it lacks.

    Raises:
        Tf2NpuError: rank 0 did not listen within ``HCCL_CONNECT_TIMEOUT``.
    """
    import socket
    import time

    host, _, port = cluster.addresses[0].rpartition(":")
    deadline = time.monotonic() + cluster.connect_timeout
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=1.0):
                return
        except OSError:
            if time.monotonic() >= deadline:
                raise Tf2NpuError(
                    f"rank {cluster.rank}: rank 0 (the collective group leader, "
                    f"{cluster.addresses[0]}) did not start within HCCL_CONNECT_TIMEOUT="
                    f"{cluster.connect_timeout:g} s; see rank 0's output for why, or raise "
                    "HCCL_CONNECT_TIMEOUT when its start-up is slow"
                ) from None
            time.sleep(poll)


def _barrier(world: World) -> None:
    """Wait (up to ``HCCL_CONNECT_TIMEOUT``) until every rank's server is up, and check that
    they agree on the job size: an all-reduce of ``[1, RANK_SIZE]`` must give ``[N, N*N]``."""
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.ops import collective_ops

    from tf2npu.runtime.distributed.errors import collective_failure
    from tf2npu.runtime.stock import stock_session

    size = world.size
    graph = tf.Graph()
    with graph.as_default(), tf.device(world.device):
        total = collective_ops.all_reduce_v2(
            tf.constant([1, size], tf.int32),
            group_size=size,
            group_key=WORLD_GROUP_KEY,
            instance_key=1,
            merge_op="Add",
            final_op="Id",
            timeout=world.cluster.connect_timeout,
            name="HcomBarrier",
        )
    config = world.session_config(exec_timeout=world.cluster.connect_timeout)
    session = stock_session(world.target, graph, config)
    try:
        got = session.run(total)
    except tf.errors.OpError as err:
        raise collective_failure(err, "HcomBarrier", "HcomBarrier", world.cluster) from None
    finally:
        session.close()
    if not np.array_equal(got, [size, size * size]):
        raise Tf2NpuError(
            f"rank {world.rank}: the ranks disagree on the job size (this rank has "
            f"RANK_SIZE={size}, the start-up all-reduce gave {got.tolist()}); start every rank "
            "with the same RANK_SIZE"
        )

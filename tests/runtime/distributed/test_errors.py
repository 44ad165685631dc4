"""distributed.errors: TensorFlow's collective errors as what happened, to whom, where."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tf2npu.config.cluster import Cluster
from tf2npu.runtime.distributed.errors import (
    CollectiveError,
    collective_failure,
    fatal_failure,
    is_collective_failure,
)

CLUSTER = Cluster(rank=0, size=2, exec_timeout=5.0, connect_timeout=120.0)
DEAD = """Graph execution error:

From /job:worker/replica:0/task:0:
Collective ops is aborted by: Connection reset by peer
The error could be from a previous operation. Restart your program to reset.
\t [[{{node CollectiveReduceV2}}]]
\t [[Distributed_Allreduce/HcomAllReduce_1]]
Executing non-communication op <Distributed_Allreduce/HcomAllReduce_1> originally returned"""


@dataclass
class FakeOpError(Exception):
    message: str
    op: object = None


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        (DEAD, "another rank died or cannot be reached"),
        (
            DEAD.replace("Connection reset by peer", "Collective has timed out during execution."),
            "another rank did not reach it within 5 s (HCCL_EXEC_TIMEOUT)",
        ),
        (
            DEAD.replace("Connection reset by peer", "Shape mismatch in the collective instance 7"),
            "the ranks gave tensors of different shapes; every rank must pass the same shape",
        ),
        (
            DEAD.replace("Connection reset by peer", "x"),
            "an earlier collective of this rank failed",
        ),
        (  # a dynamic collective's shape agreement; "Socket closed" later in the text loses
            DEAD.replace(
                "Connection reset by peer",
                "assertion failed: [the ranks passed tensors of different shapes to one "
                "collective] [Condition x == y did not hold element-wise:] [x "
                "(CollectiveGatherV2:0) = ] [[3 2][4 2]] [y (Tile:0) = ] [[3 2][3 2]] Socket closed",
            ),
            "the ranks gave tensors of different shapes ([[3 2][4 2]], one row per rank); every "
            "rank must pass the same shape",
        ),
    ],
)
def test_cause_and_node(text: str, cause: str) -> None:
    error = collective_failure(FakeOpError(text), None, None, CLUSTER)
    assert isinstance(error, CollectiveError) and error.exit_code == 1
    first = text.splitlines()[3]
    assert str(error) == (
        "rank 0: collective HcomAllReduce 'Distributed_Allreduce/HcomAllReduce_1' failed: "
        f"{cause} (FakeOpError: {first})"
    )


def test_a_run_outliving_its_timeout_is_a_rank_not_reaching_a_collective() -> None:
    err = FakeOpError("Graph execution error:\n\nOperation timed out.")
    assert is_collective_failure(err)
    assert str(collective_failure(err, None, None, CLUSTER)) == (
        "rank 0: a run did not finish within HCCL_EXEC_TIMEOUT=5 s (or the session's "
        "hccl_timeout): another rank did not reach the collectives of this step, or the step "
        "itself is slower than that; raise HCCL_EXEC_TIMEOUT for slow steps"
    )


def test_barrier_timeout_names_the_connect_timeout() -> None:
    error = collective_failure(
        FakeOpError("Collective has timed out waiting for other workers."),
        "HcomBarrier",
        "HcomBarrier",
        CLUSTER,
    )
    assert "did not reach it within 120 s (HCCL_CONNECT_TIMEOUT)" in str(error)


def test_fatal_only_for_collectives_in_a_multi_rank_job(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "1")
    assert fatal_failure(FakeOpError(DEAD)) is None
    monkeypatch.setenv("RANK_SIZE", "2")
    monkeypatch.setenv("RANK_ID", "1")
    assert not is_collective_failure(FakeOpError("Matrix size-incompatible"))
    assert fatal_failure(FakeOpError("Matrix size-incompatible")) is None
    assert str(fatal_failure(FakeOpError(DEAD))).startswith("rank 1: collective HcomAllReduce")

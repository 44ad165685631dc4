"""A rank's environment without a running job: emission and config need no server."""

from __future__ import annotations

import pytest

_VARIABLES = (
    "RANK_SIZE",
    "CM_WORKER_SIZE",
    "RANK_ID",
    "POD_NAME",
    "TF2NPU_CLUSTER",
    "HCCL_EXEC_TIMEOUT",
    "HCCL_CONNECT_TIMEOUT",
    "RANK_TABLE_FILE",
)


@pytest.fixture
def rank_one_of_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process believes it is rank 1 of a two-rank job started by the launcher."""
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RANK_SIZE", "2")
    monkeypatch.setenv("RANK_ID", "1")
    monkeypatch.setenv("TF2NPU_CLUSTER", "127.0.0.1:1,127.0.0.1:2")
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "30")


@pytest.fixture
def one_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)

"""hccl.manage.api: CANN's module path for the rank helpers, answering for one process."""

from __future__ import annotations

import pytest

from npu_bridge.hccl import manage


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for name in ("RANK_SIZE", "CM_WORKER_SIZE", "RANK_ID", "POD_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(manage, "_groups", {})


def test_the_import_forms_of_hand_migrated_scripts() -> None:
    from hccl.manage.api import (
        create_group,
        get_local_rank_id,
        get_local_rank_size,
        get_rank_id,
        get_rank_size,
    )

    assert (get_rank_size(), get_rank_id(), get_local_rank_id(), get_local_rank_size()) == (
        1,
        0,
        0,
        1,
    )
    assert create_group is manage.create_group


def test_values_follow_the_environment(monkeypatch) -> None:
    from hccl.manage import api

    monkeypatch.setenv("RANK_SIZE", "4")
    monkeypatch.setenv("RANK_ID", "2")
    assert (api.get_rank_size(), api.get_rank_id()) == (4, 2)
    api.create_group("pair", 2, [2, 3])
    assert api.get_rank_size("pair") == 2
    assert api.get_rank_id("pair") == 0
    assert api.get_world_rank_from_group_rank("pair", 1) == 3


def test_errors_are_npu_bridges() -> None:
    from hccl.manage.api import get_rank_size

    with pytest.raises(ValueError, match="group 'nope' does not exist"):
        get_rank_size("nope")

"""hccl.split.api: split strategies are validated and become the split the optimizers fuse by."""

from __future__ import annotations

import pytest

from npu_bridge.hccl import manage


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv("RANK_SIZE", raising=False)
    monkeypatch.setattr(manage, "_split_strategies", {})


def test_split_by_idx_and_size_as_scripts_call_them() -> None:
    from hccl.split.api import set_split_strategy_by_idx, set_split_strategy_by_size

    set_split_strategy_by_idx([20, 100, 159])
    assert manage.split_strategy().describe() == (
        "by index [20, 100, 159] (set_split_strategy_by_idx)"
    )
    set_split_strategy_by_size([60, 20, 20])
    assert manage.split_strategy().describe() == (
        "by size [60, 20, 20] (set_split_strategy_by_size)"
    )


def test_bad_strategies_are_refused() -> None:
    from hccl.split.api import set_split_strategy_by_idx, set_split_strategy_by_size

    with pytest.raises(ValueError, match=r"idxList=\[100, 20\] must be increasing"):
        set_split_strategy_by_idx([100, 20])
    with pytest.raises(ValueError, match=r"dataSizeList=\[50, 20\] must be positive percentages"):
        set_split_strategy_by_size([50, 20])

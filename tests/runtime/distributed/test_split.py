"""distributed.split: the arithmetic of HCCL's gradient split strategy."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tf2npu.runtime.distributed.split import DEFAULT_SPLIT, SplitStrategy


def test_default_is_by_size_96_54_then_3_46() -> None:
    assert DEFAULT_SPLIT.describe() == "by size [96.54, 3.46] (default)"
    # 30 equal gradients: 28 of them are 93.3% of the bytes, 29 are 96.67% > 96.54%.
    assert DEFAULT_SPLIT.segments([100] * 30) == [range(0, 28), range(28, 30)]
    # A gradient that crosses the cut belongs to the next segment: one segment here.
    assert DEFAULT_SPLIT.segments([1000, 10, 10, 10]) == [range(0, 4)]


def test_by_size_cuts_where_the_shares_are_reached() -> None:
    strategy = SplitStrategy.by_size([60, 20, 20], "set_split_strategy_by_size")
    assert strategy.segments([10] * 10) == [range(0, 6), range(6, 8), range(8, 10)]
    # Gradient 0 alone is 70% > 60%: the first segment stays empty, 0-1 reach 80%.
    assert strategy.segments([70, 10, 10, 10]) == [range(0, 2), range(2, 4)]
    assert strategy.segments([0, 0]) == [range(0, 2)]  # no bytes at all: one segment
    assert strategy.segments([]) == []


def test_by_index_cuts_after_each_index() -> None:
    strategy = SplitStrategy.by_index([20, 100, 159], "set_split_strategy_by_idx")
    assert strategy.describe() == "by index [20, 100, 159] (set_split_strategy_by_idx)"
    assert strategy.segments([1] * 160) == [range(0, 21), range(21, 101), range(101, 160)]
    # Gradients past the last index form one more segment; indices past the end cut nothing.
    assert strategy.segments([1] * 200)[-1] == range(160, 200)
    assert strategy.segments([1] * 50) == [range(0, 21), range(21, 50)]


def test_plan_splits_segments_by_kind_and_sends_unknown_sizes_alone() -> None:
    strategy = SplitStrategy.by_index([3])
    plan = strategy.plan([4, None, 8, 4, 4, 4], ["f32", "f32", "f16", "f32", "f32", "f32"])
    assert plan == [(0, 3), (1,), (2,), (4, 5)]


def test_plan_needs_one_kind_per_size() -> None:
    with pytest.raises(ValueError, match="3 sizes but 2 kinds"):
        DEFAULT_SPLIT.plan([1, 2, 3], ["f", "f"])


@given(
    st.lists(st.integers(0, 10_000), max_size=40),
    st.lists(st.floats(0.5, 50), min_size=1, max_size=5),
)
@pytest.mark.slow
def test_every_gradient_travels_exactly_once_in_order(
    sizes: list[int], shares: list[float]
) -> None:
    total = sum(shares)
    strategy = SplitStrategy.by_size([s * 100 / total for s in shares])
    segments = strategy.segments(sizes)
    assert [i for segment in segments for i in segment] == list(range(len(sizes)))
    assert len(segments) <= len(shares)
    kinds = [size % 3 for size in sizes]
    plan = strategy.plan(sizes, kinds)
    assert sorted(i for group in plan for i in group) == list(range(len(sizes)))
    assert all(len({kinds[i] for i in group}) == 1 for group in plan)

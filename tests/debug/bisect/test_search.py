"""Trial configurations, the state file, and the two searches, on literal cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tf2npu.debug.bisect.search import STATE_FILE, Config, Store, halve, log2_runs, minimal_set
from tf2npu.errors import UsageError


def test_config_keys_ignore_order_and_repeats() -> None:
    a = Config(fusion_off=(("b", ""), ("a", "x")), black_list=("Exp", "Exp"))
    b = Config(fusion_off=(("a", "x"), ("b", "")), black_list=("Exp",))
    assert a.key() == b.key()
    assert a.key() == (
        '{"black_list":["Exp"],"fusion_off":[["a","x"],["b",""]],"keep_fp32":[],'
        '"precision_mode":""}'
    )
    assert Config(rerun=True).key() != Config().key()
    assert Config.from_json(json.loads(a.key())).key() == a.key()


@pytest.mark.parametrize(
    ("candidates", "culprit", "trials"),
    [
        ("a", "a", 0),
        ("ab", "a", 1),
        ("ab", "b", 1),
        ("abcde", "a", 3),
        ("abcde", "e", 2),
        ("abcdefgh", "h", 3),
        ("abcdefghi", "i", 3),
        ("abcdefghi", "a", 4),
    ],
)
def test_halve_finds_the_culprit_in_at_most_ceil_log2_trials(
    candidates: str, culprit: str, trials: int
) -> None:
    asked: list[str] = []

    def fixed_without(part: list[str]) -> bool:
        asked.append("".join(part))
        return culprit in part

    assert halve(candidates, fixed_without) == culprit
    assert len(asked) == trials <= log2_runs(len(candidates))


def test_halve_switches_the_first_half_off_first() -> None:
    asked: list[str] = []

    def fixed_without(part: list[str]) -> bool:
        asked.append("".join(part))
        return False

    assert halve("abcde", fixed_without) == "e"
    assert asked == ["abc", "d"]


def test_halve_needs_a_candidate() -> None:
    with pytest.raises(ValueError, match="at least one"):
        halve([], lambda part: True)


def test_log2_runs() -> None:
    assert [log2_runs(n) for n in (0, 1, 2, 3, 4, 5, 8, 9)] == [0, 0, 1, 2, 2, 3, 3, 4]


@pytest.mark.parametrize(
    ("needed", "expected"),
    [
        ({"c"}, ("c",)),
        ({"a"}, ("a",)),
        ({"f"}, ("f",)),
        ({"b", "e"}, ("b", "e")),
        ({"a", "b", "c", "d", "e", "f"}, tuple("abcdef")),
    ],
)
def test_minimal_set_returns_exactly_the_needed_ones(
    needed: set[str], expected: tuple[str, ...]
) -> None:
    asked: list[str] = []

    def restores(part: list[str]) -> bool:
        asked.append("".join(part))
        return needed <= set(part)

    assert minimal_set("abcdef", restores) == expected
    # ceil(log2(6 + 1)) per round; one round per needed candidate, one to confirm
    assert len(asked) <= (len(expected) + 1) * 3


def test_minimal_set_checks_the_whole_set_when_asked() -> None:
    with pytest.raises(ValueError, match="does not restore"):
        minimal_set("abc", lambda part: False, known_good=False)


def test_a_configuration_in_another_order_is_the_same_trial(tmp_path: Path) -> None:
    from tf2npu.debug.bisect.search import Bench
    from tf2npu.testing.fake_lab import FakeLab

    bench = Bench(FakeLab(), Store(tmp_path, {"kind": "fusion"}))
    first = bench.trial("a", Config(fusion_off=(("r", "x"), ("r", "y"))))
    assert bench.trial("b", Config(fusion_off=(("r", "y"), ("r", "x")))) is first
    assert bench.runs == 1


def test_store_refuses_an_unreadable_state(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_text("{not json")
    with pytest.raises(UsageError, match=rf"holds a {STATE_FILE} that cannot be read .*delete it"):
        Store(tmp_path, {"kind": "fusion"})

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath

from tf2npu.migrate.report.plain import option_text, to_plain


class Colour(enum.Enum):
    RED = "red"


@dataclass(frozen=True)
class Scale:
    mode: str
    value: float


def test_scalars_pass_through() -> None:
    assert [to_plain(v) for v in (None, True, 3, 1.5, "x")] == [None, True, 3, 1.5, "x"]


def test_enums_paths_and_dataclasses() -> None:
    assert to_plain(Colour.RED) == "red"
    assert to_plain(PurePosixPath("a/b.py")) == "a/b.py"
    assert to_plain(PureWindowsPath("a\\b.py")) == "a/b.py"
    assert to_plain(Scale("fixed", 1024.0)) == {"mode": "fixed", "value": 1024.0}


def test_containers_are_deterministic() -> None:
    assert to_plain({"b": (1, 2), "a": {3, 1, 2}, 7: frozenset({"y", "x"})}) == {
        "7": ["x", "y"],
        "a": [1, 2, 3],
        "b": [1, 2],
    }
    assert list(to_plain({"b": 1, "a": 2})) == ["a", "b"]  # type: ignore[arg-type]


def test_other_objects_become_their_str() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    assert to_plain([Odd()]) == ["odd"]


def test_option_text() -> None:
    assert option_text("auto") == "auto"
    assert option_text(None) == "null"
    assert option_text(False) == "false"
    assert option_text(Colour.RED) == "red"
    assert option_text(["a", "ü"]) == '["a", "ü"]'

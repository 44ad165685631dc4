"""Unknown-name messages: the suggestion first, the list short."""

from __future__ import annotations

import pytest

from tf2npu.config.names import unknown

MANY = [f"option_{i:02d}" for i in range(30)] + ["precision_mode"]


@pytest.mark.parametrize(
    ("name", "known", "message"),
    [
        ("fusoin", ["fusion", "placement"],
         "unknown pass 'fusoin'; did you mean 'fusion'? The valid ones are: fusion, placement"),
        ("zzz", ["fusion", "placement"],
         "unknown pass 'zzz'; the valid ones are: fusion, placement"),
        ("precison_mode", MANY,
         "unknown pass 'precison_mode'; did you mean 'precision_mode'? (31 valid names; "
         "docs/x.md lists them all)"),
        ("option_1", MANY,
         "unknown pass 'option_1'; did you mean 'option_21'? Close names: option_21, "
         "option_19, option_18 (31 valid names; docs/x.md lists them all)"),
        ("zzz", MANY,
         "unknown pass 'zzz'; the 31 valid names include option_00, option_01, option_02; "
         "docs/x.md lists them all"),
    ],
)  # fmt: skip
def test_suggestion_first_and_a_short_list(name: str, known: list[str], message: str) -> None:
    error = unknown("pass", name, known, listed_in="docs/x.md")
    assert str(error) == message
    assert error.known == tuple(sorted(known))  # the full list stays on the error for code

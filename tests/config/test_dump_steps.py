"""``dump_step``: the adapter's three rules and messages, and which steps a value selects."""

import pytest

from tf2npu.config.dump_steps import MAX_SETS, DumpSteps, check
from tf2npu.errors import ConfigError

SYNTAX = (
    "the adapter says \"dump_step string style is error, correct example:'0|5|10|50-100'\"; "
    'give step numbers N or ranges N-M joined by "|", without spaces, e.g. "0|5|10-20"'
)


@pytest.mark.parametrize("value", ["", "0", "0|5|10-20", "007", "3-4", "|".join(["1"] * 100)])
def test_valid_values(value):
    assert check(value) is None


@pytest.mark.parametrize(
    "value", ["0;5", "0|", "|0", "0||5", " 0", "0 |5", "1-2-3", "-1", "a", "٣"]
)
def test_bad_syntax_quotes_the_adapter(value):
    assert check(value) == SYNTAX


def test_more_than_100_items_quotes_the_adapter():
    assert check("|".join(["1"] * (MAX_SETS + 1))) == (
        'the adapter says "dump_step only support dump <= 100 sets of data"; give at most 100 '
        'items (there are 101); merge neighbouring steps into ranges, e.g. "10-20" for '
        "10|11|...|20"
    )


@pytest.mark.parametrize(
    ("value", "instead"), [("1|9-3", "in '9-3' the first step must be smaller than the second; "
                                     "write '3-9' instead"),
                           ("5-5", "in '5-5' the first step must be smaller than the second; "
                                   "write '5' instead")],
)  # fmt: skip
def test_range_must_increase_quotes_the_adapter(value, instead):
    assert check(value) == (
        'the adapter says "in range steps, the first step is >= second step, correct '
        f"example:'0|5|10-20'\"; {instead}"
    )


def test_a_non_string_is_refused():
    assert check(5) == 'give a string of steps, e.g. "0|5|10-20"'


@pytest.mark.parametrize(
    ("text", "ranges", "dumped"),
    [
        ("", (), list(range(25))),
        ("0|5|10-12", ((0, 0), (5, 5), (10, 12)), [0, 5, 10, 11, 12]),
        ("20-22|3", ((20, 22), (3, 3)), [3, 20, 21, 22]),
    ],
)
def test_parse_selects_the_named_steps(text, ranges, dumped):
    steps = DumpSteps.parse(text)
    assert steps.ranges == ranges
    assert steps.every_step is (text == "")
    assert [step for step in range(25) if steps.includes(step)] == dumped


def test_parse_raises_a_config_error_naming_option_and_value():
    with pytest.raises(ConfigError) as err:
        DumpSteps.parse("9-3")
    assert str(err.value).startswith("option 'dump_step' = '9-3' is not valid; the adapter says ")

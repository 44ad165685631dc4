"""modify_mixlist files with seed 004's semantics."""

import json

import pytest

from tf2npu.config.mixlist import Mixlist
from tf2npu.config.precision import PrecisionClass as P
from tf2npu.errors import ConfigError, UnknownNameError

BASE = {"A": P.ALLOW, "Conv2D": P.ALLOW, "Xlog1py": P.DENY, "MatMul": P.GRAY, "Reshape": P.CLEAR}


def apply(data):
    return Mixlist.parse(json.dumps(data)).apply(BASE)


def test_black_to_add_moves_a_white_op_to_black():
    assert apply({"black-list": {"to-add": ["A"]}})["A"] is P.DENY


def test_black_to_add_with_white_to_remove_ends_black():
    data = {"black-list": {"to-add": ["A"]}, "white-list": {"to-remove": ["A"]}}
    assert apply(data)["A"] is P.DENY
    reordered = {"white-list": {"to-remove": ["A"]}, "black-list": {"to-add": ["A"]}}
    assert apply(reordered)["A"] is P.DENY


def test_removal_only_lands_in_gray():
    assert apply({"white-list": {"to-remove": ["A"]}})["A"] is P.GRAY
    assert apply({"black-list": {"to-remove": ["Xlog1py"]}})["Xlog1py"] is P.GRAY


def test_removing_an_op_that_is_not_in_that_list_changes_nothing():
    assert apply({"white-list": {"to-remove": ["Xlog1py", "Unknown"]}}) == BASE


def test_the_seed_example():
    data = {
        "black-list": {"to-remove": ["Xlog1py"], "to-add": ["Matmul", "Cast"]},
        "white-list": {"to-remove": ["Conv2D"], "to-add": ["Bias"]},
    }
    assert apply(data) == {
        "A": P.ALLOW,
        "Conv2D": P.GRAY,
        "Xlog1py": P.GRAY,
        "MatMul": P.GRAY,
        "Reshape": P.CLEAR,
        "Matmul": P.DENY,
        "Cast": P.DENY,
        "Bias": P.ALLOW,
    }


def test_gray_to_add_and_clear_ops():
    result = apply({"gray-list": {"to-add": ["A"]}, "white-list": {"to-add": ["Reshape"]}})
    assert (result["A"], result["Reshape"]) == (P.GRAY, P.ALLOW)


def test_apply_leaves_base_untouched_and_empty_file_is_identity():
    apply({"black-list": {"to-add": ["A"]}})
    assert BASE["A"] is P.ALLOW
    assert Mixlist.parse("{}").apply(BASE) == BASE


def test_load_from_file(tmp_path):
    path = tmp_path / "ops_info.json"
    path.write_text('{"black-list": {"to-add": ["A"]}}', encoding="utf-8")
    assert Mixlist.load(path) == Mixlist(added=(("A", P.DENY),))


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match=r"^modify_mixlist = '.*nope.json': cannot read the file"):
        Mixlist.load(tmp_path / "nope.json")


def test_bad_json_gives_line_and_column():
    with pytest.raises(ConfigError) as err:
        Mixlist.parse('{\n  "black-list": {"to-add": ["A",]}\n}')
    assert "modify_mixlist: invalid JSON at line 2, column 33: Expecting value" in str(err.value)


def test_comments_copied_from_the_vendor_example_get_a_hint():
    with pytest.raises(ConfigError, match=r"line 2, column 3.*JSON has no comments, remove the //"):
        Mixlist.parse('{\n  // black\n  "black-list": {}\n}')


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        ([], ConfigError, "modify_mixlist: expected a JSON object like"),
        (
            {"blacklist": {}},
            UnknownNameError,
            "unknown mixlist list 'blacklist'; did you mean 'black-list'? The valid ones are: black-list, gray-list, white-list",
        ),
        ({"black-list": []}, ConfigError, "black-list must be an object like"),
        ({"black-list": {"add": ["A"]}}, UnknownNameError, "unknown black-list action 'add'"),
        (
            {"white-list": {"to-add": "A"}},
            ConfigError,
            "white-list.to-add must be a list of op types, e.g. [\"MatMul\"], got 'A'",
        ),
        (
            {"white-list": {"to-add": [1]}},
            ConfigError,
            "white-list.to-add holds 1; op types are non-empty strings",
        ),
        ({"white-list": {"to-add": [""]}}, ConfigError, "white-list.to-add holds ''"),
        (
            {"white-list": {"to-add": ["A"], "to-remove": ["A"]}},
            ConfigError,
            "op 'A' is in both white-list.to-add and white-list.to-remove; keep it in one of them",
        ),
        (
            {"white-list": {"to-add": ["A"]}, "black-list": {"to-add": ["A"]}},
            ConfigError,
            "op 'A' is added to two lists (white-list and black-list); add it to one list only",
        ),
        (
            {"gray-list": {"to-remove": ["A"]}},
            ConfigError,
            "gray-list.to-remove ['A'] has no meaning",
        ),
    ],
)
def test_errors(data, error, message):
    with pytest.raises(error) as err:
        Mixlist.parse(json.dumps(data))
    assert message in str(err.value)

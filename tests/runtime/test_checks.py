"""A spec's options, the files they name and the run's variables, checked before a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tf2npu.errors import ConfigError
from tf2npu.runtime.checks import check_environment, check_option_files, check_options, check_values


def test_good_options_pass() -> None:
    check_options(("precision_mode=allow_mix_precision", "enable_dump=false"), {})


def test_a_bad_value_is_named_as_the_user_gave_it() -> None:
    with pytest.raises(ConfigError, match=r"^--option precision_mode=fp17: not a valid value; "):
        check_values({"precision_mode": "fp17"})
    with pytest.raises(ConfigError, match=r"^--precision-mode fp17: not a valid value; "):
        check_values({"precision_mode": "fp17"}, {"precision_mode": "--precision-mode"})


def test_an_item_that_is_not_key_value_is_named_with_an_example() -> None:
    with pytest.raises(
        ConfigError, match=r"^--option 'precision_mode': expected KEY=VALUE, e\.g\. "
    ):
        check_options(("precision_mode",), {})


def test_a_missing_switch_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "switch.json"
    with pytest.raises(ConfigError, match=r"switch\.json"):
        check_option_files({"fusion_switch_file": str(missing)})
    check_option_files({"fusion_switch_file": "", "modify_mixlist": None})


def test_a_variable_the_sessions_would_reject_is_named() -> None:
    check_environment({"RANK_SIZE": "2"}, {})
    with pytest.raises(ConfigError, match="RANK_SIZE"):
        check_options((), {"RANK_SIZE": "two"})

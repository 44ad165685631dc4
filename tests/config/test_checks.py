"""Value checks of the option table."""

import pytest

from tf2npu.config import checks


@pytest.mark.parametrize("value", ["", "0", "0,1,7", "12"])
def test_device_list_accepts(value):
    assert checks.device_list(value) is None


@pytest.mark.parametrize("value", ["0, 1", "a", "0,", ",1", 3])
def test_device_list_rejects(value):
    assert checks.device_list(value) == 'give comma-separated device ids without spaces, e.g. "0,1"'


def test_adapter_says_quotes_the_adapter_then_gives_our_fix():
    assert checks.adapter_says("the path d is not directory.", "create it") == (
        'the adapter says "the path d is not directory."; create it'
    )


def test_ranges_and_byte_counts():
    assert checks.at_least(1)(1) is None
    assert checks.at_least(1)(0) == "give an integer >= 1"
    assert checks.between(0, 7)(8) == "give an integer from 0 to 7"
    assert checks.byte_count("1024") is None
    assert checks.byte_count("1G") == 'give a decimal byte count, e.g. "21474836480"'


@pytest.mark.parametrize("value", ["", "RL", "GA", "RL,GA", "GA,RL", "GA|RL"])
def test_tune_modes_accepts_the_forms_scripts_use(value):
    assert checks.tune_modes(value) is None


@pytest.mark.parametrize("value", ["rl", "RL,", "RL,RL", "RL GA", "AOE", 1])
def test_tune_modes_rejects(value):
    assert checks.tune_modes(value) == 'give RL, GA or both joined by "," or "|", e.g. "RL,GA"'

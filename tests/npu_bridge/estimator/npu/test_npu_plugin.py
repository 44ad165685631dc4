"""npu_plugin: resource init validates and records options; sat mode; no RANK_SIZE bug."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu import npu_plugin
from tf2npu.errors import ConfigError

pytestmark = pytest.mark.tf


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv("RANK_SIZE", raising=False)
    monkeypatch.setattr(npu_plugin, "_resource_options", None)
    monkeypatch.setattr(npu_plugin, "_sat_mode", 0)


def test_defaults_record_nothing_explicit_and_unset_rank_size_is_fine() -> None:
    npu_plugin.npu_resource_init()
    options = npu_plugin.resource_options()
    assert options is not None
    assert options.explicit == frozenset()
    assert options.env.rank_size == 1


def test_given_options_are_recorded_with_their_keys() -> None:
    npu_plugin.npu_resource_init(
        enable_profiling=True,
        profiling_options='{"output":"/tmp"}',
        precision_mode="allow_mix_precision",
        op_compiler_cache_mode="force",
        hcom_multi_mode=True,
    )
    options = npu_plugin.resource_options()
    assert options.profiling_mode is True
    assert options.profiling_options == '{"output":"/tmp"}'
    assert options.precision_mode == "allow_mix_precision"
    assert options.get("op_compiler_cache_mode") == "force"
    assert options.no_effect == ("hcom_multi_mode", "op_compiler_cache_mode")


def test_first_initialisation_wins_until_shutdown() -> None:
    npu_plugin.npu_resource_init(precision_mode="force_fp32")
    npu_plugin.npu_resource_init(precision_mode="force_fp16")
    assert npu_plugin.resource_options().precision_mode == "force_fp32"
    npu_plugin.npu_resource_shutdown()
    assert npu_plugin.resource_options() is None
    npu_plugin.npu_resource_init(precision_mode="force_fp16")
    assert npu_plugin.resource_options().precision_mode == "force_fp16"
    npu_plugin.npu_close()
    assert npu_plugin.resource_options() is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"graph_run_mode": "1"}, "'graph_run_mode' = '1' \\(str\\) is not an int"),
        ({"graph_run_mode": True}, "is not an int"),
        ({"precision_mode": "fp8"}, "'precision_mode' = 'fp8' is not valid"),
        ({"enable_exception_dump": 5}, "'enable_exception_dump' = 5 is not valid"),
    ],
)
def test_bad_values_are_config_errors(kwargs, message) -> None:
    with pytest.raises(ConfigError, match=message):
        npu_plugin.npu_resource_init(**kwargs)
    assert npu_plugin.resource_options() is None


def test_sat_mode() -> None:
    assert npu_plugin.is_inf_nan_enabled() is False
    npu_plugin.set_device_sat_mode(1)
    assert npu_plugin.is_inf_nan_enabled() is True
    npu_plugin.set_device_sat_mode(0)
    assert npu_plugin.is_inf_nan_enabled() is False
    with pytest.raises(ValueError, match="mode=2; use 0 \\(saturation\\) or 1"):
        npu_plugin.set_device_sat_mode(2)
    with pytest.raises(TypeError, match="mode='1' \\(str\\) must be an int"):
        npu_plugin.set_device_sat_mode("1")

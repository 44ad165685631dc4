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
    assert options.get("profiling_mode") is True
    assert options.get("profiling_options") == '{"output":"/tmp"}'
    assert options.precision_mode == "allow_mix_precision"
    assert options.get("op_compiler_cache_mode") == "force"
    # nothing reads GE-global options here, not even those a session config would honour
    assert sorted(options.explicit) == [
        "hcom_multi_mode",
        "op_compiler_cache_mode",
        "precision_mode",
        "profiling_mode",
        "profiling_options",
    ]


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


# -- RDMA and shared memory ------------------------------------------------------------------


def test_shared_memory_is_a_real_buffer_found_by_name(monkeypatch) -> None:
    from npu_bridge import _shared_memory, tf_adapter

    monkeypatch.setattr(_shared_memory, "_BUFFERS", {})
    address, size = npu_plugin.malloc_shared_memory("host_params", [5, 3], tf_adapter.DT_FLOAT)
    assert size == 5 * 3 * 4 and address > 0
    assert npu_plugin.get_var_addr_and_size("host_params") == (address, size)


def test_unknown_buffers_and_device_only_functions_raise(monkeypatch) -> None:
    from npu_bridge import _shared_memory
    from tf2npu.errors import Tf2NpuError

    monkeypatch.setattr(_shared_memory, "_BUFFERS", {})
    with pytest.raises(Tf2NpuError, match=r"get_var_addr_and_size\('host_params'\): no host"):
        npu_plugin.get_var_addr_and_size("host_params")
    with pytest.raises(ValueError, match="should be str"):
        npu_plugin.get_var_addr_and_size(3)
    with pytest.raises(ValueError, match="data_type=999 is not a TensorFlow DataType"):
        npu_plugin.malloc_shared_memory("t", [2], 999)
    with pytest.raises(Tf2NpuError, match=r"get_rdma_cache\('rdma_w'\): the RDMA cache"):
        npu_plugin.get_rdma_cache("float32", [8, 4])


def test_rdma_registration_is_checked_and_recorded(monkeypatch) -> None:
    monkeypatch.setattr(npu_plugin, "rdma_requests", {})
    npu_plugin.rdma_remote_init(remote_var_list=[[(0, 4096, 64)]], mem_size=1024)
    npu_plugin.rdma_remote_register([[(0, 4096, 64)]])
    npu_plugin.init_rdma_pool(2048)
    assert npu_plugin.rdma_requests == {
        "rdma_remote_init": {"remote_var_list": [[(0, 4096, 64)]], "mem_size": 1024},
        "rdma_remote_register": {"remote_var_list": [[(0, 4096, 64)]]},
        "init_rdma_pool": {"mem_size": 2048},
    }
    with pytest.raises(ValueError, match="should be tuple or list"):
        npu_plugin.rdma_remote_init(remote_var_list=5, mem_size=1)
    with pytest.raises(ValueError, match=r"1\.5 should be int"):
        npu_plugin.rdma_remote_init(remote_var_list=[], mem_size=1.5)
    with pytest.raises(ValueError, match="mem_size=0 must be an int > 0"):
        npu_plugin.init_rdma_pool(0)

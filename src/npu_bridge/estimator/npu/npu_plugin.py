"""``npu_plugin``: process-wide device initialisation from Python, without the ``NPUInit`` op.

The adapter's :func:`npu_resource_init` initialises the Graph Engine once per process with
"GE-global" options; the first initialisation wins until :func:`npu_resource_shutdown`. None of
those options change what the CPU computes, so here they are type-checked, validated against
tf2npu's option table (:mod:`tf2npu.config`) and recorded as the process's resource options
(the ``no_effect`` names of the recorded :class:`~tf2npu.config.options.NpuOptions` are logged).

The RDMA / shared-memory functions of the host-embedding scripts: :func:`malloc_shared_memory`
really allocates a host buffer (read and written by ``hccl_ops.remote_read`` /
``remote_write``); registering memory for RDMA (:func:`rdma_remote_init`,
:func:`rdma_remote_register`, :func:`init_rdma_pool`) is checked, recorded and reported as having
no effect here; what needs the device (a host variable's address, the RDMA cache) raises.

Unlike the anchor adapter, which does ``int(os.getenv('RANK_SIZE'))`` unguarded and so raises a
``TypeError`` when ``RANK_SIZE`` is unset, an unset ``RANK_SIZE`` means one rank here.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import numpy as np
import tensorflow as tf

from npu_bridge import _shared_memory
from tf2npu.config.options import NpuOptions
from tf2npu.config.sources import from_env, from_run_config
from tf2npu.config.validate import validate
from tf2npu.errors import Tf2NpuError

__all__ = [
    "get_rdma_cache",
    "get_var_addr_and_size",
    "init_rdma_pool",
    "is_inf_nan_enabled",
    "malloc_shared_memory",
    "npu_close",
    "npu_resource_init",
    "npu_resource_shutdown",
    "rdma_remote_init",
    "rdma_remote_register",
    "set_device_sat_mode",
]

#: Options of the current initialisation (None = not initialised).
_resource_options: NpuOptions | None = None
#: 0 = saturation mode (Atlas training default), 1 = INF/NaN mode.
_sat_mode = 0

# npu_resource_init argument -> parameter_map key, where they differ.
_RENAMED = {"enable_profiling": "profiling_mode"}


def npu_resource_init(
    graph_run_mode: int = 1,
    op_debug_level: int | None = 0,
    enable_profiling: bool = False,
    profiling_options: str | None = None,
    auto_tune_mode: str | None = None,
    precision_mode: str | None = None,
    enable_scope_fusion_passes: str | None = None,
    enable_exception_dump: int = 2,
    aoe_mode: str | None = None,
    work_path: str | None = None,
    op_compiler_cache_mode: str | None = None,
    op_compiler_cache_dir: str | None = None,
    debug_dir: str | None = None,
    hcom_multi_mode: bool = False,
    distribute_config: str | None = None,
    aoe_config_file: str | None = None,
    precision_mode_v2: str | None = None,
    export_compile_stat: int = 1,
    aicore_num: str | None = None,
    oo_constant_folding: bool = True,
    input_batch_cpy: bool = False,
    oo_level: str = "O3",
    optimization_switch: str | None = None,
    mstune_mode: str | None = None,
) -> None:
    """Initialise the (emulated) device for the process with these global options.

    Arguments are the latest adapter's (defaults included) plus the anchor's ``mstune_mode``.
    Those that differ from their defaults are validated like ``NpuOptimizer`` options and
    recorded; they have no effect on CPU execution. A second call before
    :func:`npu_resource_shutdown` keeps the first call's options, as the adapter does.

    Raises:
        tf2npu.errors.ConfigError: a value of the wrong type or not allowed.
    """
    global _resource_options
    arguments = dict(locals())  # first statement: exactly the parameters
    given = {k: v for k, v in arguments.items() if v is not None and not _is_default(k, v)}
    values = from_run_config({_RENAMED.get(k, k): v for k, v in given.items()})
    values.pop("enable_data_pre_proc", None)  # added by from_run_config; not an argument here
    env, _ = from_env(os.environ)
    options = NpuOptions.from_values(values, env)
    validate(options)
    if _resource_options is not None:
        tf.compat.v1.logging.warning(
            "npu_resource_init: already initialised; the first call's options stay in force "
            "until npu_resource_shutdown()"
        )
        return
    _resource_options = options
    if options.explicit:
        # Sessions read their own options, never these GE-global ones: every option given here
        # is without effect, even one (profiling_mode) that a session's config would honour.
        tf.compat.v1.logging.info(
            "npu_resource_init: recorded, no effect off the device: %s",
            ", ".join(sorted(options.explicit)),
        )


_DEFAULTS: dict[str, Any] = {
    name: param.default for name, param in inspect.signature(npu_resource_init).parameters.items()
}


def _is_default(name: str, value: object) -> bool:
    # ``True == 1``: a bool given for an int (or the reverse) is not the default.
    default = _DEFAULTS[name]
    return type(value) is type(default) and value == default


def resource_options() -> NpuOptions | None:
    """The options recorded by :func:`npu_resource_init` (None when not initialised)."""
    return _resource_options


def npu_resource_shutdown() -> None:
    """End the process-wide initialisation (a later :func:`npu_resource_init` starts afresh)."""
    global _resource_options
    _resource_options = None


def npu_close() -> None:
    """Release the device at the end of the process: :func:`npu_resource_shutdown` here."""
    npu_resource_shutdown()


def set_device_sat_mode(mode: int) -> None:
    """Choose how the device treats float overflow: 0 saturation, 1 INF/NaN.

    Recorded and reported by :func:`is_inf_nan_enabled`; the CPU always computes IEEE INF/NaN.

    Raises:
        TypeError: ``mode`` is not an int. ValueError: not 0 or 1.
    """
    global _sat_mode
    if not isinstance(mode, int) or isinstance(mode, bool):
        raise TypeError(
            f"set_device_sat_mode: mode={mode!r} ({type(mode).__name__}) must be an int: "
            "0 (saturation) or 1 (INF/NaN)"
        )
    if mode not in (0, 1):
        raise ValueError(f"set_device_sat_mode: mode={mode!r}; use 0 (saturation) or 1 (INF/NaN)")
    _sat_mode = mode


def is_inf_nan_enabled() -> bool:
    """Whether :func:`set_device_sat_mode` selected INF/NaN mode (default: saturation)."""
    return _sat_mode == 1


# -- RDMA and shared memory (host embedding) ---------------------------------------------------

#: What the RDMA registration calls asked for, by function name (no effect here).
rdma_requests: dict[str, dict[str, Any]] = {}


def malloc_shared_memory(var_name: str, shape: Any, data_type: int) -> tuple[int, int]:
    """Allocate a zeroed host buffer ``var_name`` of ``shape`` and TF ``DataType`` ``data_type``.

    Returns ``(address, size_in_bytes)`` of the buffer, which ``hccl_ops.remote_read`` /
    ``remote_write`` address (``tf_adapter.DT_FLOAT`` ... give ``data_type``).

    Raises:
        ValueError: a name that is not a string, a bad shape or an unknown data type.
    """
    if not isinstance(var_name, str) or not var_name:
        raise ValueError(f"malloc_shared_memory: var_name={var_name!r} must be a non-empty str")
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise ValueError(f"malloc_shared_memory: shape={list(shape)!r} has a negative dimension")
    try:
        dtype = tf.dtypes.as_dtype(data_type).as_numpy_dtype
    except TypeError:
        raise ValueError(
            f"malloc_shared_memory: data_type={data_type!r} is not a TensorFlow DataType; "
            "use e.g. tf_adapter.DT_FLOAT"
        ) from None
    return _shared_memory.allocate(var_name, tuple(dims), np.dtype(dtype))


def get_var_addr_and_size(var_name: str) -> tuple[int, int]:
    """``(address, size)`` of host buffer ``var_name`` made by :func:`malloc_shared_memory`.

    Raises:
        ValueError: ``var_name`` is not a str. Tf2NpuError: no such buffer; the adapter also
            answers for variables it placed in host memory, which do not exist here.
    """
    if not isinstance(var_name, str):
        raise ValueError(f"{var_name!r} should be str")
    try:
        return _shared_memory.address_and_size(var_name)
    except KeyError:
        raise Tf2NpuError(
            f"get_var_addr_and_size({var_name!r}): no host buffer of that name. The adapter "
            "also finds variables it placed in host memory, which do not exist off the device; "
            "allocate the table with malloc_shared_memory instead"
        ) from None


def rdma_remote_init(remote_var_list: Any, mem_size: int) -> None:
    """Register remote host memory for RDMA and allocate the RDMA pool: no effect here."""
    if not isinstance(remote_var_list, (tuple, list)):
        raise ValueError(f"{remote_var_list} should be tuple or list")
    if not isinstance(mem_size, int):
        raise ValueError(f"{mem_size} should be int")
    _record_rdma("rdma_remote_init", remote_var_list=remote_var_list, mem_size=mem_size)


def rdma_remote_register(remote_var_list: Any) -> None:
    """Register remote host memory for RDMA: no effect here."""
    if not isinstance(remote_var_list, (tuple, list)):
        raise ValueError(f"{remote_var_list} should be tuple or list")
    _record_rdma("rdma_remote_register", remote_var_list=remote_var_list)


def init_rdma_pool(mem_size: int) -> None:
    """Allocate the device's RDMA pool of ``mem_size`` bytes: no effect here."""
    if not isinstance(mem_size, int) or isinstance(mem_size, bool) or mem_size <= 0:
        raise ValueError(f"init_rdma_pool: mem_size={mem_size!r} must be an int > 0 (bytes)")
    _record_rdma("init_rdma_pool", mem_size=mem_size)


def get_rdma_cache(data_type: Any, shape: Any, name: str = "rdma_w") -> Any:
    """The device's RDMA cache variable: it does not exist off the device, so this raises."""
    raise Tf2NpuError(
        f"get_rdma_cache({name!r}): the RDMA cache lives in device memory and is filled by "
        "remote_ref_read over RDMA; it cannot run off the device. For a CPU run keep the "
        "embedding rows in a tf.Variable"
    )


def _record_rdma(function: str, **arguments: Any) -> None:
    rdma_requests[function] = arguments
    tf.compat.v1.logging.info(
        "npu_plugin.%s: recorded, no effect off the device (no RDMA here)", function
    )

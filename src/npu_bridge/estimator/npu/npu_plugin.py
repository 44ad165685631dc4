"""``npu_plugin``: process-wide device initialisation from Python, without the ``NPUInit`` op.

The adapter's :func:`npu_resource_init` initialises the Graph Engine once per process with
"GE-global" options; the first initialisation wins until :func:`npu_resource_shutdown`. None of
those options change what the CPU computes, so here they are type-checked, validated against
tf2npu's option table (:mod:`tf2npu.config`) and recorded as the process's resource options
(the ``no_effect`` names of the recorded :class:`~tf2npu.config.options.NpuOptions` are logged).

Unlike the anchor adapter, which does ``int(os.getenv('RANK_SIZE'))`` unguarded and so raises a
``TypeError`` when ``RANK_SIZE`` is unset, an unset ``RANK_SIZE`` means one rank here.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import tensorflow as tf

from tf2npu.config.options import NpuOptions
from tf2npu.config.sources import from_env, from_run_config
from tf2npu.config.validate import validate

__all__ = [
    "is_inf_nan_enabled",
    "npu_close",
    "npu_resource_init",
    "npu_resource_shutdown",
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
    if options.no_effect:
        tf.compat.v1.logging.info(
            "npu_resource_init: recorded, no effect off the device: %s",
            ", ".join(options.no_effect),
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
        raise ValueError(
            f"set_device_sat_mode: mode={mode!r}; use 0 (saturation) or 1 (INF/NaN)"
        )
    _sat_mode = mode


def is_inf_nan_enabled() -> bool:
    """Whether :func:`set_device_sat_mode` selected INF/NaN mode (default: saturation)."""
    return _sat_mode == 1

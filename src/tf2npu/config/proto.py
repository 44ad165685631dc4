"""Writing options into a ``ConfigProto``'s ``NpuOptimizer`` custom optimizer.

The inverse of :func:`tf2npu.config.sources.from_config_proto`: each value goes into the
``AttrValue`` field its option's kind names (``b``, ``i``, or ``s`` as UTF-8 bytes), which is the
only channel the real adapter reads NPU settings from. :func:`npu_parameter_values` computes the
key set the latest adapter's ``NPUEstimator`` writes for an ``NPURunConfig``.

Protos are duck-typed (anything with ``parameter_map[key].b/.i/.s``), so nothing here imports
TensorFlow.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tf2npu.config.options import Value
from tf2npu.config.sources import CONFIG_OBJECTS, coerce, from_run_config, spec_of
from tf2npu.config.validate import DYNAMIC_DIMS
from tf2npu.errors import ConfigError

__all__ = ["ESTIMATOR_FIXED_VALUES", "npu_parameter_values", "write_parameter_map"]


def write_parameter_map(custom_optimizer: Any, values: Mapping[str, Value]) -> None:
    """Set ``custom_optimizer.parameter_map[key]`` for each of ``values``.

    Args:
        custom_optimizer: a ``RewriterConfig.CustomGraphOptimizer`` (or a look-alike).
        values: option name -> Python value; strings may also be given as ``bytes``.

    Raises:
        tf2npu.errors.UnknownNameError: a key that is not an ``NpuOptimizer`` option.
        tf2npu.errors.ConfigError: a value of the wrong kind for its key.
    """
    for key, raw in values.items():
        spec = spec_of(key)
        value = coerce(key, raw, f"write_parameter_map({key}=...)")
        attr = custom_optimizer.parameter_map[key]
        if spec.kind == "s":
            attr.s = str(value).encode("utf-8")
        elif spec.kind == "i":
            attr.i = value
        else:
            attr.b = value


ESTIMATOR_FIXED_VALUES: Mapping[str, Value] = {"use_off_line": True, "min_group_size": True}
"""Keys ``NPUEstimator`` writes whatever the run config says (``min_group_size`` is written as
a bool and read by nothing)."""


def npu_parameter_values(
    arguments: Mapping[str, object], env: Mapping[str, str]
) -> dict[str, Value]:
    """The ``parameter_map`` the latest ``NPUEstimator`` writes for an ``NPURunConfig``.

    Every NPU argument that is not ``None`` (defaults included, e.g. ``hcom_parallel=True``,
    ``enable_exception_dump=2``), plus ``enable_dump=False`` / ``enable_dump_debug=False``
    without a ``DumpConfig``, ``work_path='./'`` when ``aoe_mode`` is set without one, the
    dynamic-input keys only when all three are given, ``use_off_line=True``,
    ``min_group_size=True`` and ``job`` / ``task_index`` from ``TF_CONFIG``'s ``task``
    (``localhost`` / 0 without one).

    Args:
        arguments: every NPU argument of the run config by name (``NPURunConfig`` keeps them
            in ``_npu_arguments``), defaults included.
        env: the environment (only ``TF_CONFIG`` is read).
    """
    values = from_run_config(arguments)
    if arguments.get("dump_config") is None:
        values.update(enable_dump=False, enable_dump_debug=False)
    if values.get("aoe_mode") is not None:
        values.setdefault("work_path", "./")
    if not all(key in values for key in DYNAMIC_DIMS):
        for key in CONFIG_OBJECTS["dynamic_input_config"].values():
            values.pop(key, None)
    values.update(ESTIMATOR_FIXED_VALUES)
    values.update(job_values(env))
    return values


def job_values(env: Mapping[str, str]) -> dict[str, Value]:
    """``job`` and ``task_index`` from ``TF_CONFIG``'s ``task`` entry, as the adapter reads it."""
    text = env.get("TF_CONFIG") or "{}"
    try:
        tf_config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"environment variable TF_CONFIG={text!r} is not valid JSON ({exc}); fix or unset it"
        ) from None
    task = tf_config.get("task", {}) if isinstance(tf_config, dict) else {}
    task_type = task.get("type") if isinstance(task, dict) else None
    if not task_type:
        return {"job": "localhost", "task_index": 0}
    index = task.get("index", 0)
    try:
        return {"job": str(task_type), "task_index": int(index)}
    except (TypeError, ValueError):
        raise ConfigError(
            f'TF_CONFIG task index {index!r} is not an integer; give e.g. "index": 0'
        ) from None

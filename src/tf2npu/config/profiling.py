"""``profiling_mode`` / ``profiling_options``: the adapter's profiling settings, checked (TF-free).

``profiling_options`` is a JSON object (reference debug-tools.md §6.1). What each key does here,
where a profile is TensorFlow's own step statistics of the runs (``tf2npu profile``):

========================  =========================================================================
key                       here
========================  =========================================================================
``output``                the folder the profile goes to (``PROF_<time>/`` inside it)
``training_trace``        ``on``: ``step_trace_*.csv`` (FP start, BP end, iteration time, ...)
``task_trace``/``task_time``  ``on``/``l1``: ``op_summary_*.csv`` with shapes and dtypes, ``l0``:
                          timings only, ``off``: no per-op tables
``fp_point``/``bp_point`` the first forward / last backward op (``""``: chosen as the adapter does)
``aicpu``                 host ops are always profiled (as the AI CPU class)
others                    no effect here (``aic_metrics``, ``l2``, ``hccl``, ``storage_limit``,
                          ...: device collectors); recorded in :attr:`ProfilingSpec.no_effect`
========================  =========================================================================

>>> spec = parse_options('{"output": "/tmp/p", "training_trace": "on", "aic_metrics": "Memory"}')
>>> spec.output, spec.training_trace, spec.task_trace, spec.no_effect
('/tmp/p', True, 'l1', ('aic_metrics',))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tf2npu.errors import ConfigError

__all__ = [
    "KNOWN_KEYS",
    "NO_EFFECT_KEYS",
    "ProfilingSpec",
    "check_options_text",
    "parse_options",
    "profile_options",
]

TaskLevel = Literal["off", "l0", "l1"]

_SWITCH = ("on", "off")
_TASK_LEVELS: dict[str, TaskLevel] = {"on": "l1", "l1": "l1", "l0": "l0", "off": "off"}
AIC_METRICS = (
    "ArithmeticUtilization",
    "PipeUtilization",
    "Memory",
    "MemoryL0",
    "MemoryUB",
    "ResourceConflictRatio",
    "L2Cache",
)

HONOURED_KEYS = (
    "output",
    "training_trace",
    "task_trace",
    "task_time",
    "fp_point",
    "bp_point",
    "aicpu",
)
NO_EFFECT_KEYS: Mapping[str, str] = {
    "aic_metrics": "AI Core PMU counters exist on the device only",
    "storage_limit": "the profile is written whole; nothing is aged out",
    "hccl": "no collective communication in a one-process CPU run",
    "l2": "device L2 cache counters",
    "msproftx": "msproftx markers are a device runtime API",
    "runtime_api": "the Ascend runtime API is not used here",
    "ge_api": "GE's API is not used here",
    "sys_hardware_mem_freq": "device memory sampling",
    "sys_io_sampling_freq": "device IO sampling",
    "sys_interconnection_freq": "device interconnect sampling",
    "dvpp_freq": "device DVPP sampling",
    "instr_profiling_freq": "device instruction sampling",
    "host_sys": "host system sampling is not collected",
    "host_sys_usage": "host system sampling is not collected",
    "host_sys_usage_freq": "host system sampling is not collected",
    "l2_cache": "device L2 cache counters",
}
"""Keys of the reference that are accepted and recorded, with why they change nothing here."""
KNOWN_KEYS = (*HONOURED_KEYS, *NO_EFFECT_KEYS)


@dataclass(frozen=True)
class ProfilingSpec:
    """One session's profiling settings, checked."""

    output: str = ""
    """Where the profile goes ("" = the run's report folder)."""
    training_trace: bool = True
    task_trace: TaskLevel = "l1"
    fp_point: str = ""
    bp_point: str = ""
    no_effect: tuple[str, ...] = ()
    """Keys given that change nothing off the device (sorted)."""
    unknown: tuple[str, ...] = ()
    """Keys given that the reference does not list (sorted; ignored, like the adapter)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "training_trace": "on" if self.training_trace else "off",
            "task_trace": self.task_trace,
            "fp_point": self.fp_point,
            "bp_point": self.bp_point,
            "no_effect": {key: NO_EFFECT_KEYS[key] for key in self.no_effect},
            "unknown": list(self.unknown),
        }


def profile_options(folder: Path) -> tuple[str, ...]:
    """The NpuOptimizer options that profile every NPU session into ``folder`` (what
    ``--profile DIR`` stands for; the launcher of ``--ranks`` makes them again per rank).

    >>> profile_options(Path("/tmp/p"))
    ('profiling_mode=true', 'profiling_options={"output": "/tmp/p"}')
    """
    return ("profiling_mode=true", f"profiling_options={json.dumps({'output': str(folder)})}")


def parse_options(text: str, where: str = "profiling_options") -> ProfilingSpec:
    """``profiling_options`` text as a :class:`ProfilingSpec` ("" = every default).

    Raises:
        ConfigError: not a JSON object, or a value outside what the key allows (the message
            names the key, the value and the values allowed).
    """
    if not text.strip():
        return ProfilingSpec()
    data = _object(text, where)
    trace = _task_level(data, where)
    _check_aic_metrics(data, where)
    return ProfilingSpec(
        output=_string(data, "output", where),
        training_trace=_switch(data, "training_trace", where, default="on") == "on",
        task_trace=trace,
        fp_point=_string(data, "fp_point", where),
        bp_point=_string(data, "bp_point", where),
        no_effect=tuple(sorted(k for k in data if k in NO_EFFECT_KEYS)),
        unknown=tuple(sorted(k for k in data if k not in KNOWN_KEYS)),
    )


def check_options_text(value: object) -> str | None:
    """a JSON object, e.g. `{"output": "/tmp/prof", "training_trace": "on"}`"""
    if not isinstance(value, str):
        return 'give a JSON object as text, e.g. {"output": "/tmp/prof", "task_trace": "on"}'
    try:
        parse_options(value)
    except ConfigError as err:
        return str(err).removeprefix("profiling_options: ")
    return None


def _object(text: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{where}: {text[:60]!r} is not JSON ({err.msg} at character {err.pos}); give a "
            'JSON object, e.g. {"output": "/tmp/prof", "task_trace": "on"}'
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: {text[:60]!r} is a JSON {type(data).__name__}, not an object; give "
            'e.g. {"output": "/tmp/prof", "task_trace": "on"}'
        )
    return data


def _string(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ConfigError(f'{where}: "{key}" = {value!r} is not a string; give e.g. "{key}": ""')
    return value


def _switch(data: Mapping[str, Any], key: str, where: str, *, default: str) -> str:
    value = data.get(key, default)
    if value not in _SWITCH:
        raise ConfigError(f'{where}: "{key}" = {value!r} is not allowed; use "on" or "off"')
    return str(value)


def _task_level(data: Mapping[str, Any], where: str) -> TaskLevel:
    """``task_trace`` or its newer name ``task_time`` (both given: they must agree)."""
    levels: list[TaskLevel] = []
    for key in ("task_trace", "task_time"):
        if key not in data:
            continue
        value = data[key]
        if value not in _TASK_LEVELS:
            allowed = ", ".join(f'"{v}"' for v in _TASK_LEVELS)
            raise ConfigError(f'{where}: "{key}" = {value!r} is not allowed; use one of {allowed}')
        levels.append(_TASK_LEVELS[value])
    if len(set(levels)) > 1:
        raise ConfigError(
            f'{where}: "task_trace" and "task_time" disagree ({levels[0]!r} vs {levels[1]!r}); '
            "give one of them (task_time is the newer name)"
        )
    return levels[0] if levels else "l1"


def _check_aic_metrics(data: Mapping[str, Any], where: str) -> None:
    """``aic_metrics`` has no effect here, but a misspelt value fails on the device: say so."""
    aic = data.get("aic_metrics")
    if aic is not None and aic not in AIC_METRICS:
        raise ConfigError(
            f'{where}: "aic_metrics" = {aic!r} is not allowed; use one of {", ".join(AIC_METRICS)}'
        )

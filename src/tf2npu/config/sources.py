"""Options from a ConfigProto, ``NPURunConfig`` arguments, JSON files, the environment, the CLI.

Precedence, lowest first: ``ConfigProto`` ``NpuOptimizer`` ``parameter_map`` < ``NPURunConfig``
arguments < overrides (typed values: CLI ``KEY=VALUE`` parsed once by :func:`from_cli`, or a
JSON file read by :func:`from_json_file`). The environment does not set ``parameter_map`` keys
except ``AOE_MODE``, ``PROFILING_MODE`` and ``PROFILING_OPTIONS``, which (as in the adapter) only
fill their option when no source gave it;
the other variables the engine needs (``PRINT_MODEL``, ``ENABLE_FORCE_V2_CONTROL``, ``RANK_SIZE``,
``RANK_ID``/``POD_NAME``, ``ASCEND_DEVICE_ID``/``DEVICE_ID``, ``ASCEND_OPP_PATH``) become
:class:`EnvSettings`. TensorFlow objects are duck-typed; nothing here imports TensorFlow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tf2npu.config.cluster import Cluster
from tf2npu.config.jsonfile import load_json
from tf2npu.config.names import unknown
from tf2npu.config.options import (
    DEFAULT_OPP_PATH,
    OPTIONS,
    EnvSettings,
    NpuOptions,
    OptionSpec,
    Value,
)
from tf2npu.config.run_config import NPU_RUN_CONFIG_PASSES
from tf2npu.config.validate import validate
from tf2npu.errors import ConfigError

#: The custom optimizer whose ``parameter_map`` holds the NPU options (the adapter's marker).
NPU_OPTIMIZER = "NpuOptimizer"

#: Where the user finds every option name (messages point there instead of listing ~120).
OPTIONS_DOC = "docs/options.md"
_KIND_NAMES = {"b": "a bool", "i": "an int", "s": "a string"}
#: ``AttrValue.i`` is an int64: a larger number cannot reach the session.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def spec_of(name: str) -> OptionSpec:
    """The table row for ``name`` or an :class:`UnknownNameError`."""
    spec = OPTIONS.get(name)
    if spec is None:
        raise unknown("NpuOptimizer option", name, OPTIONS, listed_in=OPTIONS_DOC)
    return spec


def coerce(name: str, value: object, where: str) -> Value:
    """``value`` as the option's kind (``bytes`` decode to ``str``), or a :class:`ConfigError`."""
    spec = spec_of(name)
    if spec.kind == "s" and isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{where}: option {name!r} = {value!r} is not UTF-8 text") from exc
    if spec.kind == "b" and isinstance(value, bool):
        return value
    if spec.kind == "i" and isinstance(value, int) and not isinstance(value, bool):
        return _int64(name, value, where)
    if spec.kind == "s" and isinstance(value, str):
        return value
    raise ConfigError(
        f"{where}: option {name!r} = {value!r} ({type(value).__name__}) is not "
        f"{_KIND_NAMES[spec.kind]}; give {_KIND_NAMES[spec.kind]}, e.g. {name}={_example(spec)}"
    )


def _example(spec: OptionSpec) -> str:
    if isinstance(spec.allowed, tuple):
        return repr(spec.allowed[0])
    if spec.default is not None:
        return repr(spec.default)
    return {"b": "True", "i": "1", "s": "'...'"}[spec.kind]


# -- (a) ConfigProto ---------------------------------------------------------------------------


def from_config_proto(config: Any) -> dict[str, Value]:
    """The ``NpuOptimizer`` ``parameter_map`` of a ``ConfigProto`` (``{}`` when there is none).

    Map values may be ``AttrValue``-like (``WhichOneof("value")`` and ``.b/.i/.s``) or plain
    Python values. An unknown key is an :class:`UnknownNameError` (``--strict-options``);
    :func:`split_config_proto` ignores such keys, as the real adapter does.
    """
    values, ignored = split_config_proto(config)
    if ignored:
        raise unknown("NpuOptimizer option", ignored[0], OPTIONS, listed_in=OPTIONS_DOC)
    return values


def split_config_proto(config: Any) -> tuple[dict[str, Value], tuple[str, ...]]:
    """The known ``parameter_map`` values, and the unknown keys (sorted) left out of them.

    The real adapter reads the keys it knows and never looks at the others, so scripts carry
    keys of older releases or typos (``enable_auto_mix_precision``, ``sump_mode``) that do
    nothing on the device; their values are not checked either.
    """
    values: dict[str, Value] = {}
    ignored: set[str] = set()
    optimizers = config.graph_options.rewrite_options.custom_optimizers
    for optimizer in optimizers:
        if optimizer.name != NPU_OPTIMIZER:
            continue
        for key, attr in optimizer.parameter_map.items():
            if str(key) not in OPTIONS:
                ignored.add(str(key))
                continue
            values[key] = _attr_value(str(key), attr)
    return values, tuple(sorted(ignored))


def _bool_text(value: object) -> Value:
    return "true" if value else "false"


def _int_text(value: object) -> Value:
    text = value.decode() if isinstance(value, bytes) else str(value)
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"option 'op_debug_level' = {text!r} is not a whole number") from None


_OLDER_FIELDS: Mapping[tuple[str, str], Callable[[object], Value]] = {
    ("jit_compile", "b"): _bool_text,
    ("op_debug_level", "s"): _int_text,
}
"""Fields earlier adapter releases read for a key (``jit_compile`` was a bool until the latest
release made it a string), as scripts written for them still set: the value is converted."""


def _attr_value(key: str, attr: object) -> Value:
    where = f"NpuOptimizer parameter_map[{key!r}]"
    spec = spec_of(key)
    which = getattr(attr, "WhichOneof", None)
    if which is None:
        return coerce(key, attr, where)
    field = which("value")
    older = _OLDER_FIELDS.get((key, str(field)))
    if older is not None:
        return coerce(key, older(getattr(attr, str(field))), where)
    if field != spec.kind:
        got = f".{field}" if field else "no value"
        raise ConfigError(
            f"{where} is set with {got}; {key!r} is {_KIND_NAMES[spec.kind]} option: "
            f"set parameter_map[{key!r}].{spec.kind} instead"
        )
    return coerce(key, getattr(attr, field), where)


# -- (b) NPURunConfig --------------------------------------------------------------------------

_RUN_CONFIG_ONLY = frozenset({*NPU_RUN_CONFIG_PASSES, "distribute", "horovod_mode"})
"""``NPURunConfig`` arguments that are not ``parameter_map`` keys (TF's RunConfig / hooks)."""

CONFIG_OBJECTS: Mapping[str, Mapping[str, str]] = {
    "profiling_config": {
        "enable_profiling": "profiling_mode",
        "profiling_options": "profiling_options",
    },
    "dump_config": {
        name: name
        for name in (
            "enable_dump",
            "dump_path",
            "dump_step",
            "dump_mode",
            "enable_dump_debug",
            "dump_debug_mode",
            "dump_data",
            "dump_layer",
        )
    },
    "dynamic_input_config": {
        name: name
        for name in ("input_shape", "dynamic_dims", "dynamic_node_type", "compile_hybrid_mode")
    },
    "memory_config": {
        name: name
        for name in (
            "atomic_clean_policy",
            "static_memory_policy",
            "memory_optimization_policy",
            "variable_use_1g_huge_page",
        )
    },
    "experimental_config": {
        "logical_device_cluster_deploy_mode": "experimental_logical_device_cluster_deploy_mode",
        "logical_device_id": "experimental_logical_device_id",
        "model_deploy_mode": "experimental_model_deploy_mode",
        "model_deploy_devicelist": "experimental_model_deploy_devicelist",
        "enable_graph_parallel": "enable_graph_parallel",
        "graph_parallel_option_path": "graph_parallel_option_path",
        "graph_compiler_cache_dir": "graph_compiler_cache_dir",
        "resource_config_path": "resource_config_path",
        "accelerate_train_mode": "experimental_accelerate_train_mode",
    },
}
"""Config-object arguments: attribute name -> ``parameter_map`` key (``None`` attributes skip)."""

_STRINGIFIED = frozenset({"graph_memory_max_size", "variable_memory_max_size"})


def from_run_config(kwargs: Mapping[str, object]) -> dict[str, Value]:
    """``parameter_map`` values from ``NPURunConfig(**kwargs)`` arguments.

    ``None`` arguments are left out (the key keeps its default). Like ``NPURunConfig`` this
    writes ``enable_data_pre_proc=True`` unless the argument says otherwise.
    """
    values: dict[str, Value] = {"enable_data_pre_proc": True}
    for arg, raw in kwargs.items():
        if arg in _RUN_CONFIG_ONLY or raw is None:
            continue
        if arg in CONFIG_OBJECTS:
            values.update(_config_object(arg, raw))
            continue
        if arg not in OPTIONS:
            valid = set(OPTIONS) | _RUN_CONFIG_ONLY | set(CONFIG_OBJECTS)
            raise unknown("NPURunConfig argument", arg, valid, listed_in=OPTIONS_DOC)
        value = str(raw) if arg in _STRINGIFIED and isinstance(raw, int) else raw
        values[arg] = coerce(arg, value, f"NPURunConfig({arg}=...)")
    return values


def _config_object(arg: str, obj: object) -> dict[str, Value]:
    values: dict[str, Value] = {}
    for attr, key in CONFIG_OBJECTS[arg].items():
        raw = getattr(obj, attr, None)
        if raw is None:
            continue
        values[key] = coerce(key, raw, f"NPURunConfig({arg}=...).{attr}")
    memory = getattr(obj, "graph_memory_optimize_config", None)
    graph_slice = getattr(memory, "graph_slice", None)
    if graph_slice is not None:
        values["graph_slice"] = coerce("graph_slice", graph_slice, f"NPURunConfig({arg}=...)")
    return values


# -- (c) CLI -----------------------------------------------------------------------------------

_TRUE = ("true", "1")
_FALSE = ("false", "0")


def from_cli(items: Iterable[str]) -> dict[str, Value]:
    """``KEY=VALUE`` strings, each parsed by the option's kind."""
    values: dict[str, Value] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ConfigError(
                f"--option {item!r}: expected KEY=VALUE, e.g. precision_mode=force_fp32"
            )
        values[key] = parse_text(key, text)
    return values


def option_text(value: object) -> str:
    """A value as ``KEY=VALUE`` writes it (inverse of :func:`parse_text`): bools as true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_text(key: str, text: str) -> Value:
    """One CLI value: bools accept true/false/1/0 (any case), ints decimal, strings as is."""
    spec = spec_of(key)
    if spec.kind == "s":
        return text
    if spec.kind == "b":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ConfigError(
            f"--option {key}={text}: {key!r} is a bool; use {key}=true or {key}=false"
        )
    try:
        number = int(text)
    except ValueError:
        raise ConfigError(
            f"--option {key}={text}: {key!r} is an int; give a whole number, e.g. {key}=1"
        ) from None
    return _int64(key, number, None)


def _int64(name: str, value: int, where: str | None) -> int:
    """``value`` if an ``AttrValue.i`` holds it; ``where=None`` means ``--option``."""
    if INT64_MIN <= value <= INT64_MAX:
        return value
    shown = str(value) if len(str(value)) <= 30 else f"{str(value)[:27]}..."
    subject = f"--option {name}={shown}" if where is None else f"{where}: option {name!r} = {shown}"
    raise ConfigError(
        f"{subject} does not fit in a 64-bit integer (the largest is {INT64_MAX}); give a "
        f"smaller number, e.g. {name}=1"
    )


# -- (d) JSON file -----------------------------------------------------------------------------

JSON_EXAMPLE = '{"precision_mode": "allow_mix_precision", "mix_compile_mode": true}'
"""An options file, as messages show it."""


def from_json_file(path: str | Path, option: str) -> dict[str, Value]:
    """The ``parameter_map`` values in the JSON file ``path`` that ``option`` names.

    The file holds one JSON object of option names to values of the option's type (bool:
    ``true``/``false``, int: a number, string: a string). The values take the place of a
    session config's ``parameter_map``; pass them to :func:`resolve` as ``overrides``.

    Raises:
        ConfigError: an unreadable file, invalid JSON, not an object, a null or mistyped value.
        tf2npu.errors.UnknownNameError: a key that is no option.
    """
    source = f"{option} file {str(path)!r}"
    data = load_json(path, option)
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: expected a JSON object of NpuOptimizer parameter_map keys to values, "
            f"e.g. {JSON_EXAMPLE}; got a JSON {type(data).__name__}"
        )
    values: dict[str, Value] = {}
    for key, value in data.items():
        if key not in OPTIONS:
            error = unknown("NpuOptimizer option", key, OPTIONS, listed_in=OPTIONS_DOC)
            error.args = (f"{source}: {error.args[0]}",)
            raise error
        if value is None:
            raise ConfigError(
                f"{source}: key {key!r} is null; leave the key out to keep its default"
            )
        values[key] = coerce(key, value, f"{source}, key {key!r}")
    return values


# -- (e) environment ---------------------------------------------------------------------------

DEVICE_ID_VARIABLES = ("ASCEND_DEVICE_ID", "DEVICE_ID", "DEVICE_INDEX")
"""The names real launch scripts give the device number; a one-device job sets them alike."""


def single_rank_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables a one-device Ascend job has that ``env`` lacks, with their values.

    Real NPU scripts read ``os.environ["RANK_SIZE"]``, ``["RANK_ID"]`` or ``["DEVICE_ID"]``
    directly, because their launch scripts (``train_full_1p.sh``) always export them. Unset
    ones get the one-device values: ``RANK_SIZE=1``, ``RANK_ID=0`` (unless ``POD_NAME`` gives
    the rank), and the device number the other device variables agree on (else 0).

    >>> single_rank_environment({"DEVICE_ID": "3"})
    {'RANK_SIZE': '1', 'RANK_ID': '0', 'ASCEND_DEVICE_ID': '3', 'DEVICE_INDEX': '3'}
    """
    added: dict[str, str] = {}
    if not env.get("RANK_SIZE"):
        added["RANK_SIZE"] = "1"
    if not env.get("RANK_ID") and not env.get("POD_NAME"):
        added["RANK_ID"] = "0"
    device = next((env[v] for v in DEVICE_ID_VARIABLES if env.get(v)), "0")
    added.update({v: device for v in DEVICE_ID_VARIABLES if not env.get(v)})
    return added


def from_env(env: Mapping[str, str]) -> tuple[EnvSettings, dict[str, Value]]:
    """Engine-relevant environment variables, and the options they fill when no source gave
    them (:data:`ENV_OPTIONS`: ``AOE_MODE``, ``PROFILING_MODE``, ``PROFILING_OPTIONS``)."""
    cluster = Cluster.from_env(env)
    settings = EnvSettings(
        print_model=env.get("PRINT_MODEL", "") == "1",
        force_v2_control=env.get("ENABLE_FORCE_V2_CONTROL", "") not in ("", "0"),
        rank_size=cluster.size,
        rank_id=cluster.rank,
        device_id=cluster.device_id,
        opp_path=env.get("ASCEND_OPP_PATH") or DEFAULT_OPP_PATH,
        dump_ge_graph=_env_int(env, "DUMP_GE_GRAPH", 0),
        dump_graph_path=env.get("DUMP_GRAPH_PATH", ""),
    )
    fallback: dict[str, Value] = {}
    for option, variable in ENV_OPTIONS.items():
        if env.get(variable):
            fallback[option] = _env_value(option, variable, env[variable])
    return settings, fallback


#: Options the environment can fill when no source gave them, and the variable that does (the
#: adapter reads these; a session's own setting wins).
ENV_OPTIONS = {
    "aoe_mode": "AOE_MODE",
    "profiling_mode": "PROFILING_MODE",
    "profiling_options": "PROFILING_OPTIONS",
}


def _env_value(option: str, variable: str, text: str) -> Value:
    """``text`` of ``variable`` as the option's kind (a bool from ``true``/``false``/1/0)."""
    if OPTIONS[option].kind != "b":
        return text
    lowered = text.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ConfigError(
        f"environment variable {variable}={text!r} is not a boolean (it sets option "
        f"{option!r}); set {variable}=true or {variable}=false, or unset it"
    )


def check_env_option(name: str, value: Value) -> Value:
    """``value`` read from ``ENV_OPTIONS[name]``; an invalid one names the variable, not the key.

    A user who set ``AOE_MODE=9`` never wrote ``aoe_mode``: the message must say what they did.
    """
    fix = OPTIONS[name].check(value)
    if fix is not None:
        variable = ENV_OPTIONS[name]
        raise ConfigError(
            f"environment variable {variable}={option_text(value)!r} is not valid (it sets "
            f"option {name!r}); {fix}; or unset {variable}"
        )
    return value


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "")
    if text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise ConfigError(
            f"environment variable {name}={text!r} is not an integer; set it to a number, "
            f"e.g. {name}={default}, or unset it"
        ) from None


# -- merge -------------------------------------------------------------------------------------


_NO_OVERRIDES: Mapping[str, Value] = MappingProxyType({})


def resolve(
    config: Any = None,
    run_config: Mapping[str, object] | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Value] = _NO_OVERRIDES,
    *,
    strict: bool = True,
) -> NpuOptions:
    """Merge every source (see the module docstring for precedence), then :func:`validate`.

    Args:
        config: a ``ConfigProto`` (or look-alike) whose ``NpuOptimizer`` ``parameter_map`` is
            read.
        run_config: ``NPURunConfig`` arguments by name.
        env: the environment (see :func:`from_env`).
        overrides: typed values that win over ``config`` and ``run_config``, as
            :func:`from_cli` and :func:`from_json_file` return them.
        strict: ``False`` leaves unknown ``parameter_map`` keys out and names them in
            :attr:`NpuOptions.unknown` (the real adapter ignores them); ``True`` raises.

    Raises:
        ConfigError: an invalid value or combination.
        tf2npu.errors.UnknownNameError: an unknown option name.
    """
    settings, fallback = from_env(env or {})
    values: dict[str, Value] = {}
    ignored: tuple[str, ...] = ()
    if config is not None:
        if strict:
            values.update(from_config_proto(config))
        else:
            known, ignored = split_config_proto(config)
            values.update(known)
    if run_config is not None:
        values.update(from_run_config(run_config))
    values.update({key: coerce(key, value, "overrides") for key, value in overrides.items()})
    for key, value in fallback.items():
        if key not in values:
            values[key] = check_env_option(key, value)
    options = NpuOptions.from_values(values, settings, unknown=ignored)
    validate(options)
    return options

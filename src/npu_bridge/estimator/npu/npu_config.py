"""NPU run configuration: ``NPURunConfig`` and the config objects it takes.

Same class names, constructor arguments and defaults as the Ascend TF Adapter (the latest
signature, plus the anchor-only ``auto_tune_mode`` and ``mstune_mode`` at the end). The real
constructor checks only a few arguments; those checks raise the same exception types here
(``TypeError`` / ``ValueError``). Every other option is validated at construction against
tf2npu's option table (:mod:`tf2npu.config`) and raises :class:`tf2npu.errors.ConfigError`,
where the real adapter would fail later, at session creation.

Example:
    >>> config = NPURunConfig(iterations_per_loop=10, precision_mode="allow_mix_precision")
    >>> config.npu_options().precision_mode
    'allow_mix_precision'
"""

from __future__ import annotations

import enum
import inspect
import json
import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import tensorflow as tf

from tf2npu.config import run_config as _run_config
from tf2npu.config.checks import adapter_says
from tf2npu.config.options import OPTIONS, NpuOptions, Value
from tf2npu.config.sources import CONFIG_OBJECTS, coerce, resolve
from tf2npu.errors import ConfigError
from tf2npu.runtime.protos import npu_session_config

__all__ = [
    "DumpConfig",
    "DynamicInputConfig",
    "ExperimentalConfig",
    "GraphMemoryOptimizeConfig",
    "MemoryConfig",
    "NPURunConfig",
    "NpuExecutePlacement",
    "ProfilingConfig",
    "decorator_tf_session",
    "set_npu_default_config",
]


# -- argument checks shared with npu_scope -----------------------------------------------------


def check_positive_integer(value: object, name: str, where: str = "") -> None:
    """``TypeError`` unless ``value`` is an ``int`` (not a bool), ``ValueError`` unless > 0."""
    _check_integer(value, name, where, 1)


def check_nonnegative_integer(value: object, name: str, where: str = "") -> None:
    """``TypeError`` unless ``value`` is an ``int`` (not a bool), ``ValueError`` unless >= 0."""
    _check_integer(value, name, where, 0)


def _check_integer(value: object, name: str, where: str, low: int) -> None:
    prefix = f"{where}: " if where else ""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(
            f"{prefix}{name!r} = {value!r} ({type(value).__name__}) is not an int; "
            f"give an integer >= {low}, e.g. {name}={max(low, 1)}"
        )
    if value < low:
        raise ValueError(f"{prefix}{name!r} = {value!r} is out of range; give an integer >= {low}")


def _checked_option(key: str, value: object, where: str) -> Value | None:
    """``value`` type-checked and range-checked as ``parameter_map`` key ``key`` (None passes)."""
    if value is None:
        return None
    typed = coerce(key, value, where)
    fix = OPTIONS[key].check(typed)
    if fix is not None:
        raise ConfigError(f"{where}: {key!r} = {typed!r} is not valid; {fix}")
    return typed


# -- config objects ----------------------------------------------------------------------------


class _ConfigObject:
    """Stores each constructor argument as ``_<name>`` (as the real classes do) and reads it
    back as ``<name>``, the attribute name :func:`tf2npu.config.sources.from_run_config` uses."""

    #: The ``CONFIG_OBJECTS`` section naming each argument's ``parameter_map`` key.
    _SECTION: str = ""
    _FIELDS: tuple[str, ...] = ()

    def __getattr__(self, name: str) -> Any:
        if name in type(self)._FIELDS:
            return self.__dict__["_" + name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={self.__dict__['_' + name]!r}" for name in self._FIELDS)
        return f"{type(self).__name__}({args})"

    def _store(self, **values: object) -> None:
        for name, value in values.items():
            self.__dict__["_" + name] = value

    def _check_and_store(self, **values: object) -> None:
        """Check each argument that maps to a ``parameter_map`` key, then store the fields."""
        keys = CONFIG_OBJECTS.get(self._SECTION, {})
        where = f"{type(self).__name__}(...)"
        for name, value in values.items():
            if name in keys:
                _checked_option(keys[name], value, where)
        self._store(**{name: value for name, value in values.items() if name in self._FIELDS})


class ProfilingConfig(_ConfigObject):
    """Profiling switch and options (``profiling_mode`` / ``profiling_options`` keys).

    Args:
        enable_profiling: collect a profile.
        profiling_options: what to collect; ``None`` with profiling on means the adapter's
            built-in default JSON.
    """

    _SECTION = "profiling_config"
    _FIELDS = tuple(CONFIG_OBJECTS[_SECTION])

    def __init__(self, enable_profiling: bool = False, profiling_options: str | None = None):
        self._check_and_store(
            enable_profiling=enable_profiling, profiling_options=profiling_options
        )


class DumpConfig(_ConfigObject):
    """Data dump and overflow (``dump_debug``) settings; each argument is the key of that name.

    ``dump_data`` and ``dump_layer`` are public attributes, as in the real class.
    """

    _SECTION = "dump_config"
    _FIELDS = tuple(k for k in CONFIG_OBJECTS[_SECTION] if k not in ("dump_data", "dump_layer"))

    def __init__(
        self,
        enable_dump: bool = False,
        dump_path: str | None = None,
        dump_step: str | None = None,
        dump_mode: str = "output",
        enable_dump_debug: bool = False,
        dump_debug_mode: str = "all",
        dump_data: str = "tensor",
        dump_layer: str | None = None,
    ):
        self._check_and_store(
            enable_dump=enable_dump,
            dump_path=dump_path,
            dump_step=dump_step,
            dump_mode=dump_mode,
            enable_dump_debug=enable_dump_debug,
            dump_debug_mode=dump_debug_mode,
            dump_data=dump_data,
            dump_layer=dump_layer,
        )
        self.dump_data = dump_data
        self.dump_layer = dump_layer


class DynamicInputConfig(_ConfigObject):
    """Dynamic-dimension "gears": ``input_shape``, ``dynamic_dims``, ``dynamic_node_type``.

    ``compile_hybrid_mode`` is a required argument in the latest adapter and absent in the
    anchor one; here it defaults to ``None`` (key not written) so both call styles work.
    """

    _SECTION = "dynamic_input_config"
    _FIELDS = tuple(CONFIG_OBJECTS[_SECTION])

    def __init__(
        self,
        input_shape: str,
        dynamic_dims: str,
        dynamic_node_type: int,
        compile_hybrid_mode: int | None = None,
    ):
        self._check_and_store(
            input_shape=input_shape,
            dynamic_dims=dynamic_dims,
            dynamic_node_type=dynamic_node_type,
            compile_hybrid_mode=compile_hybrid_mode,
        )


class MemoryConfig(_ConfigObject):
    """Memory policy keys of the latest adapter (no effect off the device)."""

    _SECTION = "memory_config"
    _FIELDS = tuple(CONFIG_OBJECTS[_SECTION])

    def __init__(
        self,
        atomic_clean_policy: int = 0,
        static_memory_policy: int = 0,
        memory_optimization_policy: str | None = None,
        variable_use_1g_huge_page: int = 0,
    ):
        self._check_and_store(
            atomic_clean_policy=atomic_clean_policy,
            static_memory_policy=static_memory_policy,
            memory_optimization_policy=memory_optimization_policy,
            variable_use_1g_huge_page=variable_use_1g_huge_page,
        )


class GraphMemoryOptimizeConfig(_ConfigObject):
    """``recompute`` and ``graph_slice``, each ``None``, ``"auto"`` or ``"manual"``."""

    _FIELDS = ("recompute", "graph_slice")

    def __init__(self, recompute: str | None = None, graph_slice: str | None = None):
        for name, value in (("recompute", recompute), ("graph_slice", graph_slice)):
            if value is not None and value not in ("auto", "manual"):
                raise ValueError(
                    f"GraphMemoryOptimizeConfig({name}={value!r}): use 'auto', 'manual' or None"
                )
        self._store(recompute=recompute, graph_slice=graph_slice)


class ExperimentalConfig(_ConfigObject):
    """Experimental / deployment keys of the latest adapter (no effect off the device)."""

    _SECTION = "experimental_config"
    _FIELDS = (*CONFIG_OBJECTS[_SECTION], "graph_memory_optimize_config")

    def __init__(
        self,
        logical_device_cluster_deploy_mode: str = "LB",
        logical_device_id: str | None = None,
        model_deploy_mode: str | None = None,
        model_deploy_devicelist: str | None = None,
        graph_memory_optimize_config: GraphMemoryOptimizeConfig | None = None,
        enable_graph_parallel: bool | None = None,
        graph_parallel_option_path: str | None = None,
        graph_compiler_cache_dir: str | None = None,
        resource_config_path: str | None = None,
        accelerate_train_mode: str | None = None,
    ):
        self._check_and_store(
            logical_device_cluster_deploy_mode=logical_device_cluster_deploy_mode,
            logical_device_id=logical_device_id,
            model_deploy_mode=model_deploy_mode,
            model_deploy_devicelist=model_deploy_devicelist,
            graph_memory_optimize_config=graph_memory_optimize_config,
            enable_graph_parallel=enable_graph_parallel,
            graph_parallel_option_path=graph_parallel_option_path,
            graph_compiler_cache_dir=graph_compiler_cache_dir,
            resource_config_path=resource_config_path,
            accelerate_train_mode=accelerate_train_mode,
        )
        _require_type(
            "ExperimentalConfig",
            "graph_memory_optimize_config",
            graph_memory_optimize_config,
            GraphMemoryOptimizeConfig,
        )


class NpuExecutePlacement(enum.Enum):
    """Where ``npu_variable_scope`` asks variables to be placed."""

    ALL = "all"
    CUBE = "cube"
    VECTOR = "vector"
    TAISHAN = "taishan"
    DVPP = "dvpp"
    HOST = "host"


def _require_type(owner: str, name: str, value: object, cls: type, says: str = "") -> None:
    """``ValueError`` unless ``value`` is ``None`` or a ``cls``; ``says`` is the adapter's text."""
    if value is not None and not isinstance(value, cls):
        fix = f"{name} must be a {cls.__name__} instance or None; build it with {cls.__name__}(...)"
        raise ValueError(f"{owner}({name}={value!r}): {adapter_says(says, fix) if says else fix}")


# -- NPURunConfig ------------------------------------------------------------------------------

_RUN_CONFIG_ARGUMENTS = _run_config.NPU_RUN_CONFIG_PASSES
"""Arguments passed on to ``tf.estimator.RunConfig``."""

_PUBLIC_ATTRIBUTES = frozenset(
    {
        "iterations_per_loop",
        "mix_compile_mode",
        "enable_data_pre_proc",
        "is_tailing_optimization",
        "variable_format_optimize",
        "horovod_mode",
        "graph_run_mode",
        "op_debug_level",
        "enable_scope_fusion_passes",
        "enable_exception_dump",
        "topo_sorting_mode",
        "aoe_config_file",
        "insert_op_file",
        "stream_sync_timeout",
        "event_sync_timeout",
    }
)
"""NPU arguments the real class stores under their own name; the others get a ``_`` prefix."""

_ADAPTER_TYPE_MESSAGES = {"dump_config": "`dump_config` must be provided with type `DumpConfig`"}
"""The adapter's ``ValueError`` text for a config object of the wrong type, where known."""

_CONFIG_OBJECT_TYPES: Mapping[str, type] = {
    "profiling_config": ProfilingConfig,
    "dump_config": DumpConfig,
    "dynamic_input_config": DynamicInputConfig,
    "memory_config": MemoryConfig,
    "experimental_config": ExperimentalConfig,
}


class DistributeConfig(NamedTuple):
    """What ``tf.contrib.distribute.DistributeConfig`` was: passed as ``experimental_distribute``
    to ``RunConfig`` in parameter-server mode."""

    train_distribute: Any = None
    eval_distribute: Any = None
    remote_cluster: Any = None


def _parameter_server_types() -> tuple[type, ...]:
    return (
        tf.compat.v1.distribute.experimental.ParameterServerStrategy,
        tf.distribute.experimental.ParameterServerStrategy,
    )


def _tf_config_has_cluster() -> bool:
    text = os.environ.get("TF_CONFIG", "")
    try:
        tf_config = json.loads(text) if text else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"environment variable TF_CONFIG is not valid JSON ({exc})") from None
    return bool(tf_config.get("cluster")) if isinstance(tf_config, dict) else False


class NPURunConfig(tf.compat.v1.estimator.RunConfig):  # type: ignore[misc]
    """``tf.estimator.RunConfig`` with the NPU options of the Ascend TF Adapter.

    Arguments not consumed by ``RunConfig`` are ``NpuOptimizer`` ``parameter_map`` keys of the
    same name, or config objects (:class:`ProfilingConfig`, :class:`DumpConfig`,
    :class:`DynamicInputConfig`, :class:`MemoryConfig`, :class:`ExperimentalConfig`).
    Differences from ``RunConfig``: ``save_summary_steps`` defaults to 0, and
    ``save_checkpoints_steps`` becomes 100 when neither it nor ``save_checkpoints_secs`` is set.

    :meth:`npu_options` returns the resolved, validated :class:`NpuOptions`.
    """

    def __init__(
        self,
        iterations_per_loop: int = 1,
        profiling_config: ProfilingConfig | None = None,
        model_dir: str | None = None,
        tf_random_seed: int | None = None,
        save_summary_steps: int = 0,
        save_checkpoints_steps: int | None = None,
        save_checkpoints_secs: int | None = None,
        session_config: Any = None,
        keep_checkpoint_max: int = 5,
        keep_checkpoint_every_n_hours: int = 10000,
        log_step_count_steps: int = 100,
        distribute: Any = None,
        enable_data_pre_proc: bool = True,
        precision_mode: str | None = None,
        enable_reduce_precision: bool = False,
        variable_format_optimize: bool | None = None,
        mix_compile_mode: bool = False,
        hcom_parallel: bool = True,
        graph_memory_max_size: int | str | None = None,
        variable_memory_max_size: int | str | None = None,
        dump_config: DumpConfig | None = None,
        stream_max_parallel_num: str | None = None,
        is_tailing_optimization: bool = False,
        horovod_mode: bool = False,
        graph_run_mode: int = 1,
        op_debug_level: int | None = None,
        enable_scope_fusion_passes: str | None = None,
        enable_exception_dump: int = 2,
        op_select_implmode: str | None = None,
        optypelist_for_implmode: str | None = None,
        dynamic_input_config: DynamicInputConfig | None = None,
        aoe_mode: str | None = None,
        work_path: str | None = None,
        buffer_optimize: str = "l2_optimize",
        enable_small_channel: int = 0,
        fusion_switch_file: str | None = None,
        enable_compress_weight: bool = False,
        compress_weight_conf: str | None = None,
        op_compiler_cache_mode: str | None = None,
        op_compiler_cache_dir: str | None = None,
        debug_dir: str | None = None,
        hcom_multi_mode: bool = False,
        dynamic_input: bool | None = None,
        dynamic_graph_execute_mode: str = "dynamic_execute",
        dynamic_inputs_shape_range: str | None = None,
        train_distribute: Any = None,
        eval_distribute: Any = None,
        local_rank_id: int | None = None,
        local_device_list: str | None = None,
        session_device_id: int | None = None,
        distribute_config: str | None = None,
        modify_mixlist: str | None = None,
        op_precision_mode: str | None = None,
        device_type: str = "default_device_type",
        soc_config: str | None = None,
        hccl_timeout: int | None = None,
        op_wait_timeout: int | None = None,
        op_execute_timeout: int | None = None,
        HCCL_algorithm: str | None = None,
        customize_dtypes: str | None = None,
        op_debug_config: str | None = None,
        memory_config: MemoryConfig | None = None,
        experimental_config: ExperimentalConfig | None = None,
        topo_sorting_mode: int | None = None,
        aoe_config_file: str | None = None,
        insert_op_file: str | None = None,
        stream_sync_timeout: int = -1,
        event_sync_timeout: int = -1,
        external_weight: bool = False,
        deterministic: int = 0,
        frozen_variable: bool = False,
        variable_placement: str = "Device",
        jit_compile: str = "auto",
        precision_mode_v2: str | None = None,
        ac_parallel_enable: str | None = None,
        quant_dumpable: str | None = None,
        input_fusion_size: int = 131072,
        compile_dynamic_mode: bool | None = None,
        graph_max_parallel_model_num: int = 1,
        export_compile_stat: int = 1,
        aicore_num: str | None = None,
        oo_constant_folding: bool = True,
        input_batch_cpy: bool = False,
        shape_generalization_mode: str = "STRICT",
        all_tensor_not_empty: bool = False,
        auto_multistream_parallel_mode: str | None = None,
        oo_level: str = "O3",
        optimization_switch: str | None = None,
        auto_tune_mode: str | None = None,
        mstune_mode: str | None = None,
    ) -> None:
        arguments = {name: value for name, value in locals().items() if name in _PARAMETERS}
        _check_arguments(arguments)
        in_cluster = _tf_config_has_cluster()
        _check_distribute(distribute, mix_compile_mode, in_cluster)
        npu = {n: v for n, v in arguments.items() if n not in _RUN_CONFIG_ARGUMENTS}
        del npu["distribute"]
        for name, value in npu.items():
            setattr(self, name if name in _PUBLIC_ATTRIBUTES else "_" + name, value)
        self._npu_arguments = npu
        self.npu_options()  # validate every option now, at the boundary
        if save_checkpoints_steps is None and save_checkpoints_secs is None:
            save_checkpoints_steps = 100
        experimental_distribute = None
        if in_cluster:
            experimental_distribute = DistributeConfig(distribute, distribute, None)
        super().__init__(
            model_dir=model_dir,
            tf_random_seed=tf_random_seed,
            save_summary_steps=save_summary_steps,
            save_checkpoints_steps=save_checkpoints_steps,
            save_checkpoints_secs=save_checkpoints_secs,
            session_config=session_config,
            keep_checkpoint_max=keep_checkpoint_max,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            log_step_count_steps=log_step_count_steps,
            experimental_distribute=experimental_distribute,
            train_distribute=train_distribute,
            eval_distribute=eval_distribute,
        )

    @property
    def npu_arguments(self) -> dict[str, object]:
        """The NPU arguments that differ from their defaults, as ``from_run_config`` takes them."""
        return {
            name: value
            for name, value in self._npu_arguments.items()
            if not _is_default(name, value)
        }

    def npu_options(self, env: Mapping[str, str] | None = None) -> NpuOptions:
        """The NPU options this config sets, resolved and validated.

        Args:
            env: environment variables for :class:`tf2npu.config.options.EnvSettings`
                (none by default).

        Raises:
            tf2npu.errors.ConfigError: an invalid value or combination.
        """
        return resolve(run_config=self.npu_arguments, env=env)


def _is_default(name: str, value: object) -> bool:
    default = _PARAMETERS[name].default
    return value is default or (type(value) is type(default) and value == default)


def _check_arguments(arguments: Mapping[str, Any]) -> None:
    """The checks the real constructor makes, with the same exception types."""
    where = "NPURunConfig(...)"
    check_positive_integer(arguments["iterations_per_loop"], "iterations_per_loop", where)
    mix = arguments["mix_compile_mode"]
    if not isinstance(mix, bool):
        raise TypeError(
            f"{where}: 'mix_compile_mode' = {mix!r} ({type(mix).__name__}) is not a bool; "
            "give True or False"
        )
    iterations = arguments["iterations_per_loop"]
    if mix and iterations != 1:
        raise ValueError(
            f"{where}: 'iterations_per_loop' = {iterations} cannot be used with "
            "mix_compile_mode=True; set iterations_per_loop=1 or mix_compile_mode=False"
        )
    jit = arguments["jit_compile"]
    if not isinstance(jit, str):
        raise TypeError(
            f"{where}: 'jit_compile' = {jit!r} ({type(jit).__name__}) is not a str; "
            "give 'true', 'false' or 'auto'"
        )
    if not isinstance(arguments["horovod_mode"], bool):
        raise ValueError(
            f"{where}: 'horovod_mode' = {arguments['horovod_mode']!r} is not a bool; "
            "give True or False"
        )
    check_nonnegative_integer(arguments["graph_run_mode"], "graph_run_mode", where)
    if arguments["graph_run_mode"] > 1:
        raise ValueError(
            f"{where}: 'graph_run_mode' = {arguments['graph_run_mode']} is out of range; "
            "give 0 (inference) or 1 (training)"
        )
    check_nonnegative_integer(arguments["enable_exception_dump"], "enable_exception_dump", where)
    for name, cls in _CONFIG_OBJECT_TYPES.items():
        says = _ADAPTER_TYPE_MESSAGES.get(name, "")
        _require_type("NPURunConfig", name, arguments[name], cls, says)


def _check_distribute(distribute: object, mix_compile_mode: bool, in_cluster: bool) -> None:
    is_ps = isinstance(distribute, _parameter_server_types())
    if in_cluster != is_ps:
        raise ValueError(
            f"NPURunConfig(distribute={distribute!r}): TF_CONFIG "
            f"{'has' if in_cluster else 'has no'} 'cluster'; parameter-server mode needs both "
            "a TF_CONFIG cluster and distribute=ParameterServerStrategy(), other modes neither"
        )
    if in_cluster and not mix_compile_mode:
        raise ValueError(
            "NPURunConfig(mix_compile_mode=False): TF_CONFIG has a 'cluster' (parameter-server "
            "mode), which requires mix_compile_mode=True"
        )


_PARAMETERS = {
    name: param
    for name, param in inspect.signature(NPURunConfig.__init__).parameters.items()
    if name != "self"
}


# -- session-config decorator (latest adapter) -------------------------------------------------


def set_npu_default_config(
    func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Move ``func``'s ``config`` argument into ``kwargs``, normalised for the NPU.

    ``func`` is a method (its first parameter is ``self``, not in ``args``). The config (a new
    ``ConfigProto`` if none was given) gets an ``NpuOptimizer`` custom optimizer if it has none
    (then also ``memory_optimization`` off), ``allow_soft_placement=True``,
    ``log_device_placement=False``, ``remapping`` off and XLA JIT off.
    """
    names = list(inspect.signature(func).parameters)[1:]
    if "config" not in names:
        raise TypeError(f"{func.__qualname__} has no 'config' parameter to set")
    index = names.index("config")
    config = kwargs.get("config")
    if config is None and len(args) > index:
        config = args[index]
    if len(args) > index:
        args = args[:index] + args[index + 1 :]
    kwargs["config"] = npu_session_config(config)
    return args, kwargs


def decorator_tf_session(func: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a session-like ``__init__(self, ..., config=None, ...)`` to normalise ``config``."""

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = set_npu_default_config(func, args, kwargs)
        return func(self, *args, **kwargs)

    wrapper.__wrapped__ = func  # type: ignore[attr-defined]
    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper

"""Every ``NpuOptimizer`` ``parameter_map`` key as data, and the resolved :class:`NpuOptions`.

The table holds the real names, ``AttrValue`` field kinds (``b``/``i``/``s``) and absent defaults
of the Ascend adapter (anchor Feb 2021 and latest). ``default=None`` means the adapter leaves the
key unset. Each row says whether our CPU graph engine / runtime acts on the option
(:attr:`Effect.HONOURED`) or accepts, validates and records it only (:attr:`Effect.NO_EFFECT_HERE`,
with the reason in ``note``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal

from tf2npu.config import checks, dump_steps, profiling

Kind = Literal["b", "i", "s"]
Value = bool | int | str
Allowed = tuple[Value, ...] | Callable[[object], "str | None"] | None


class Effect(enum.Enum):
    """Whether an option changes what tf2npu does."""

    HONOURED = "honoured"
    """The graph engine or runtime acts on the value."""
    NO_EFFECT_HERE = "no effect here"
    """Accepted, validated and recorded; it means nothing off the device."""


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One ``parameter_map`` key."""

    name: str
    kind: Kind
    default: Value | None
    allowed: Allowed
    effect: Effect
    note: str
    adapter_message: str = ""
    """The adapter's own message for a value outside a tuple ``allowed`` ("" if it has none)."""

    def check(self, value: object) -> str | None:
        """``None`` when ``value`` is allowed, else the fix to tell the user."""
        if self.allowed is None:
            return None
        if isinstance(self.allowed, tuple):
            if value in self.allowed and type(value) is type(self.allowed[0]):
                return None
            fix = "use one of: " + ", ".join(repr(a) for a in self.allowed)
            return checks.adapter_says(self.adapter_message, fix) if self.adapter_message else fix
        return self.allowed(value)


def _on(
    name: str, kind: Kind, default: Value | None, allowed: Allowed, note: str, says: str = ""
) -> OptionSpec:
    return OptionSpec(name, kind, default, allowed, Effect.HONOURED, note, says)


def _off(name: str, kind: Kind, default: Value | None, allowed: Allowed, why: str) -> OptionSpec:
    return OptionSpec(name, kind, default, allowed, Effect.NO_EFFECT_HERE, why)


PRECISION_MODES = (
    "force_fp32",
    "allow_fp32_to_fp16",
    "force_fp16",
    "must_keep_origin_dtype",
    "allow_mix_precision",
    "cube_fp16in_fp32out",
    "allow_mix_precision_fp16",
    "allow_mix_precision_bf16",
    "allow_fp32_to_bf16",
)
"""``precision_mode`` values the latest adapter validates."""
PRECISION_MODES_V2 = (
    "fp16",
    "origin",
    "cube_fp16in_fp32out",
    "mixed_float16",
    "mixed_bfloat16",
    "cube_hif8",
    "mixed_hif8",
)
MIX_PRECISION_MODES = (
    "allow_mix_precision",
    "allow_mix_precision_fp16",
    "allow_mix_precision_bf16",
)
MIX_PRECISION_MODES_V2 = ("mixed_float16", "mixed_bfloat16", "mixed_hif8")

_DEVICE = "device kernel selection; the CPU runs TensorFlow's kernels"
_MEMORY = "device memory sizing"
_BUILD = "operator / graph build on the device (GE)"
_HCCL = "collective communication on the device (HCCL)"
_TUNE = "device tuning (AOE / mstune)"
_INFER = "offline / dynamic-shape inference on the device"
_DEPLOY = "multi-device deployment"
_IN_OUT_PAIR = (
    "explicit offload ranges are not implemented: placement picks the device part by op "
    "support and mix_compile_mode, whatever the range"
)

_ADAPTER = (
    _off(
        "use_off_line",
        "b",
        True,
        None,
        "every NpuOptimizer session runs through the graph engine here, also with False; "
        "`tf2npu run --no-npu` runs the script stock",
    ),
    _on("enable_data_pre_proc", "b", False, None, "tf.data tail + GetNext go into the device part"),
    _on("mix_compile_mode", "b", False, None, "mixed compute: several GeOps, host ops stay host"),
    _on("iterations_per_loop", "i", 1, checks.at_least(1), "steps per sess.run"),
    _off("lower_functional_ops", "b", False, None, "function bodies are first-class in our IR"),
    _off("job", "s", "localhost", None, "parameter-server deployment"),
    _off("task_index", "i", 0, checks.at_least(0), "parameter-server deployment"),
    _off("local_rank_id", "i", -1, checks.between(0, 7), "one process feeding several devices"),
    _off("local_device_list", "s", "", checks.device_list, "one process feeding several devices"),
    _off("in_out_pair_flag", "b", True, None, "only qualifies in_out_pair, which has no effect"),
    _off("in_out_pair", "s", "", None, _IN_OUT_PAIR),
    _on("variable_placement", "s", "Device", ("Device", "Host"), "Host keeps variables on host"),
    _off("frozen_variable", "b", False, None, _INFER),
    _off("graph_max_parallel_model_num", "i", 1, checks.at_least(1), _INFER),
    _off("compile_dynamic_mode", "b", False, None, _BUILD),
    _off("shape_generalization_mode", "s", "STRICT", ("STRICT", "FULL", "ADAPTIVE"), _BUILD),
    _off("experimental_accelerate_train_mode", "s", "", None, "device low-precision training"),
    _off("min_group_size", "b", None, None, "written by NPUEstimator, never read"),
    _off("session_device_id", "i", -1, checks.at_least(0), "device selection"),
    _on("deterministic", "i", 0, (0, 1), "TF op determinism (docs/verify.md)"),
    _off("device_type", "s", "default_device_type", None, "undocumented GE device type"),
)

_PRECISION = (
    _on("precision_mode", "s", None, PRECISION_MODES, "dtype policy of the precision pass"),
    _on("precision_mode_v2", "s", None, PRECISION_MODES_V2, "newer spelling of precision_mode"),
    _off("enable_reduce_precision", "b", None, None, "written by NPURunConfig, unused"),
    _on("modify_mixlist", "s", "", None, "JSON edits of the mixed-precision lists"),
    _off("customize_dtypes", "s", "", None, "per-op dtype override files are not implemented"),
    _off(
        "op_select_implmode",
        "s",
        None,
        (
            "high_precision",
            "high_performance",
            "high_precision_for_all",
            "high_performance_for_all",
        ),
        _DEVICE,
    ),
    _off("optypelist_for_implmode", "s", "", None, _DEVICE),
    _off("op_precision_mode", "s", "", None, _DEVICE),
)

_DEBUG = (
    _on("enable_dump", "b", False, None, "dump op tensors per step"),
    _on(
        "dump_path",
        "s",
        "",
        None,
        "dump directory: must exist, readable and writable (relative = to the working directory)",
    ),
    _on("dump_step", "s", "", dump_steps.check, "steps to dump ('' = all)"),
    _on(
        "dump_mode",
        "s",
        "output",
        ("input", "output", "all"),
        "which side of each op to dump",
        says="dump mode should be one of the list:[input, output, all]",
    ),
    _on("enable_dump_debug", "b", False, None, "overflow (inf/nan) detection dump"),
    _on(
        "dump_debug_mode",
        "s",
        "all",
        ("aicore_overflow", "atomic_overflow", "all"),
        "overflow detection mode",
        says="dump debug mode should be one of the list:[aicore_overflow, atomic_overflow, all]",
    ),
    _on(
        "dump_data",
        "s",
        "tensor",
        ("tensor", "stats"),
        "tensor: one .npy per tensor; stats: one CSV row of statistics per tensor",
        says="dump_data should be 'tensor' or 'stats'.",
    ),
    _on("dump_layer", "s", "", None, "space-separated op names to dump ('' = all ops)"),
    _off("quant_dumpable", "s", "", ("", "0", "1"), _INFER),
    _off("enable_exception_dump", "i", 2, (0, 1, 2), "device exception dumps"),
    _off("op_debug_level", "i", None, checks.between(0, 4), _BUILD),
    _off("op_debug_config", "s", "", None, _BUILD),
    _off("debug_dir", "s", "", None, _BUILD),
    _off("export_compile_stat", "i", 1, (0, 1, 2), _BUILD),
    _on("fusion_switch_file", "s", "", None, "turns fusion rules off / on"),
    _off("enable_scope_fusion_passes", "s", "", None, "scope fusion passes run in GE"),
    _off("buffer_optimize", "s", "l2_optimize", ("l2_optimize", "off_optimize"), "device L2"),
    _off("enable_small_channel", "i", 0, (0, 1), _DEVICE),
)

_PROFILING = (
    _on(
        "profiling_mode",
        "b",
        False,
        None,
        "per-op profile of the runs from TF step stats (docs/profile.md; `tf2npu profile`)",
    ),
    _on(
        "profiling_options",
        "s",
        "",
        profiling.check_options_text,
        "JSON: output, training_trace, task_trace/task_time, fp_point, bp_point honoured; "
        "device collectors (aic_metrics, l2, ...) recorded as no effect here",
    ),
)

_BUILD_OPTIONS = (
    _on("graph_run_mode", "i", 1, (0, 1), "0 inference, 1 training (default precision mode)"),
    _off("variable_format_optimize", "b", None, None, "device tensor formats"),
    _off("op_compiler_cache_mode", "s", "", ("enable", "force", "disable"), _BUILD),
    _off("op_compiler_cache_dir", "s", "", None, _BUILD),
    _off("jit_compile", "s", "auto", ("true", "false", "auto"), _BUILD),
    _off("oo_constant_folding", "b", True, None, _BUILD),
    _off("oo_level", "s", "O3", None, _BUILD),
    _off("optimization_switch", "s", "", None, _BUILD),
    _off("aicore_num", "s", "", None, _BUILD),
    _off("topo_sorting_mode", "i", None, None, _BUILD),
    _off("insert_op_file", "s", None, None, _INFER),
    _off("soc_config", "s", "", None, _BUILD),
    _off("enable_compress_weight", "b", False, None, _INFER),
    _off("compress_weight_conf", "s", "", None, _INFER),
    _off("external_weight", "b", False, None, _BUILD),
    _off("stream_max_parallel_num", "s", "", None, "device streams"),
    _off("ac_parallel_enable", "s", "", ("", "0", "1"), "device streams"),
    _off("auto_multistream_parallel_mode", "s", "", None, "device streams"),
    _off("all_tensor_not_empty", "b", False, None, _BUILD),
    _off("input_fusion_size", "i", 131072, None, "host-to-device copies"),
    _off("input_batch_cpy", "b", False, None, "host-to-device copies"),
    _off("is_tailing_optimization", "b", False, None, _HCCL),
    _off("hcom_parallel", "b", True, None, _HCCL),
    _off("hcom_multi_mode", "b", False, None, _HCCL),
    _off("HCCL_algorithm", "s", "", None, _HCCL),
    _on(
        "hccl_timeout",
        "i",
        None,
        checks.at_least(1),
        "how long a rank waits for the others, seconds (here: each run)",
    ),
    _off("op_wait_timeout", "i", None, None, "device timeouts"),
    _off("op_execute_timeout", "i", None, None, "device timeouts"),
    _off("stream_sync_timeout", "i", -1, None, "device timeouts"),
    _off("event_sync_timeout", "i", -1, None, "device timeouts"),
    _off("graph_exec_timeout", "i", 600000, None, "device timeouts"),
    _off("distribute_config", "s", "", None, _TUNE),
)

_MEMORY_OPTIONS = (
    _off("graph_memory_max_size", "s", "", checks.byte_count, _MEMORY),
    _off("variable_memory_max_size", "s", "", checks.byte_count, _MEMORY),
    _off("atomic_clean_policy", "i", 0, (0, 1), _MEMORY),
    _off("static_memory_policy", "i", 0, (0, 1, 2, 3, 4), _MEMORY),
    _off("memory_optimization_policy", "s", "", None, _MEMORY),
    _off("variable_use_1g_huge_page", "i", 0, (0, 1, 2), _MEMORY),
    _off("graph_slice", "s", "", ("auto", "manual"), _MEMORY),
)

_TUNING = (
    _off("auto_tune_mode", "s", "", checks.tune_modes, _TUNE),
    _off("mstune_mode", "s", "", ("1", "2", "3", "4"), _TUNE),
    _off("aoe_mode", "s", None, ("1", "2", "4"), _TUNE),
    _off("work_path", "s", "./", None, _TUNE),
    _off("aoe_config_file", "s", "", None, _TUNE),
)

_DYNAMIC = (
    _off("input_shape", "s", "", None, _INFER),
    _off("dynamic_dims", "s", "", None, _INFER),
    _off("dynamic_node_type", "i", -1, (0, 1), _INFER),
    _off("compile_hybrid_mode", "i", None, (0, 1), _INFER),
    _on(
        "dynamic_input",
        "b",
        False,
        None,
        "marks the graph dynamic-shape: v1 control flow on the device is then an error, as on "
        "the device (docs/placement.md); TensorFlow runs any shape here",
    ),
    _on(
        "dynamic_graph_execute_mode",
        "s",
        "dynamic_execute",
        ("dynamic_execute", "lazy_recompile"),
        "with dynamic_input: lazy_recompile compiles one static graph per input shape, so v1 "
        "control flow is allowed (docs/placement.md)",
    ),
    _off("dynamic_inputs_shape_range", "s", "", None, "we run TensorFlow, shapes are dynamic"),
)

_EXPERIMENTAL = (
    _off("experimental_logical_device_cluster_deploy_mode", "s", "LB", ("LB", "SINGLE"), _DEPLOY),
    _off("experimental_logical_device_id", "s", "", None, _DEPLOY),
    _off("experimental_model_deploy_mode", "s", "", None, _DEPLOY),
    _off("experimental_model_deploy_devicelist", "s", "", None, _DEPLOY),
    _off("graph_compiler_cache_dir", "s", "", None, _BUILD),
    _off("resource_config_path", "s", "", None, _DEPLOY),
    _off("graph_parallel_option_path", "s", "", None, _DEPLOY),
    _off("enable_graph_parallel", "b", None, None, _DEPLOY),
)

ROWS: tuple[OptionSpec, ...] = (
    *_ADAPTER,
    *_PRECISION,
    *_DEBUG,
    *_PROFILING,
    *_BUILD_OPTIONS,
    *_MEMORY_OPTIONS,
    *_TUNING,
    *_DYNAMIC,
    *_EXPERIMENTAL,
)
"""Every ``parameter_map`` key, grouped as in the reference (§2.2)."""
OPTIONS: Mapping[str, OptionSpec] = MappingProxyType({spec.name: spec for spec in ROWS})

DEFAULT_OPP_PATH = "/usr/local/Ascend/opp"


@dataclass(frozen=True, slots=True)
class EnvSettings:
    """Environment variables the adapter reads that matter to the engine and runtime."""

    print_model: bool = False
    """``PRINT_MODEL=1``: write ``BeforeSubGraph_*/AfterSubGraph_*`` dumps."""
    force_v2_control: bool = False
    """``ENABLE_FORCE_V2_CONTROL``: convert v1 control flow."""
    rank_size: int = 1
    """``RANK_SIZE``: more than 1 switches on allreduce / broadcast."""
    rank_id: int = 0
    """``RANK_ID`` (or ``POD_NAME``)."""
    device_id: int = 0
    """``ASCEND_DEVICE_ID`` (preferred) or ``DEVICE_ID``."""
    opp_path: str = DEFAULT_OPP_PATH
    """``ASCEND_OPP_PATH``: where a vendor ``npu_supported_ops.json`` is looked for."""
    dump_ge_graph: int = 0
    """``DUMP_GE_GRAPH`` (1-3): write each compiled graph; here as the graph JSON of its GeOps
    (what ``atc --mode=5`` would make of GE's ``ge_proto_*_Build.txt``)."""
    dump_graph_path: str = ""
    """``DUMP_GRAPH_PATH``: where those graphs go ("" = the working directory)."""


@dataclass(frozen=True, slots=True)
class NpuOptions:
    """Resolved options. Typed fields hold the honoured ones; ``other`` holds the rest.

    Build it with :meth:`from_values` (defaults come from :data:`OPTIONS`, nowhere else).
    """

    enable_data_pre_proc: bool = False
    mix_compile_mode: bool = False
    iterations_per_loop: int = 1
    variable_placement: str = "Device"
    precision_mode: str | None = None
    precision_mode_v2: str | None = None
    modify_mixlist: str = ""
    enable_dump: bool = False
    dump_path: str = ""
    dump_step: str = ""
    dump_mode: str = "output"
    enable_dump_debug: bool = False
    dump_debug_mode: str = "all"
    dump_data: str = "tensor"
    dump_layer: str = ""
    profiling_mode: bool = False
    profiling_options: str = ""
    fusion_switch_file: str = ""
    graph_run_mode: int = 1
    deterministic: int = 0
    dynamic_input: bool = False
    dynamic_graph_execute_mode: str = "dynamic_execute"
    hccl_timeout: int | None = None
    other: Mapping[str, Value | None] = field(default_factory=lambda: MappingProxyType({}))
    """Options with no effect here, by name (absent ones hold their default)."""
    explicit: frozenset[str] = frozenset()
    """Names the user set (in any source)."""
    env: EnvSettings = EnvSettings()
    unknown: tuple[str, ...] = ()
    """``parameter_map`` keys that are no option, ignored as the adapter ignores them (sorted)."""

    @classmethod
    def from_values(
        cls,
        values: Mapping[str, Value],
        env: EnvSettings | None = None,
        unknown: Iterable[str] = (),
    ) -> NpuOptions:
        """Options from already type-checked ``values``; absent keys take the table default."""
        typed = typed_field_names()
        kwargs: dict[str, Any] = {}
        other: dict[str, Value | None] = {}
        for name, spec in OPTIONS.items():
            value = values.get(name, spec.default)
            if name in typed:
                kwargs[name] = value
            else:
                other[name] = value
        return cls(
            **kwargs,
            other=MappingProxyType(other),
            explicit=frozenset(values),
            env=env or EnvSettings(),
            unknown=tuple(sorted(unknown)),
        )

    def get(self, name: str) -> Value | None:
        """The value of any option by its ``parameter_map`` name."""
        if name in self.other:
            return self.other[name]
        if name in OPTIONS:
            value: Value | None = getattr(self, name)
            return value
        raise KeyError(name)

    @property
    def no_effect(self) -> tuple[str, ...]:
        """Names the user set that have no effect here, sorted."""
        return tuple(n for n in sorted(self.explicit) if OPTIONS[n].effect is Effect.NO_EFFECT_HERE)

    @property
    def effective_precision_mode(self) -> str:
        """The precision policy the engine applies.

        ``precision_mode_v2`` wins when given; unset means the anchor rule (and the migration
        tool's default, seed 004): ``allow_fp32_to_fp16`` for training, ``force_fp16`` for
        inference (``graph_run_mode=0``).
        """
        if self.precision_mode_v2 is not None:
            return self.precision_mode_v2
        if self.precision_mode is not None:
            return self.precision_mode
        return "allow_fp32_to_fp16" if self.graph_run_mode == 1 else "force_fp16"

    @property
    def is_mixed_precision(self) -> bool:
        """Whether a mixed-precision mode (with black/white/gray lists) is selected."""
        return (
            self.precision_mode in MIX_PRECISION_MODES
            or self.precision_mode_v2 in MIX_PRECISION_MODES_V2
        )


def typed_field_names() -> frozenset[str]:
    """Names of the options that are typed fields of :class:`NpuOptions` (the honoured ones)."""
    return frozenset(f.name for f in fields(NpuOptions)) - {"other", "explicit", "env", "unknown"}

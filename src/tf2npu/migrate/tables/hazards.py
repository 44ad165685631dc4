"""Known Ascend hazards as data: what triggers each one, how bad it is, what to say and what to do.

Each :class:`Hazard` row is one kind of finding of the ``hazards`` rule. Its ``id`` is stable:
reports, docs and users' scripts rely on it. A finding carries ``rule="hazards"`` and its message
starts with the id in brackets, so the id shows in every report format and can be grepped::

    [lookup_table_in_pipeline] lookup table `table` (tf.lookup.StaticHashTable, line 50) is used ...

The rule (:mod:`tf2npu.migrate.rules.hazards`) holds only the detection logic that a table cannot
express (which function a ``Dataset.map`` runs, whether a loop declares unknown dimensions, ...);
the trigger API sets, texts and severities live here. Message and fix texts are ``str.format``
templates; the fields in braces are filled by the detection that fires the row.

Sources: the vendor's case notes (seed 000 cases 01-04, seed 003 on mixed compute, seed 004 on
precision modes) and the adapter reference (§3 graph partitioning, §3.7 dataset offload).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from tf2npu.migrate.model import Severity


@dataclass(frozen=True, slots=True)
class Hazard:
    """One kind of hazard finding."""

    id: str
    severity: Severity
    message: str
    fix: str
    apis: frozenset[str] = frozenset()
    """Canonical API names that trigger it (empty when the trigger is not a call to an API)."""
    when: str = ""
    """The condition besides the trigger (documentation)."""
    applied: bool = False
    """The tool applied the fix itself: the finding says what it changed (the terminal summary
    lists these under "Fixes applied", whatever their severity)."""


def _apis(*names: str) -> frozenset[str]:
    return frozenset(names)


# -- trigger sets ---------------------------------------------------------------------------

LOOKUP_TABLE_APIS = _apis(
    "tf.lookup.StaticHashTable", "tf.lookup.StaticVocabularyTable",
    "tf.lookup.experimental.DenseHashTable", "tf.lookup.experimental.MutableHashTable",
    "tf.contrib.lookup.HashTable", "tf.contrib.lookup.MutableHashTable",
    "tf.contrib.lookup.MutableDenseHashTable", "tf.contrib.lookup.IdTableWithHashBuckets",
    "tf.contrib.lookup.index_table_from_file", "tf.contrib.lookup.index_table_from_tensor",
    "tf.contrib.lookup.index_to_string_table_from_file",
    "tf.contrib.lookup.index_to_string_table_from_tensor",
    "tf.contrib.lookup.string_to_index_table_from_file",
    "tf.contrib.lookup.string_to_index_table_from_tensor",
    "tf.contrib.lookup.string_to_index", "tf.contrib.lookup.index_to_string",
    # Vocabulary columns build a hash table when the column is transformed.
    "tf.feature_column.categorical_column_with_vocabulary_list",
    "tf.feature_column.categorical_column_with_vocabulary_file",
)  # fmt: skip
"""Calls that create a lookup table (resource ops HashTableV2 / LookupTableFindV2 ...)."""

VARIABLE_APIS = _apis(
    "tf.Variable", "tf.get_variable", "tf.get_local_variable", "tf.keras.backend.variable",
    "tf.contrib.framework.variable", "tf.contrib.framework.model_variable",
    "tf.contrib.framework.local_variable",
)  # fmt: skip
"""Calls that create a variable."""

PY_FUNC_OPS: MappingProxyType[str, str] = MappingProxyType({
    "tf.py_func": "PyFunc",
    "tf.numpy_function": "PyFunc",
    "tf.contrib.framework.py_func": "PyFunc",
    "tf.py_function": "EagerPyFunc",
    "tf.contrib.eager.py_func": "EagerPyFunc",
})  # fmt: skip
"""Python-calling APIs and the op each creates (``stateful=False`` makes PyFuncStateless)."""

PY_FUNC_STATEFUL_POSITION: MappingProxyType[str, int] = MappingProxyType({
    "tf.py_func": 3,
    "tf.contrib.framework.py_func": 5,
})  # fmt: skip
"""Where ``stateful`` goes positionally, for the APIs that take it."""

PY_FUNC_STATELESS_OP = "PyFuncStateless"
PY_FUNC_ALTERNATIVES: MappingProxyType[str, str] = MappingProxyType({
    PY_FUNC_STATELESS_OP: (
        "drop stateful=False, so that it creates PyFunc, which the offload keeps on the host"
    ),
    "EagerPyFunc": (
        "use tf.numpy_function or tf.py_func (op PyFunc, which the offload keeps on the host)"
    ),
})  # fmt: skip
"""How to get a pipeline-safe PyFunc instead of each op the dataset offload may move."""

NPU_RUN_CONFIG = "NPURunConfig"
RUN_CONFIG_PREFIXES = ("tf.estimator.", "tf.contrib.tpu.", "tf.contrib.learn.")
"""Callee prefixes of the APIs that become an NPURunConfig (enable_data_pre_proc=True) after
migration: Estimators, their run configs, TPUEstimator."""

PIPELINE_HOST_OP = "PyFunc"
"""The only Python op on the adapter's dataset-offload black list (dp_tf_ge_conversion_pass)."""

STRING_OP_APIS = _apis(
    "tf.as_string", "tf.string_split", "tf.string_join", "tf.string_to_number",
    "tf.string_to_hash_bucket", "tf.string_to_hash_bucket_fast",
    "tf.string_to_hash_bucket_strong", "tf.substr", "tf.regex_replace", "tf.reduce_join",
    "tf.string_strip", "tf.decode_base64", "tf.encode_base64", "tf.io.decode_base64",
    "tf.io.encode_base64", "tf.dtypes.as_string",
)  # fmt: skip
STRING_OP_PREFIXES = ("tf.strings.",)
"""String ops: "gray" ops that mixed compute keeps on the host (reference §3.4)."""

V1_CONTROL_FLOW_APIS = _apis(
    "tf.while_loop", "tf.cond", "tf.case",
    # These build a tf.while_loop themselves.
    "tf.map_fn", "tf.scan", "tf.foldl", "tf.foldr", "tf.nn.dynamic_rnn",
    "tf.nn.bidirectional_dynamic_rnn", "tf.nn.raw_rnn",
)  # fmt: skip
CONTROL_FLOW_V2_SWITCHES = _apis("tf.enable_control_flow_v2", "tf.enable_v2_behavior")
"""Calls after which TF builds v2 control flow (a file calling one needs no advice)."""
FORCE_V2_CONTROL_ENV = "ENABLE_FORCE_V2_CONTROL"
WHILE_LOOP = "tf.while_loop"
SHAPE_INVARIANTS_POSITION = 3
TENSOR_SHAPE = "tf.TensorShape"

BATCH_NORM_APIS = _apis(
    "tf.layers.batch_normalization", "tf.layers.BatchNormalization",
    "tf.keras.layers.BatchNormalization", "tf.contrib.layers.batch_norm",
    "tf.contrib.slim.batch_norm", "tf.nn.fused_batch_norm",
)  # fmt: skip
"""Batch norms that build FusedBatchNormV3 in TF 1.15 (unless ``fused=False``)."""
FORWARD_COMPAT_HORIZON = "compat.forward_compatibility_horizon"
"""Suffix of the canonical name of the seed-003 workaround (``tf.compat.`` or the python path)."""

REDUCE_SUM_APIS = _apis("tf.reduce_sum", "tf.math.reduce_sum", "tf.keras.backend.sum")
FP16_MIXED_PRECISION_MODES = ("allow_mix_precision", "allow_mix_precision_fp16")
"""Precision modes that may cast a float32 ReduceSum to float16 (bf16 mode is not case 04)."""

QUEUE_INPUT_APIS = _apis(
    "tf.train.batch", "tf.train.shuffle_batch", "tf.train.batch_join",
    "tf.train.shuffle_batch_join", "tf.train.maybe_batch", "tf.train.maybe_shuffle_batch",
    "tf.train.maybe_batch_join", "tf.train.maybe_shuffle_batch_join",
    "tf.train.string_input_producer", "tf.train.input_producer",
    "tf.train.slice_input_producer", "tf.train.range_input_producer",
)  # fmt: skip
"""The queue-runner input API of TF 1.x."""

GPU_APIS_OF_DISTRIBUTE = _apis(
    "tf.config.experimental.set_memory_growth", "tf.config.experimental.get_memory_growth",
    "tf.config.experimental.set_virtual_device_configuration",
    "tf.config.experimental.VirtualDeviceConfiguration",
    "tf.config.experimental.set_visible_devices", "tf.config.set_soft_device_placement",
    "tf.GPUOptions", "tf.test.is_gpu_available", "tf.test.is_built_with_cuda",
)  # fmt: skip
"""GPU device APIs the distribute rule already reports (each use once, by that rule)."""
GPU_CONFIG_APIS = _apis("tf.config.set_visible_devices") - GPU_APIS_OF_DISTRIBUTE
GPU_QUERY_APIS = (
    _apis("tf.test.is_built_with_gpu_support", "tf.test.gpu_device_name") - GPU_APIS_OF_DISTRIBUTE
)
CONFIG_PROTO = "tf.ConfigProto"
GPU_OPTIONS_API = "tf.GPUOptions"
GPU_OPTIONS_FIELD = "gpu_options"
"""The ConfigProto field (keyword or attribute) holding GPU settings."""
GPU_ENV_VARS = frozenset({"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "TF_FORCE_GPU_ALLOW_GROWTH"})
ENVIRON = "os.environ"

EAGER_APIS = _apis(
    "tf.enable_eager_execution", "tf.contrib.eager.enable_eager_execution",
    "tf.enable_v2_behavior",
)  # fmt: skip
"""Calls that switch a TF 1.15 program to eager execution."""

CONTRIB_BATCH_NORM_APIS = _apis("tf.contrib.layers.batch_norm", "tf.contrib.slim.batch_norm")
CONTRIB_BATCH_NORM_SIGNATURE = (
    "inputs", "decay", "center", "scale", "epsilon", "activation_fn", "param_initializers",
    "param_regularizers", "updates_collections", "is_training", "reuse", "variables_collections",
    "outputs_collections", "trainable", "batch_weights", "fused", "data_format",
    "zero_debias_moving_mean", "scope", "renorm", "renorm_clipping", "renorm_decay",
    "adjustment",
)  # fmt: skip
"""tf.contrib.layers.batch_norm's parameters in TF 1.15's order (slim's is the same function)."""
BATCH_NORM_RENAMES: MappingProxyType[str, str] = MappingProxyType({
    "inputs": "inputs", "decay": "momentum", "center": "center", "scale": "scale",
    "epsilon": "epsilon", "is_training": "training", "reuse": "reuse", "trainable": "trainable",
    "fused": "fused", "scope": "name", "renorm": "renorm", "renorm_clipping": "renorm_clipping",
    "renorm_decay": "renorm_momentum", "adjustment": "adjustment",
})  # fmt: skip
"""contrib parameter -> tf.layers.batch_normalization parameter, where one maps to the other."""
BATCH_NORM_CONTRIB_DEFAULTS: MappingProxyType[str, str] = MappingProxyType({
    "decay": "0.999", "scale": "False", "is_training": "True",
})  # fmt: skip
"""contrib defaults that tf.layers does not share (momentum 0.99, scale=True, training=False):
written out in the replacement even when the call leaves them out."""
BATCH_NORM_PARAM_INITIALIZERS = ("beta", "gamma", "moving_mean", "moving_variance")
BATCH_NORM_PARAM_REGULARIZERS = ("beta", "gamma")
BATCH_NORM_UNMAPPED = (
    "variables_collections",
    "outputs_collections",
    "batch_weights",
    "zero_debias_moving_mean",
)
"""contrib parameters tf.layers.batch_normalization has no equivalent for."""
UPDATE_OPS_DEFAULT = "tf.GraphKeys.UPDATE_OPS"

# -- hazards ---------------------------------------------------------------------------------

_MIX = "--mix-compile (it writes mix_compile_mode=True into the NPU configs)"
_V2_CONTROL = (
    "if the network has dynamic shapes, convert it to v2 control flow: export "
    "ENABLE_FORCE_V2_CONTROL=1 before running, or call tf.enable_control_flow_v2() and "
    "tf.enable_resource_variables() right after `import tensorflow as tf`"
)
_V1_ERROR = (
    "'node ... is v1 control operator, which is not supported, please convert to v2 control "
    "operator'"
)
_NO_GPU = (
    "remove it once the script no longer needs to run on GPUs; GPU settings configure nothing "
    "on Ascend"
)
GPU_FIXES: MappingProxyType[str, str] = MappingProxyType({
    "allow_growth": (
        "remove it: the NPU's memory is allocated by the graph engine when the graph is "
        "compiled, never grown on demand (on CANN releases that still read them, "
        "graph_memory_max_size / variable_memory_max_size cap it)"
    ),
    "per_process_gpu_memory_fraction": (
        "remove it: the NPU's memory is allocated by the graph engine when the graph is "
        "compiled (on CANN releases that still read them, graph_memory_max_size / "
        "variable_memory_max_size cap it)"
    ),
    "TF_FORCE_GPU_ALLOW_GROWTH": (
        "remove it: the NPU's memory is allocated by the graph engine, never grown on demand"
    ),
    "visible_device_list": (
        "remove it: on Ascend a process uses the one device named by ASCEND_DEVICE_ID "
        "(or DEVICE_ID)"
    ),
    "CUDA_VISIBLE_DEVICES": (
        "remove it: on Ascend a process uses the one device named by ASCEND_DEVICE_ID "
        "(or DEVICE_ID)"
    ),
    "tf.config.set_visible_devices": (
        "remove it: on Ascend a process uses the one device named by ASCEND_DEVICE_ID "
        "(or DEVICE_ID)"
    ),
})  # fmt: skip
"""The fix for a GPU setting, by the setting's last name part; others get the general fix."""


def gpu_fix(setting: str) -> str:
    """The fix for the GPU setting ``setting`` (an API, ``ConfigProto.gpu_options.x``, a var)."""
    for key, fix in GPU_FIXES.items():
        if setting == key or setting.endswith(("." + key, "[" + repr(key) + "]")):
            return fix
    return _NO_GPU


HAZARDS: tuple[Hazard, ...] = (
    Hazard(
        "eager_execution",
        Severity.ERROR,
        "{api}() switches the script to eager execution, but the Ascend TF adapter runs TF 1.15 "
        "graphs only (sessions, Estimator, Keras in a session): eager ops would run on the host "
        "CPU, never on the NPU",
        "remove the call and build the model in graph mode (tf.Session / Estimator); for an "
        "eager TF 2 program, use the TF 2 adapter (npu_device) instead",
        EAGER_APIS,
        "always",
    ),
    Hazard(
        "lookup_table_in_pipeline",
        Severity.ERROR,
        "{what} is used in the input pipeline ({where}): in the default full-offload mode the "
        "NPU runs the table's initialisation on the device while the pipeline looks it up on "
        "the host, so training fails with 'Table not initialized'; mixed compute was not turned "
        "on because {why}",
        f"enable mixed compute with {_MIX}, which keeps the table's paired resource ops on the "
        "host; iterations_per_loop must then be 1",
        LOOKUP_TABLE_APIS,
        "a table created or read in a traced pipeline function, when mixed compute is neither "
        "asked for nor could be written by the tool",
    ),
    Hazard(
        "mix_compile_enabled",
        Severity.INFO,
        "{what} is used in the input pipeline ({where}): in the default full-offload mode the "
        "NPU would run the table's initialisation on the device while the pipeline looks it up "
        "on the host ('Table not initialized'), so tf2npu turned mixed compute on "
        "(mix_compile_mode=True) in the NPU config it writes ({lines}), the vendor's fix for "
        "this case",
        "nothing to do; keep iterations_per_loop at 1, which mixed compute requires (pass "
        "--mix-compile to ask for it explicitly)",
        LOOKUP_TABLE_APIS,
        "a table created or read in a traced pipeline function, in a file whose session or run "
        "config the tool writes",
        applied=True,
    ),
    Hazard(
        "variable_in_pipeline",
        Severity.WARNING,
        "{what} is read by the input pipeline ({where}): the pipeline runs on the host but the "
        "NPU initialises variables on the device, so reading it fails ('the variable was "
        "uninitialized' / 'Resource ... does not exist')",
        "replace the variable by a constant (a Python number or tf.constant), e.g. "
        "`batch_size = 64`",
        VARIABLE_APIS,
        "a variable created or read in a traced pipeline function, or passed to a dataset method",
    ),
    Hazard(
        "py_func_host",
        Severity.WARNING,
        "{api} runs Python (op {op}), which only the host can execute; it is not in an input "
        "pipeline function tf2npu could trace, and in the model graph the default full-offload "
        "mode cuts the graph at it and runs only the largest part on the NPU, the rest silently "
        "on the host CPU",
        f"if it is part of the model, enable mixed compute with {_MIX} or replace it with "
        "TensorFlow ops; inside a Dataset.map function it is fine",
        frozenset(PY_FUNC_OPS),
        "outside a traced input pipeline, without mixed compute",
    ),
    Hazard(
        "py_func_in_pipeline",
        Severity.INFO,
        "{api} (op PyFunc) in the input pipeline ({where}) runs on the host: the adapter's "
        "dataset offload keeps a map whose function calls PyFunc, and everything before it, on "
        "the host",
        "nothing to change; to let this map be offloaded to the device, express it in "
        "TensorFlow ops",
        frozenset(PY_FUNC_OPS),
        "inside a traced input pipeline, op PyFunc",
    ),
    Hazard(
        "py_function_in_pipeline",
        Severity.WARNING,
        "{api} creates op {op}, which the adapter's dataset offload does not treat as host-only "
        "(only PyFunc is): with enable_data_pre_proc=True (NPURunConfig's default) the map "
        "({where}) can be moved to the device, which cannot run Python",
        "{alternative}, or set enable_data_pre_proc=False",
        frozenset(PY_FUNC_OPS),
        "inside a traced input pipeline, op EagerPyFunc or PyFuncStateless; an error when the "
        "file builds an Estimator or run config (NPURunConfig writes enable_data_pre_proc=True)",
    ),
    Hazard(
        "v1_control_flow",
        Severity.INFO,
        "v1 control flow ({apis}; {lines}): fine with static shapes, but in a dynamic-shape "
        f"network the NPU rejects it with {_V1_ERROR}",
        _V2_CONTROL,
        V1_CONTROL_FLOW_APIS,
        "once per file, unless the file switches to v2 control flow",
    ),
    Hazard(
        "v1_loop_dynamic_shape",
        Severity.WARNING,
        "tf.while_loop declares shape_invariants with unknown dimensions ({invariants}): a "
        f"dynamic-shape loop in v1 control flow, which the NPU rejects with {_V1_ERROR}",
        _V2_CONTROL,
        frozenset({WHILE_LOOP}),
        "shape_invariants holding None or tf.TensorShape(None)",
    ),
    Hazard(
        "fused_batch_norm_mix_compile",
        Severity.WARNING,
        "{api} builds FusedBatchNormV3, whose fifth output (a CUDA-specific optimisation "
        "output) the NPU does not support in mixed compute mode",
        "build the model inside `with tf.compat.forward_compatibility_horizon(2019, 5, 1):` so "
        "that TF emits FusedBatchNormV2 instead{alternative}",
        BATCH_NORM_APIS,
        "with mixed compute",
    ),
    Hazard(
        "reduce_sum_fp16",
        Severity.INFO,
        "ReduceSum ({lines}) under precision_mode={mode} may be cast to float16, which the NPU "
        "cannot spread over several cores (block_dim 1 in profiling data), so it can be slow",
        "only if profiling shows a slow ReduceSum with block_dim 1: put it on the "
        'mixed-precision black list: write {{"black-list": {{"to-add": ["ReduceSumD"]}}}} '
        '(or "ReduceSum": the op type profiling names) to a JSON file and pass its path as '
        "modify_mixlist "
        "(NPURunConfig(modify_mixlist=...) or "
        'custom_op.parameter_map["modify_mixlist"].s = tf.compat.as_bytes(path))',
        REDUCE_SUM_APIS,
        "with an fp16 mixed-precision mode, unless modify_mixlist is set",
    ),
    Hazard(
        "batch_unproven",
        Severity.INFO,
        "could not prove that the receiver of .{method}() is a tf.data.Dataset, so "
        "drop_remainder=True was not added; if it is one, its partial last batch has a dynamic "
        "shape the NPU must compile again for",
        "if it is a dataset, add drop_remainder=True",
        frozenset(),
        "files that use tf.data; no drop_remainder given",
    ),
    Hazard(
        "queue_input",
        Severity.INFO,
        "queue-based input ({apis}; {lines}) is deprecated; its queues run on the host, and the "
        "adapter's input offload (enable_data_pre_proc) and iterations_per_loop > 1 need a "
        "tf.data pipeline",
        "port the input to tf.data, batching with .batch(batch_size, drop_remainder=True)",
        QUEUE_INPUT_APIS,
        "once per file",
    ),
    Hazard(
        "queue_partial_batch",
        Severity.WARNING,
        "{api}(allow_smaller_final_batch=True) gives the last batch a smaller, dynamic shape, "
        "which the NPU must compile again for",
        "use allow_smaller_final_batch=False (the default)",
        QUEUE_INPUT_APIS,
        "allow_smaller_final_batch=True",
    ),
    Hazard(
        "contrib_deprecated",
        Severity.WARNING,
        "{apis} ({lines}): tf.contrib is deprecated in TF 1.15 and gone in TF 2 (Ascend support "
        "list: {status})",
        "{replacement}",
        frozenset(),
        "tf.contrib.* APIs marked deprecated, unsupported or not listed",
    ),
    Hazard(
        "contrib_batch_norm",
        Severity.WARNING,
        "{api} (line {line}): tf.contrib is deprecated in TF 1.15 and gone in TF 2, and "
        "tf.layers.batch_normalization has other defaults (momentum 0.99, scale=True, "
        "training=False)",
        "use {replacement}{notes}",
        CONTRIB_BATCH_NORM_APIS,
        "one per call, with the call's own arguments mapped",
    ),
    Hazard(
        "contrib_replaceable",
        Severity.INFO,
        "{apis} ({lines}) runs on Ascend (support list: {status}), but tf.contrib is deprecated "
        "in TF 1.15 and gone in TF 2",
        "{replacement}",
        frozenset(),
        "other tf.contrib.* APIs with a known replacement",
    ),
    Hazard(
        "mix_compile_recommended",
        Severity.WARNING,
        "operations without full NPU support ({what}; {lines}): in the default full-offload "
        "mode they make the graph fail or run partly on the host; mixed compute keeps them on "
        "the host and the rest of the graph on the NPU",
        f"migrate with {_MIX}; iterations_per_loop must then stay 1",
        LOOKUP_TABLE_APIS | frozenset(PY_FUNC_OPS) | STRING_OP_APIS,
        "once per file, without mixed compute; INFO when only string ops are found",
    ),
    Hazard(
        "gpu_config_no_effect",
        Severity.INFO,
        "{api} configures GPUs and has no effect on Ascend",
        "{fix}",
        GPU_CONFIG_APIS,
        "ConfigProto gpu_options (keyword or attribute); the GPU device APIs are the distribute "
        "rule's",
    ),
    Hazard(
        "gpu_query",
        Severity.INFO,
        "{api} reports no GPU on Ascend (the NPU is not a TensorFlow GPU device), so code it "
        "guards takes its non-GPU path",
        "check that the non-GPU path (e.g. its data_format) is what should run on the NPU",
        GPU_QUERY_APIS,
        "tf.test.gpu_device_name, tf.test.is_built_with_gpu_support",
    ),
    Hazard(
        "gpu_env_no_effect",
        Severity.INFO,
        "{name} has no effect on Ascend",
        "{fix}",
        frozenset(),
        "os.environ[...] = for CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, TF_FORCE_GPU_ALLOW_GROWTH",
    ),
)

BY_ID: MappingProxyType[str, Hazard] = MappingProxyType({h.id: h for h in HAZARDS})
APPLIED = frozenset(h.id for h in HAZARDS if h.applied)
"""The ids of the hazards whose fix the tool applies itself."""


# -- tf.contrib replacements -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContribRow:
    """What to use instead of a ``tf.contrib`` API (or of every API under a prefix)."""

    api: str
    replacement: str
    prefix: bool = False
    """True: the row covers every API under ``api.`` (reported together, once per file)."""
    handled_by: str = ""
    """A rule that rewrites or reports it already: no hazard finding."""


_NN_RNN_CELLS = (
    "BasicLSTMCell", "BasicRNNCell", "GRUCell", "LSTMCell", "LSTMStateTuple", "MultiRNNCell",
    "DropoutWrapper", "ResidualWrapper", "DeviceWrapper", "RNNCell",
)  # fmt: skip
_TPU_ESTIMATOR = (
    "TPUEstimator", "TPUEstimatorSpec", "RunConfig", "TPUConfig", "InputPipelineConfig",
    "CrossShardOptimizer", "TPUDistributionStrategy", "keras_to_tpu_model",
)  # fmt: skip
"""tf.contrib.tpu names the tpu_estimator rule rewrites or reports (InputPipelineConfig only
appears inside the TPUConfig it removes)."""
_STRATEGIES = (
    "MirroredStrategy", "CollectiveAllReduceStrategy", "OneDeviceStrategy", "TPUStrategy",
    "ParameterServerStrategy",
)  # fmt: skip
"""tf.contrib.distribute strategies the distribute rule reports."""
_GENERIC = (
    "replace it with its core TensorFlow equivalent (tf.* / tf.keras.*) or keep it on TF 1.15 "
    "after checking it in the migrated run"
)

CONTRIB_ROWS: tuple[ContribRow, ...] = (
    *(ContribRow(f"tf.contrib.tpu.{n}", "", handled_by="tpu_estimator") for n in _TPU_ESTIMATOR),
    ContribRow("tf.contrib.tpu", "TPU-only: not needed on Ascend, remove it", prefix=True),
    ContribRow("tf.contrib.tpu.python.tpu.tpu_estimator", "", True, "tpu_estimator"),
    ContribRow("tf.contrib.tpu.python.tpu.tpu_config", "", True, "tpu_estimator"),
    ContribRow("tf.contrib.cluster_resolver.TPUClusterResolver", "", handled_by="tpu_estimator"),
    *(
        ContribRow(f"tf.contrib.mixed_precision.{n}", "", handled_by="loss_scale")
        for n in (
            "LossScaleOptimizer",
            "FixedLossScaleManager",
            "ExponentialUpdateLossScaleManager",
        )
    ),
    ContribRow(
        "tf.contrib.mixed_precision",
        "use NPULossScaleOptimizer with FixedLossScaleManager or "
        "ExponentialUpdateLossScaleManager (npu_init): it detects overflow with the NPU's float "
        "status",
        prefix=True,
    ),
    *(ContribRow(f"tf.contrib.distribute.{n}", "", handled_by="distribute") for n in _STRATEGIES),
    ContribRow(
        "tf.contrib.slim",
        "use the tf_slim package (pip install tf-slim; `import tf_slim as slim`)",
        prefix=True,
    ),
    ContribRow("tf.contrib.framework.arg_scope", "use tf_slim.arg_scope (pip install tf-slim)"),
    ContribRow(
        "tf.contrib.framework.get_variables_to_restore",
        "use tf_slim.get_variables_to_restore (pip install tf-slim)",
    ),
    ContribRow(
        "tf.contrib.framework.get_or_create_global_step", "use tf.train.get_or_create_global_step"
    ),
    ContribRow("tf.contrib.framework.get_global_step", "use tf.train.get_global_step"),
    ContribRow("tf.contrib.framework.nest", "use tf.nest", prefix=True),
    ContribRow(
        "tf.contrib.framework.py_func",
        "use tf.py_func or tf.numpy_function (flatten nested inputs by hand)",
    ),
    ContribRow(
        "tf.contrib.layers.layer_norm",
        "use tf.keras.layers.LayerNormalization (its variables are named differently: "
        "old checkpoints need a name map)",
    ),
    ContribRow(
        "tf.contrib.layers.xavier_initializer",
        "use tf.glorot_uniform_initializer() (uniform=False: tf.glorot_normal_initializer())",
    ),
    ContribRow(
        "tf.contrib.layers.xavier_initializer_conv2d",
        "use tf.glorot_uniform_initializer() (uniform=False: tf.glorot_normal_initializer())",
    ),
    ContribRow(
        "tf.contrib.layers.variance_scaling_initializer",
        "use tf.variance_scaling_initializer (factor -> scale, mode in lower case, "
        "uniform -> distribution)",
    ),
    ContribRow(
        "tf.contrib.layers.l2_regularizer",
        "use tf.keras.regularizers.l2(scale / 2) (contrib's uses tf.nn.l2_loss, which "
        "halves the sum)",
    ),
    ContribRow("tf.contrib.layers.l1_regularizer", "use tf.keras.regularizers.l1(scale)"),
    ContribRow(
        "tf.contrib.layers.l1_l2_regularizer",
        "use tf.keras.regularizers.l1_l2(l1=scale_l1, l2=scale_l2 / 2) (contrib's l2 part uses "
        "tf.nn.l2_loss, which halves the sum)",
    ),
    ContribRow(
        "tf.contrib.layers.fully_connected",
        "use tf.layers.dense(..., activation=tf.nn.relu) (ReLU is contrib's default activation)",
    ),
    ContribRow(
        "tf.contrib.layers.conv2d",
        "use tf.layers.conv2d(..., padding='same', activation=tf.nn.relu) (contrib's defaults)",
    ),
    ContribRow("tf.contrib.layers.flatten", "use tf.layers.flatten"),
    ContribRow("tf.contrib.layers.batch_norm", "", handled_by="hazards"),
    ContribRow("tf.contrib.slim.batch_norm", "", handled_by="hazards"),
    ContribRow(
        "tf.contrib.layers.dropout",
        "use tf.layers.dropout(rate=1 - keep_prob, training=is_training) (its training "
        "flag defaults to False)",
    ),
    ContribRow("tf.contrib.data.map_and_batch", "use tf.data.experimental.map_and_batch"),
    ContribRow("tf.contrib.data", "use the same function from tf.data.experimental", prefix=True),
    ContribRow(
        "tf.contrib.lookup",
        "use tf.lookup (HashTable -> tf.lookup.StaticHashTable; index_table_from_* -> "
        "tf.lookup.StaticHashTable / StaticVocabularyTable over a "
        "tf.lookup.TextFileInitializer or KeyValueTensorInitializer)",
        prefix=True,
    ),
    ContribRow("tf.contrib.training.HParams", "use a dict, a namedtuple or argparse / absl flags"),
    *(ContribRow(f"tf.contrib.rnn.{n}", f"use tf.nn.rnn_cell.{n}") for n in _NN_RNN_CELLS),
    ContribRow("tf.contrib.rnn.static_rnn", "use tf.nn.static_rnn"),
    ContribRow("tf.contrib.rnn.static_bidirectional_rnn", "use tf.nn.static_bidirectional_rnn"),
    ContribRow(
        "tf.contrib.cudnn_rnn",
        "cuDNN is CUDA-only: use tf.keras.layers.LSTM / GRU, or tf.nn.rnn_cell cells with "
        "tf.nn.dynamic_rnn",
        prefix=True,
    ),
    ContribRow(
        "tf.contrib.nccl",
        "NCCL is CUDA-only: average gradients with NPUDistributedOptimizer (npu_init) instead",
        prefix=True,
    ),
    ContribRow("tf.contrib.memory_stats", "GPU-only: remove it", prefix=True),
    ContribRow(
        "tf.contrib.compiler",
        "XLA is not used on Ascend (the adapter compiles the graph): remove it",
        prefix=True,
    ),
    ContribRow("tf.contrib.keras", "use tf.keras", prefix=True),
    ContribRow("tf.contrib.learn", "use tf.estimator", prefix=True),
    ContribRow("tf.contrib.estimator.add_metrics", "use tf.estimator.add_metrics"),
    ContribRow(
        "tf.contrib.estimator.stop_if_no_increase_hook",
        "use tf.estimator.experimental.stop_if_no_increase_hook",
    ),
    ContribRow(
        "tf.contrib.estimator.stop_if_no_decrease_hook",
        "use tf.estimator.experimental.stop_if_no_decrease_hook",
    ),
    ContribRow("tf.contrib.util.make_tensor_proto", "use tf.make_tensor_proto"),
    ContribRow("tf.contrib.util.constant_value", "use tf.get_static_value"),
)
"""Well-known replacements, exact names first; a prefix row covers everything under it."""

CONTRIB_GENERIC_FIX = _GENERIC
"""The fix for a deprecated tf.contrib API without a row."""
CONTRIB_PREFIX = "tf.contrib."


def contrib_row(api: str) -> ContribRow | None:
    """The row for ``api``: an exact row, else the longest prefix row covering it."""
    best: ContribRow | None = None
    for row in CONTRIB_ROWS:
        if row.api == api and not row.prefix:
            return row
        covers = row.prefix and (api == row.api or api.startswith(row.api + "."))
        if covers and (best is None or len(row.api) > len(best.api)):
            best = row
    return best


# -- input pipelines and batches --------------------------------------------------------------

PIPELINE_METHODS: MappingProxyType[str, tuple[int, str]] = MappingProxyType({
    "map": (0, "map_func"),
    "flat_map": (0, "map_func"),
    "interleave": (0, "map_func"),
    "filter": (0, "predicate"),
    "map_with_legacy_function": (0, "map_func"),
    "filter_with_legacy_function": (0, "predicate"),
})  # fmt: skip
"""Dataset methods whose function runs in the input pipeline: position and name of it."""

PIPELINE_APIS: MappingProxyType[str, tuple[int, str]] = MappingProxyType({
    "tf.data.experimental.map_and_batch": (0, "map_func"),
    "tf.data.experimental.map_and_batch_with_legacy_function": (0, "map_func"),
    "tf.contrib.data.map_and_batch": (0, "map_func"),
    "tf.data.experimental.parallel_interleave": (0, "map_func"),
    "tf.contrib.data.parallel_interleave": (0, "map_func"),
})  # fmt: skip
"""Dataset transformations (used with ``Dataset.apply``) whose function runs in the pipeline."""

PARTIAL = "functools.partial"

BATCH_PARAMETERS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType({
    "batch": ("batch_size", "drop_remainder"),
    "padded_batch": ("batch_size", "padded_shapes", "padding_values", "drop_remainder"),
})  # fmt: skip
"""TF 1.15 signatures of the batching Dataset methods (a call that does not fit is no dataset)."""

"""What ``tf2npu doctor`` knows, as data: one :class:`Symptom` row per failure it recognises.

A row says how the failure shows (``patterns``: regexes over one line of a log; ``requires``:
regexes that must also occur somewhere in the same log; ``script``: regexes over one line of the
user's script; ``checks``: structured checks of run artifacts, implemented in
:mod:`tf2npu.debug.doctor.match`), what causes it (one sentence), the fix as the exact change
to make, and where the fact comes from. Named groups in a pattern fill the finding's location:
``node``, ``op_type``, ``file``, ``line``.

The rows are:

* the 29 TF-on-Ascend error patterns of ``debug-tools.md`` §7 (``reference`` = ``"§7 #N"``);
  a log line is matched the way users see it on the device;
* one row per :class:`tf2npu.errors.Tf2NpuError` class our runtime and CLI raise
  (``error_class``), matched by the message ``tf2npu <command>: error: ...`` or a traceback's
  last line;
* one row per :class:`tf2npu.graph.decisions.Diagnostic` slug the graph engine emits
  (``diagnostic``; the row's id *is* the slug, so ``doctor``, ``graph inspect`` and ``run`` speak
  the same codes), matched by the rendered message;
* findings from run artifacts: an overflow dump, a non-finite loss, unknown options.

``hazards`` lists the migration hazard ids (:mod:`tf2npu.migrate.tables.hazards`) that predict a
row before a run: ``doctor --script`` reports a hazard together with the failure it leads to.

A ``generic`` row only reports when no specific error-level row matched the same input (the GE
wrapper message around an error code, the catch-all inner error); ``suppresses`` names rows a
more specific row replaces when both match the same input.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from tf2npu.findings import Finding, Severity, Where

__all__ = ["BY_ID", "NOWHERE", "SYMPTOMS", "Symptom"]

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
NOWHERE = Where()
"""No location (a frozen value, safe as a default)."""


@dataclass(frozen=True, slots=True)
class Symptom:
    """One recognised failure: how it shows, its cause, its fix, and the source of the fact."""

    id: str
    severity: Severity
    cause: str
    fix: str
    source: str
    patterns: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    script: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    """Structured checks (:data:`tf2npu.debug.doctor.match.CHECKS`) that report this row."""
    reference: str = ""
    """``§7 #N`` of debug-tools.md, for the 29 error patterns."""
    error_class: str = ""
    """The ``Tf2NpuError`` class this row explains."""
    diagnostic: str = ""
    """The graph engine's ``Diagnostic`` slug (equal to ``id``)."""
    hazards: tuple[str, ...] = ()
    generic: bool = False
    suppresses: tuple[str, ...] = ()

    def finding(self, where: Where = NOWHERE, evidence: str = "") -> Finding:
        """The finding this row reports at ``where``; ``evidence`` is what was matched."""
        return Finding(self.id, self.severity, self.cause, self.fix, where, self.source, evidence)

    def predicted(self, where: Where = NOWHERE, evidence: str = "") -> Finding:
        """A failure the device would have that this run (or script) did not show yet: at most
        a warning, its cause starting with "on the device"."""
        severity = WARNING if self.severity is ERROR else self.severity
        return Finding(
            self.id, severity, "on the device: " + self.cause, self.fix, where, self.source,
            evidence,
        )  # fmt: skip


_FAQ = "hicann/tensorflow docs/en/tfadapter_1/migration/faq/"
_HIA = "hiascend.com error code reference "
_ADAPTER = "hicann/tensorflow tf_adapter/"
_ENGINE = "tf2npu graph engine ("
_RUNTIME = "tf2npu runtime ("
_NODE = r"(?P<node>[\w./-]+)"
"""A TF node name as the engine's messages print it before ``: ``."""
_OOM = (
    r"\bEL0004\b",
    r"\bEL0019\b",
    r"Failed to allocate memory requested by",
    r"Failed to allocate \S+ device memory",
    r"Heap_alloc_managed out of memory",
)
_V1_OPS = r"\b(Switch|Merge|RefSwitch|RefMerge|Enter|Exit|NextIteration|LoopCond)\b"
_MIX_COMPILE = (
    'enable mixed compute: custom_op.parameter_map["mix_compile_mode"].b = True with '
    "config.graph_options.rewrite_options.remapping = RewriterConfig.OFF and "
    "memory_optimization = RewriterConfig.OFF (Estimator: NPURunConfig(mix_compile_mode=True); "
    "tf2npu run --mix-compile)"
)
_V2_CONTROL = (
    "convert the graph to v2 control flow: export ENABLE_FORCE_V2_CONTROL=1, or add "
    "tf.enable_control_flow_v2() and tf.enable_resource_variables() right after "
    "`import tensorflow as tf`"
)

_SEVEN: tuple[Symptom, ...] = (
    Symptom(
        "table_split",
        ERROR,
        "a lookup table is created and initialised on the device (full offload runs "
        "tables_initializer there) but looked up in the host input pipeline, whose own copy of "
        "the table was never initialised",
        _MIX_COMPILE,
        "seed 000 case 01; " + _FAQ + "resource_operator_preprocess_fix.md",
        patterns=(
            _NODE + r": lookup table '[^']+' \((?P<op_type>\w+)\) is created and initialised on",
            r"Table not initialized",
        ),
        checks=("check_result",),
        reference="§7 #1",
        diagnostic="table_split",
        hazards=("lookup_table_in_pipeline",),
    ),
    Symptom(
        "variable_in_preprocessing",
        ERROR,
        "a tf.Variable is read by the input pipeline on the host while the variable is "
        "initialised on the device, so the host finds no such resource",
        "replace the variable the pipeline reads by a constant: a Python value or "
        "tf.constant, e.g. `batch_size = 64` then `dataset.batch(batch_size, drop_remainder=True)`",
        "seed 000 case 02; " + _FAQ + "tf-variable_preprocess_error.md",
        patterns=(
            _NODE + r": variable '[^']+' \((?P<op_type>\w+)\) is initialised on the device",
            r"Error while reading resource variable (?P<node>\S+) from Container: localhost",
            r"Resource localhost/(?P<node>\S+?)/N10tensorflow3VarE does not exist",
        ),
        checks=("check_result",),
        reference="§7 #2",
        diagnostic="variable_in_preprocessing",
        hazards=("variable_in_pipeline",),
        suppresses=("keras_zeros_uninitialized",),
    ),
    Symptom(
        "v1_control_dynamic_shape",
        ERROR,
        "the network has dynamic shapes and TF v1 control flow (Switch/Merge, Enter/Exit), "
        "which the device's dynamic-shape execution does not support",
        _V2_CONTROL,
        "seed 000 case 03; " + _FAQ + "dynamic_shape_v1_control_unsupported_error.md",
        patterns=(
            _NODE + r": '[^']+' \((?P<op_type>\w+)\) is TF v1 control flow.* in a dynamic-shape "
            r"device graph",
            r"node (?P<node>\S+)\((?P<op_type>\w+)\) is v1 control operator, which is not "
            r"supported",
        ),
        reference="§7 #3",
        diagnostic="v1_control_dynamic_shape",
        hazards=("v1_loop_dynamic_shape", "v1_control_flow"),
    ),
    Symptom(
        "v1_control_out_of_memory",
        ERROR,
        "v1 control flow (Switch feeding Merge) defeats the device's memory reuse, so a graph "
        "with many branches runs out of device memory",
        _V2_CONTROL,
        _FAQ + "v1_control_ops_out_of_memory.md",
        patterns=_OOM,
        requires=(_V1_OPS,),
        reference="§7 #4",
        hazards=("v1_control_flow",),
        suppresses=("device_out_of_memory",),
    ),
    Symptom(
        "getnext_timeout",
        ERROR,
        "the device waited too long for the next batch: host preprocessing is too slow or the "
        "input stalls",
        "check the input pipeline (a slow map, a stalled read); if it is only slow, raise the "
        'limit with custom_op.parameter_map["op_execute_timeout"].i = <seconds>',
        _FAQ + "getnext_timeout_e30008_error.md",
        patterns=(
            r"\bE30008\b",
            r"AI CPU operator execution time out",
            r"op_name=aicpu_getnext",
        ),
        reference="§7 #5",
        suppresses=("geop_failed", "inner_error"),
    ),
    Symptom(
        "shuffle_buffer_timeout",
        ERROR,
        "the shuffle buffer is so large that filling it on the host outlasts the device's "
        "wait for the first batch (GetNext sinks to the device), so the step times out",
        "use a smaller shuffle buffer (dataset.shuffle(buffer_size=...) well below the count the "
        "log shows), or keep the input on the host: NPURunConfig(enable_data_pre_proc=False) / "
        'custom_op.parameter_map["enable_data_pre_proc"].b = False',
        _FAQ + "shuffle_buffer_timeout_fix.md",
        patterns=(r"DoRunAsync Failed", r"model execute error, retCode=0x91"),
        requires=(r"Filling up shuffle buffer",),
        reference="§7 #6",
        suppresses=("geop_failed", "getnext_timeout", "inner_error"),
    ),
    Symptom(
        "hccl_not_initialized",
        ERROR,
        "an HCCL Python API (get_rank_id, get_rank_size, create_group, ...) ran before "
        "collective communication was initialised",
        "initialise collective communication first: run npu_ops.initialize_system() in its own "
        "session (or let NPUEstimator / npu_config_proto do it) before any hccl call",
        _FAQ + "get_rank_id_error_distributed_training.md",
        patterns=(r"get rank id error", r"Call hcom_bind_model failed"),
        reference="§7 #7",
    ),
    Symptom(
        "hccl_rdev_init_failed",
        ERROR,
        "the device_ip in the rank table is not the IP of the device's NIC",
        "set each device's device_ip in the rank table (RANK_TABLE_FILE) to the address "
        "`hccn_tool -i <device_id> -ip -g` prints",
        _FAQ + "hccl_init_ret_-17_error.md",
        patterns=(r"ra rdev init failed, ret \[-17\]",),
        reference="§7 #8",
    ),
    Symptom(
        "hccl_notify_timeout",
        ERROR,
        "a collective waited for a peer rank that failed, is slower, ran out of samples "
        "earlier or lost its link (HCCL_EXEC_TIMEOUT, default 1800 s)",
        "find the rank that failed first (its plog: grep -rn 'error cqe'); give every rank the "
        "same number of samples and steps; if a rank is only slow, export "
        "HCCL_EXEC_TIMEOUT=<seconds>",
        _HIA + "atlaserrorcode_15_0242",
        patterns=(
            r"\bEI0002\b",
            r"Notify register has not received the Notify record",
            r"timeout occurs when the Notify register waits",
        ),
        reference="§7 #9",
        suppresses=("geop_failed", "inner_error"),
    ),
    Symptom(
        "hccl_socket_timeout",
        ERROR,
        "the ranks could not set up their links in time (HCCL_CONNECT_TIMEOUT, default 120 s): "
        "ranks started far apart, ran collectives in a different order, or the network failed",
        "export HCCL_CONNECT_TIMEOUT=<seconds> when ranks start far apart; check the links with "
        "`hccn_tool -i <device_id> -tls -g`; make every rank run the same collectives in the "
        "same order",
        _HIA + "atlaserrorcode_15_0246, hcclug_000050",
        patterns=(
            r"\bEI0006\b",
            r"Getting socket times out",
            r"wait socket establish timeout",
        ),
        reference="§7 #10",
        suppresses=("geop_failed", "inner_error"),
    ),
    Symptom(
        "graphs_differ_across_ranks",
        ERROR,
        "the ranks compiled different numbers of graphs (rank-dependent graph code, e.g. "
        "tf.summary on rank 0 only), so the HCCL op ids do not line up and the job hangs",
        "build the same graph on every rank: move rank-dependent work (summaries, checkpoints, "
        "logging) out of the graph or run it on every rank",
        _FAQ + "multi-device_model_error.md",
        checks=("ranks",),
        reference="§7 #11",
    ),
    Symptom(
        "op_unsupported_aicore",
        ERROR,
        "the op's dtype or format is not in the AI Core op information library",
        "change the op's input dtype or format to one the library lists (e.g. cast to float32 "
        "before it), replace or remove the op, or ask for support; meanwhile keep it on the "
        "host: mix_compile_mode=True and npu_scope.without_npu_compile_scope() around it",
        _HIA + "atlaserrorcode_15_0307, atlaserrorcode_15_0309",
        patterns=(
            r"Optype \[(?P<op_type>[^\]]+)\] of Ops kernel \[AIcoreEngine\] is unsupported",
            r"\bEZ3002\b",
        ),
        reference="§7 #12",
        suppresses=("geop_failed", "inner_error"),
    ),
    Symptom(
        "op_no_kernel",
        ERROR,
        "no engine implements the op: it is not implemented at all, or the operator package "
        "(OPP) is not installed",
        "check that the OPP matching the CANN version is installed (ASCEND_OPP_PATH); "
        "otherwise replace the op with ops the device implements",
        _HIA + "atlaserrorcode_15_0310",
        patterns=(
            r"No supported Ops kernel and engine are found for \[(?P<node>[^\]]+)\], "
            r"optype \[(?P<op_type>[^\]]+)\]",
            r"\bEZ3003\b",
        ),
        reference="§7 #13",
        suppresses=("geop_failed", "inner_error"),
    ),
    Symptom(
        "op_compile_failed",
        ERROR,
        "the operator compiler failed to build the op's kernel",
        "read the Python stack of the op compiler in the host log (plog); for a custom op fix "
        "its implementation, for a built-in op report it with that stack",
        _HIA + "atlaserrorcode_15_0144, atlaserrorcode_15_0117",
        patterns=(
            r"Failed to compile Op \[(?P<node>[^\]]+)\]",
            r"\bE40021\b",
            r"\bE20001\b.*compil",
        ),
        reference="§7 #14",
        suppresses=("geop_failed", "inner_error"),
    ),
    Symptom(
        "aicore_error",
        ERROR,
        "an AI Core kernel faulted at run time (illegal instruction, out-of-bounds address, "
        "unaligned UB access)",
        'rerun with custom_op.parameter_map["op_debug_level"].i = 4 or op_debug_config set to '
        "oom (out-of-memory-access checks), dump the faulting op's inputs, and analyse them with "
        "msaicerr",
        _HIA + "troubleshooting_0004",
        patterns=(
            r"Aicore kernel execute failed.*fault kernel_name=(?P<node>[^\s,]+)",
            r"there is an? (aicore|aivec) error exception",
        ),
        reference="§7 #15",
        suppresses=("geop_failed", "inner_error"),
    ),
    Symptom(
        "inner_error",
        ERROR,
        "a CANN module failed internally; the message alone does not say why",
        "collect the plog: export ASCEND_GLOBAL_LOG_LEVEL=1 and "
        "ASCEND_PROCESS_LOG_PATH=<folder>, rerun, and read the first error there",
        _HIA + "atlaserrorcode_15_0314; cann/ge E19999-Inner_Error.md",
        patterns=(r"\bE[A-Z0-9]9999\b.*Inner Error", r"\bE19999\b", r"\bEE9999\b", r"\bEZ9999\b"),
        reference="§7 #16",
        generic=True,
        suppresses=("geop_failed",),
    ),
    Symptom(
        "reduce_sum_fp16",
        WARNING,
        "a float16 ReduceSum cannot use several cores (block_dim 1), so it is slow",
        "cast its input to float32 before it, or put it on the mixed-precision black list: "
        'write {"black-list": {"to-add": ["ReduceSumD"]}} to a JSON file and pass it as '
        'custom_op.parameter_map["modify_mixlist"].s = tf.compat.as_bytes("ops_info.json") '
        "(NPURunConfig(modify_mixlist=...))",
        "seed 000 case 04; " + _FAQ + "networktest_reducesum_low_performance.md",
        checks=("op_summary",),
        reference="§7 #17",
        hazards=("reduce_sum_fp16",),
    ),
    Symptom(
        "device_out_of_memory",
        ERROR,
        "the device ran out of memory: the batch is too large or other jobs hold device memory",
        "lower the batch size; stop other processes on the device (npu-smi info); cap the "
        "engine's memory with graph_memory_max_size / variable_memory_max_size",
        _HIA + "atlaserrorcode_15_0267, atlaserrorcode_15_0462, troubleshooting_0119",
        patterns=_OOM,
        reference="§7 #18",
        suppresses=("geop_failed", "inner_error"),
    ),
    Symptom(
        "invalid_device_id",
        ERROR,
        "a runtime API got an invalid argument, most often a device id the host does not have",
        "export ASCEND_DEVICE_ID (or DEVICE_ID) to a device in the range the message gives, and "
        "map RANK_ID to existing devices in the rank table",
        _HIA + "atlaserrorcode_15_0180",
        patterns=(r"Invalid device ID \d+", r"\bEE1001\b"),
        reference="§7 #19",
        suppresses=("geop_failed", "inner_error"),
    ),
    Symptom(
        "job_id_missing",
        ERROR,
        "NPUEstimator cannot read the job and device information from the environment",
        "export JOB_ID=<any number> (and ASCEND_DEVICE_ID, RANK_ID, RANK_SIZE) before starting "
        "the script",
        _ADAPTER + "python/npu_bridge/estimator/npu/npu_estimator.py",
        patterns=(r"Load job info failed, please check whether .JOB_ID. is set",),
        reference="§7 #20",
    ),
    Symptom(
        "geop_failed",
        ERROR,
        "the adapter reports that GE failed to build, add or run a graph; the cause is the GE "
        "error text that follows 'Error Message is :'",
        "read the Exxxxx code after 'Error Message is :' (doctor reports it when the log holds "
        "it) and fix that",
        _ADAPTER + "kernels/geop_npu.cc",
        patterns=(
            r"\[GEOP\] GE session build graph failed",
            r"\[GEOP\] call ge session add graph failed",
            r"\[GEOP\] call ge session RunGraphAsync Failed",
            r"GEOP::::DoRunAsync Failed",
        ),
        reference="§7 #21",
        generic=True,
    ),
    Symptom(
        "loss_scale_placeholder",
        ERROR,
        "the loss scale manager's variables were created inside "
        "`with tf.control_dependencies(update_ops)`, which the device cannot compile",
        "create the manager (ExponentialUpdateLossScaleManager(...) / "
        "FixedLossScaleManager(...)) before the `with tf.control_dependencies(update_ops):` "
        "block; only the optimizer's minimize goes inside",
        _FAQ + "npu_loss_scale_optimizer_faq.md",
        patterns=(r"Placeholder not support",),
        reference="§7 #22",
    ),
    Symptom(
        "loss_scale_keeps_dropping",
        WARNING,
        "almost every step reports an overflow, so the dynamic loss scale keeps dropping and the "
        "weights stop updating; on the device this is often a spurious overflow (e.g. Log over "
        "the zero padding of an NZ-format tensor)",
        "if the overflow is spurious, use a fixed scale without the check: "
        "FixedLossScaleManager(loss_scale=<scale>, enable_overflow_check=False); otherwise find "
        "the overflowing op with enable_dump_debug=True and tf2npu overflow",
        _FAQ + "npu_loss_scale_training_divergence.md",
        checks=("run_summary", "loss_scale_log"),
        reference="§7 #23",
    ),
    Symptom(
        "loss_scale_warmup",
        INFO,
        "the first steps were skipped while the dynamic loss scale came down from its start to a "
        "level the model's gradients fit (the warm-up of a dynamic loss scale, not an overflow "
        "of the model); the steps after it were applied",
        "nothing to do; to skip fewer steps, start the manager lower: "
        "ExponentialUpdateLossScaleManager(init_loss_scale=<the scale the warm-up ended at>, ...)",
        _RUNTIME + "run_summary.json loss_scale.warmup; artifacts/run_summary.py)",
        checks=("run_summary", "loss_scale_log"),
    ),
    Symptom(
        "hook_index_shifted",
        ERROR,
        "the migrated script appends NPUBroadcastHook to the hooks list, so hooks[-1] is no "
        "longer the script's own hook",
        "take the script's hook as hooks[-2] (or find it by its type) instead of hooks[-1]",
        _FAQ + "hook_index_error_fix.md",
        patterns=(r"AttributeError: '(?P<op_type>\w*Hook)' object has no attribute '\w+'",),
        reference="§7 #24",
    ),
    Symptom(
        "init_with_iterator",
        WARNING,
        "global_variables_initializer and the iterator's initializer run in one sess.run, so "
        "the initialisation runs on the host and the device's variables stay zero",
        "run them in separate calls: sess.run(tf.global_variables_initializer()) and then "
        "sess.run(iterator.initializer)",
        _FAQ + "variable_preprocess_init_subgraph_error_fix.md",
        script=(
            r"\.run\(\s*\[.*(global_variables_initializer|variables_initializer).*"
            r"(\.initializer|make_initializer)",
            r"\.run\(\s*\[.*(\.initializer|make_initializer).*"
            r"(global_variables_initializer|variables_initializer)",
        ),
        reference="§7 #25",
    ),
    Symptom(
        "keras_zeros_uninitialized",
        ERROR,
        "a variable was read before its initializer ran; on the device, tf.keras.backend.zeros "
        "in preprocessing creates a variable that cannot be initialised there",
        "use tf.zeros(...) instead of tf.keras.backend.zeros(...) (it makes a tensor, not a "
        "variable)",
        _FAQ + "tf_keras_backend_zeros_uninitialized_variable.md",
        patterns=(r"Attempting to use uninitiali[sz]ed value (?P<node>[\w./-]+)",),
        script=(r"\b(tf\.keras\.backend|keras\.backend|K)\.zeros\(",),
        reference="§7 #26",
    ),
    Symptom(
        "memory_optimizer_core_dump",
        ERROR,
        "TensorFlow's grappler memory optimizer crashes when memory_optimization is OFF",
        "re-enable it: remove `rewrite_options.memory_optimization = RewriterConfig.OFF` (or set "
        "it to RewriterConfig.ON)",
        _FAQ + "disable_memory_optimization_core_dump.md",
        patterns=(r"grappler/optimizers/memory_optimizer\.cc",),
        requires=(r"(?i)core dumped|segmentation fault|\baborted\b|fatal python error",),
        reference="§7 #27",
    ),
    Symptom(
        "uint8_saturation",
        INFO,
        "uint8/quint8 add and subtract saturate on the device (250 + 7 gives 255, not 257)",
        "rescale the value range, or cast to int32/float32 before adding",
        _FAQ + "uint8_quint8_add_sub_overflow.md",
        script=(r"tf\.cast\(.*tf\.q?uint8\s*\)", r"dtype\s*=\s*tf\.q?uint8\b"),
        reference="§7 #28",
    ),
    Symptom(
        "dump_option_invalid",
        ERROR,
        "a dump option has a value the adapter rejects",
        "fix the option: dump_step like '0|5|10-20' (at most 100 sets, a < b in a-b), dump_mode "
        "input|output|all, dump_debug_mode aicore_overflow|atomic_overflow|all, dump_data "
        "tensor|stats, dump_path an existing writable folder",
        _ADAPTER + "util/npu_attrs.cc",
        patterns=(
            r"dump_step string style is error",
            r"dump_step only support dump <= 100 sets of data",
            r"in range steps, the first step is >= second step",
            r"dump mode should be one of the list",
            r"dump debug mode should be one of the list",
            r"dump_data should be 'tensor' or 'stats'",
            r"if use dump function, dump_path must be set",
        ),
        reference="§7 #29",
    ),
)

_ERRORS: tuple[Symptom, ...] = (
    Symptom(
        "tf2npu_error",
        ERROR,
        "tf2npu stopped on a problem with its input (a path, an option, the script's own NPU "
        "config); the message names the thing, the value and the fix",
        "do what the message says after its ';'; `tf2npu <command> --help` lists the valid values",
        "tf2npu errors.py (Tf2NpuError)",
        patterns=(r"^tf2npu [\w-]+: error: ", r"\bTf2NpuError: "),
        error_class="Tf2NpuError",
        generic=True,
    ),
    Symptom(
        "usage_error",
        ERROR,
        "a tf2npu command was given a wrong path, a conflicting flag or an unknown value",
        "correct the command line as the message says; `tf2npu <command> --help` has examples",
        "tf2npu errors.py (UsageError)",
        patterns=(
            r"^tf2npu [\w-]+: error: (SCRIPT|LOG|SRC|DUMP_DIR|GRAPH|--(?!option )[\w-]+) ",
            r"^tf2npu [\w-]+: error: no SCRIPT given",
            r"\bUsageError: ",
        ),
        error_class="UsageError",
        suppresses=("tf2npu_error",),
    ),
    Symptom(
        "config_error",
        ERROR,
        "an NPU option, switch file or mixlist has a value the adapter rejects",
        "give the option a valid value (docs/options.md lists them), or fix the file the message "
        "names",
        "tf2npu errors.py (ConfigError)",
        patterns=(
            r"option '(?P<node>\w+)' = .*(is not valid|cannot be)",
            r"--option \S+: not a valid value",
            r"modify_mixlist: .* both denote the TF op type",
            r": not valid JSON \(",
            r"\bConfigError: ",
        ),
        error_class="ConfigError",
        suppresses=("tf2npu_error",),
    ),
    Symptom(
        "unknown_name",
        ERROR,
        "a name (option, fusion rule, pass) does not exist",
        "use one of the valid names the message lists (a typo is the usual cause)",
        "tf2npu errors.py (UnknownNameError)",
        patterns=(r"unknown [\w -]+ '[^']*'; the valid ones are", r"\bUnknownNameError: "),
        error_class="UnknownNameError",
        suppresses=("tf2npu_error", "config_error"),
    ),
    Symptom(
        "graph_error",
        ERROR,
        "the graph cannot run on the device as built (the engine found an error the adapter "
        "fails on), or a graph file is not a valid graph",
        "apply the fix the message gives for each error it lists",
        "tf2npu errors.py (GraphError); tf2npu runtime/compile.py",
        patterns=(
            r"graph \d+ cannot run on the device",
            r"invalid input graph: ",
            r"has a cycle through '",
            r"graph file '[^']*' (is not a valid|holds no nodes)",
            r"\bGraphError: ",
        ),
        error_class="GraphError",
        generic=True,
        suppresses=("tf2npu_error",),
    ),
    Symptom(
        "loop_error",
        ERROR,
        "iterations_per_loop > 1 is used where the device loop cannot run: with mixed compute, "
        "a one-shot iterator, or an input of unknown shape",
        "set iterations_per_loop=1, or use an initializable iterator over "
        "dataset.batch(batch_size, drop_remainder=True) without mix_compile_mode",
        "tf2npu runtime/loop.py (LoopError)",
        patterns=(
            r"iterations_per_loop=\d+(: '[^']*' (is a one-shot|yields tensors)| cannot be used)",
            r"\bLoopError: ",
        ),
        error_class="LoopError",
        suppresses=("tf2npu_error",),
    ),
    Symptom(
        "collective_failed",
        ERROR,
        "a collective of a multi-rank job failed on this rank: another rank died, hung past "
        "HCCL_EXEC_TIMEOUT, or gave another shape, dtype or RANK_SIZE; the collective runtime "
        "cannot recover, so the rank stopped",
        "read the launcher's message for the rank that failed first and fix that rank; for a "
        "slow rank raise HCCL_EXEC_TIMEOUT (or hccl_timeout); docs/distributed.md",
        "tf2npu runtime/distributed/errors.py (CollectiveError)",
        patterns=(r"rank \d+: collective Hcom\w+ '[^']*' failed: ", r"\bCollectiveError: "),
        error_class="CollectiveError",
        suppresses=("tf2npu_error",),
    ),
    Symptom(
        "launch_error",
        ERROR,
        "tf2npu run --ranks could not start every rank (a process or thread limit, memory, or "
        "an exec that failed); the ranks it had started were stopped",
        "start fewer ranks, or raise the process limit (ulimit -u) or free memory, then run again",
        "tf2npu runtime/distributed/launch.py (LaunchError)",
        patterns=(r"could not start rank \d+ of \d+ \(", r"\bLaunchError: "),
        error_class="LaunchError",
        suppresses=("tf2npu_error",),
    ),
    Symptom(
        "worker_error",
        ERROR,
        "a migration worker process stopped (killed, or out of memory)",
        "run tf2npu migrate again with --jobs 1 to find the file",
        "tf2npu migrate/workers.py (WorkerError)",
        patterns=(r"a worker process stopped unexpectedly", r"\bWorkerError: "),
        error_class="WorkerError",
        suppresses=("tf2npu_error",),
    ),
    Symptom(
        "write_error",
        ERROR,
        "tf2npu migrate could not write an output file",
        "free space or fix the permissions of the folder the message names, or choose another "
        "output with -o",
        "tf2npu migrate/tree.py (WriteError)",
        patterns=(r"cannot write '[^']*': .*choose another place with -o", r"\bWriteError: "),
        error_class="WriteError",
        suppresses=("tf2npu_error",),
    ),
    Symptom(
        "contrib_not_provided",
        ERROR,
        "the script uses a tf.contrib symbol that tf2npu run does not provide (TF 2.15 has no "
        "tf.contrib)",
        "replace the call with its TF 2.15 successor the message names (docs/tf1-compat.md "
        "lists the provided tf.contrib modules)",
        "tf2npu compat/contrib/table.py (ContribAttributeError)",
        patterns=(
            r"tf\.contrib\.\w+\.[\w.]+ is not provided by tf2npu run",
            r"\bContribAttributeError: ",
        ),
        error_class="ContribAttributeError",
        suppresses=("tf2npu_error", "contrib_module_not_provided"),
    ),
    Symptom(
        "contrib_module_not_provided",
        ERROR,
        "the script imports a tf.contrib module that tf2npu run does not provide",
        "import its TF 2.15 successor instead (tf.compat.v1.*, tf.*, or an add-on package such "
        "as tf_slim); docs/tf1-compat.md lists the provided modules",
        "tf2npu compat/contrib/table.py (ContribImportError)",
        patterns=(r"tf\.contrib\.\w+ is not provided by tf2npu run", r"\bContribImportError: "),
        error_class="ContribImportError",
        suppresses=("tf2npu_error",),
    ),
    Symptom(
        "moved_import",
        ERROR,
        "the script imports a TF 1.15-era private path or name that TF 2.15 no longer has",
        "import the public API the message names instead of the private path",
        "tf2npu compat/moved/module.py (MovedImportError)",
        patterns=(r"does not exist under tf2npu run", r"\bMovedImportError: "),
        error_class="MovedImportError",
        suppresses=("tf2npu_error",),
    ),
)

_DIAGNOSTICS: tuple[Symptom, ...] = (
    Symptom(
        "ref_variable_to_host",
        ERROR,
        "ref variables in a GeOp are taken by host nodes through a ref input, which the device "
        "rejects ('Ref Tensors ... is not in white list')",
        "use resource variables: tf.compat.v1.enable_resource_variables() after the imports, or "
        "let the ops that update these variables run on the device",
        _ENGINE + "graph/passes/partition.py)",
        patterns=(
            _NODE + r": \d+ ref variable\(s\) in a GeOp are taken by host nodes",
            r"Ref Tensors \(e\.g\., Variables\) output .* is not in white list",
        ),
        diagnostic="ref_variable_to_host",
    ),
    Symptom(
        "fallback_to_host",
        WARNING,
        "full offload keeps one GeOp, and device-capable nodes that cannot join it run on the host",
        "set mix_compile_mode=True to give them a GeOp of their own, or replace the host-only "
        "ops between them and the GeOp",
        _ENGINE + "graph/passes/partition.py)",
        patterns=(_NODE + r": \d+ device-capable node\(s\) .* fall back to host execution",),
        diagnostic="fallback_to_host",
    ),
    Symptom(
        "fusion_instance_switched_off",
        INFO,
        "one instance of a fusion rule was not fused because a trial's instance switch "
        "(TF2NPU_FUSION_INSTANCES / --fusion-instances, as tf2npu bisect writes) turns it off",
        "remove the entry from that file (or unset TF2NPU_FUSION_INSTANCES) to fuse it again",
        _ENGINE + "graph/passes/fusion.py)",
        patterns=(_NODE + r": fusion rule \w+ is switched off at this root by",),
        diagnostic="fusion_instance_switched_off",
    ),
    Symptom(
        "fault_target_fused",
        WARNING,
        "an injected fault (op:NODE) names a node computed inside a fused op, whose own "
        "value no longer exists, so the drill corrupts nothing",
        "corrupt the fused op instead: --inject-fault fusion:RULE@ROOT=KIND, with ROOT from "
        "fusion_instances.json",
        _ENGINE + "graph/passes/inject_faults.py)",
        patterns=(r"fault '[^']*': " + _NODE + r" is computed inside a fused op",),
        diagnostic="fault_target_fused",
    ),
    Symptom(
        "fault_target_unread",
        WARNING,
        "an injected fault (op:NODE) names a node nothing in the graph reads, so corrupting "
        "what its readers receive changes nothing",
        "corrupt the op that produces the node's input instead",
        _ENGINE + "graph/passes/inject_faults.py)",
        patterns=(r"fault '[^']*': nothing in the graph reads " + _NODE,),
        diagnostic="fault_target_unread",
    ),
    Symptom(
        "runs_on_host",
        INFO,
        "an op the device library does not have runs on the host; its inputs and outputs are "
        "copied between host and device every step",
        "replace it with an op the device supports if it sits on the step's path",
        _ENGINE + "graph/passes/partition.py)",
        patterns=(_NODE + r": (?P<op_type>\w+) runs on the host: .* every step",),
        diagnostic="runs_on_host",
    ),
    Symptom(
        "host_feeds",
        INFO,
        "placeholders are fed from the host: each sess.run copies their values to the device",
        "for the training input, read a tf.data pipeline through an iterator so the adapter "
        "can keep input on the device (enable_data_pre_proc) and run iterations_per_loop steps",
        _ENGINE + "graph/passes/partition.py)",
        patterns=(_NODE + r": \d+ Placeholder\(s\) .* are fed from the host",),
        diagnostic="host_feeds",
    ),
    Symptom(
        "fused_batch_norm_v3_mixed",
        WARNING,
        "FusedBatchNormV3 runs on the device in mixed compute mode, where its fifth output (a "
        "CUDA-specific reserve space) is not supported",
        "build the model under `with tf.compat.forward_compatibility_horizon(2019, 5, 1):` so "
        "batch normalisation emits FusedBatchNorm instead of FusedBatchNormV3",
        _ENGINE + "graph/passes/partition.py); seed 003",
        patterns=(
            _NODE + r": \d+ FusedBatchNormV3/FusedBatchNormGradV3 node\(s\) .* mixed compute",
        ),
        diagnostic="fused_batch_norm_v3_mixed",
        hazards=("fused_batch_norm_mix_compile",),
    ),
    Symptom(
        "fusion_rule_switched_off",
        INFO,
        "a fusion rule that would fire is switched off by the fusion_switch_file",
        'remove the rule (or set it to "on") in the fusion_switch_file to fuse',
        _ENGINE + "graph/passes/fusion.py)",
        patterns=(_NODE + r": fusion rule \w+.* is switched off by fusion_switch_file",),
        diagnostic="fusion_rule_switched_off",
    ),
    Symptom(
        "cpu_fp32_fallback",
        INFO,
        "an op has no CPU kernel in its low-precision dtype, so this CPU run computes it in "
        "float32 between casts: its values differ from the device's by float16 rounding",
        "nothing to change for the device; compare against the device with that rounding in mind",
        _ENGINE + "graph/passes/cpu_runnable.py)",
        patterns=(_NODE + r": (?P<op_type>\w+) has no CPU kernel in the decided low-precision",),
        diagnostic="cpu_fp32_fallback",
    ),
    Symptom(
        "no_cpu_kernel",
        WARNING,
        "an op has no CPU kernel for its decided dtypes, nor in float32, so running it here "
        "fails with TensorFlow's 'No OpKernel' error",
        "keep the op in float32: create it under npu_scope.keep_dtype_scope(), or add its type "
        'to the modify_mixlist black list ({"black-list": {"to-add": ["<op type>"]}})',
        _ENGINE + "graph/passes/cpu_runnable.py)",
        patterns=(_NODE + r": (?P<op_type>\w+) has no CPU kernel for its decided dtypes",),
        diagnostic="no_cpu_kernel",
    ),
    Symptom(
        "precision_mode_approximated",
        INFO,
        "the precision mode converts inside kernels or uses a dtype TensorFlow lacks, so this "
        "run keeps the graph's dtypes",
        "use allow_mix_precision or force_fp16 to see float16 decisions",
        _ENGINE + "graph/passes/precision.py)",
        patterns=(
            r"precision_mode \w+: (cube ops convert inside the kernel|HiFloat8 has no "
            r"TensorFlow dtype)",
        ),
        diagnostic="precision_mode_approximated",
    ),
    Symptom(
        "precision_unrunnable",
        WARNING,
        "an op has no float32 device kernel and cannot run in the low-precision dtype either",
        "keep the node on the host (npu_scope.without_npu_compile_scope()) or feed it "
        "low-precision tensors in the model",
        _ENGINE + "graph/precision/classify.py)",
        patterns=(_NODE + r": \w+ has no float32 device kernel and cannot run in",),
        diagnostic="precision_unrunnable",
    ),
    Symptom(
        "without_npu_compile_ignored",
        WARNING,
        "nodes are under without_npu_compile_scope, which only counts in mixed compute, so "
        "they are placed on the device",
        "set mix_compile_mode=True to keep them on the host, or drop the scope",
        _ENGINE + "graph/passes/placement.py)",
        patterns=(_NODE + r": \d+ node\(s\) are under without_npu_compile_scope",),
        diagnostic="without_npu_compile_ignored",
    ),
    Symptom(
        "mixlist_unknown_op",
        WARNING,
        "the modify_mixlist file names an op type that is neither a TF op nor the GE name of "
        "one, so it changes nothing",
        "spell the op type as TF (ReduceSum) or GE (ReduceSumD) names it",
        _ENGINE + "graph/opinfo/mixlist.py)",
        patterns=(r"modify_mixlist names '(?P<op_type>[^']+)', which is neither a TF op type",),
        diagnostic="mixlist_unknown_op",
    ),
)

_ARTIFACTS: tuple[Symptom, ...] = (
    Symptom(
        "float_overflow",
        WARNING,
        "a float16 op overflowed (its outputs saturate at 65504 or are inf/NaN for normal "
        "inputs); later overflows usually follow from the first",
        "compute the op in float32: add its type to the modify_mixlist black list "
        '({"black-list": {"to-add": ["<op type>"]}}) or create it under '
        "npu_scope.keep_dtype_scope()",
        "debug-tools.md §5.3; hicann/tensorflow docs .../floating-point_exception_detection.md",
        checks=("overflow_dump",),
    ),
    Symptom(
        "nonfinite_loss",
        WARNING,
        "a scalar the script fetched (a loss) became NaN or Inf",
        "find the first overflowing op (dump_path must be an existing folder): mkdir -p ovf && "
        "tf2npu run --option enable_dump_debug=true --option dump_path=ovf --option "
        "dump_debug_mode=all SCRIPT, then tf2npu overflow ovf",
        "debug-tools.md §5.1; " + _RUNTIME + "run_summary.json nonfinite)",
        checks=("run_summary",),
    ),
    Symptom(
        "unknown_option",
        WARNING,
        "an NpuOptimizer parameter_map key is not an option of the adapter, so it is ignored",
        "correct the key (docs/options.md lists the options); tf2npu run --strict-options makes "
        "such keys an error",
        _RUNTIME + "run_summary.json options_unknown)",
        checks=("run_summary",),
    ),
    Symptom(
        "injected_faults",
        WARNING,
        "this run had faults injected on purpose (tf2npu run --inject-fault), so its numbers "
        "are not the model's",
        "run again without --inject-fault (and without TF2NPU_INJECT_FAULT) for real results",
        _RUNTIME + "run_summary.json injected_faults)",
        checks=("run_summary",),
    ),
    Symptom(
        "variable_race",
        WARNING,
        "a variable is read and assigned in the same session.run with nothing (no data or "
        "control path) ordering the read and the write: the value read depends on the op "
        "schedule, so two runs, and the original and the migrated script, can differ by one "
        "update (BERT's learning rate reads global_step in the run that assigns global_step + 1)",
        "order the read and the write: build one under tf.control_dependencies([the other]), "
        "e.g. `with tf.control_dependencies([train_op]): inc = global_step.assign_add(1)`",
        "tf2npu graph lint (graph/lint.py races; run_summary.json races)",
        patterns=(
            r"\[variable_race\] variable '[^']+' is read by '(?P<node>[^']+)' \((?P<op_type>\w+)"
            r"(?:, (?P<file>[^,()]+?):(?P<line>\d+))?",
        ),
        checks=("run_summary",),
    ),
    Symptom(
        "script_failed",
        INFO,
        "the script exited with a non-zero status",
        "give doctor the log the run printed (tf2npu run ... 2>&1 | tee run.log; tf2npu doctor "
        "run.log --run-dir DIR) to find the cause",
        _RUNTIME + "run_summary.json exit_status)",
        checks=("run_summary",),
        generic=True,
    ),
)

SYMPTOMS: tuple[Symptom, ...] = _SEVEN + _ERRORS + _DIAGNOSTICS + _ARTIFACTS
"""Every row, in reporting order (specific failures before generic wrappers)."""

BY_ID: MappingProxyType[str, Symptom] = MappingProxyType({s.id: s for s in SYMPTOMS})

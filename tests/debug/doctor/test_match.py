"""Logs in, findings out: one literal log per symptom row, then suppression, places and repeats.

The device logs are written from the facts of debug-tools.md §7 (message texts, codes, option
names); tf2npu's own lines are copied from real runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tf2npu.debug.doctor.logtext import Log
from tf2npu.debug.doctor.match import diagnose, match_log, required_literal, resolve
from tf2npu.debug.doctor.rundir import RunDir
from tf2npu.debug.doctor.symptoms import BY_ID, NOWHERE, SYMPTOMS
from tf2npu.findings import Finding, Severity, Where

# (expected ids, log text, expected node or "")
LOGS: list[tuple[set[str], str, str]] = [
    # §7 #1, as seed 000 case 01 shows it
    (
        {"table_split"},
        "[2021-03-19 13:50:24.895266: W tensorflow/core/framework/op_kernel.cc:1651] "
        "OP_REQUIRES failed at lookup_table_op.cc:809 : Failed precondition: Table not "
        "initialized.",
        "",
    ),
    # §7 #2, seed 000 case 02
    (
        {"variable_in_preprocessing"},
        "tensorflow.python.framework.errors_impl.FailedPreconditionError: Error while reading "
        "resource variable inference/embed_continuous from Container: localhost. This could "
        "mean that the variable was uninitialized. Not found: Resource "
        "localhost/inference/embed_continuous/N10tensorflow3VarE does not exist.",
        "inference/embed_continuous",
    ),
    # §7 #3, seed 000 case 03
    (
        {"v1_control_dynamic_shape"},
        "node while/Merge(Merge) is v1 control operator, which is not supported, please "
        "convert to v2 control operator",
        "while/Merge",
    ),
    # §7 #4: out of memory in a graph full of v1 branches
    (
        {"v1_control_out_of_memory"},
        "[ERROR] GE(1234,python):2023-05-06-10:11:12.123.456 [graph_mem_assigner.cc:123] "
        "EL0004: Failed to allocate memory requested by GE module.\n"
        "[INFO] GE node cond_17/Switch type Switch feeds cond_17/Merge type Merge",
        "",
    ),
    # §7 #5
    (
        {"getnext_timeout"},
        "E30008: AI CPU operator execution time out. fault op_name=aicpu_getnext_IteratorGetNext"
        "\n\t [[{{node GeOp2_0}}]]",
        "GeOp2_0",
    ),
    # §7 #6
    (
        {"shuffle_buffer_timeout"},
        "2023-01-01 10:00:00.000: I tensorflow/core/kernels/data/shuffle_dataset_op.cc:138] "
        "Filling up shuffle buffer (this may take a while): 6232 of 10000\n"
        "2023-01-01 10:05:00.000: E tf_adapter/kernels/geop_npu.cc:900] GeOp33_0GEOP::::"
        "DoRunAsync Failed\n[ERROR] RUNTIME model execute error, retCode=0x91",
        "",
    ),
    # §7 #7
    ({"hccl_not_initialized"}, "RuntimeError: get rank id error.", ""),
    (
        {"hccl_not_initialized"},
        "[ERROR] HCCL(4242,python):2023-02-02 hcom.cc:77 Call hcom_bind_model failed",
        "",
    ),
    # §7 #8
    (
        {"hccl_rdev_init_failed"},
        "[ERROR] HCCL(1,python):network_manager.cc:120 [Init][RaRdev]ra rdev init failed, ret [-17]",
        "",
    ),
    # §7 #9
    (
        {"hccl_notify_timeout"},
        "EI0002: The wait execution of the Notify register times out. Reason: The Notify "
        "register has not received the Notify record from remote rank [1].",
        "",
    ),
    # §7 #10
    (
        {"hccl_socket_timeout"},
        "EI0006: Getting socket times out. Reason: Remote Rank did not send the data in time.",
        "",
    ),
    (
        {"hccl_socket_timeout"},
        "[ERROR] HCCL(7,python):transport.cc:55 wait socket establish timeout, role[0] "
        "rank[0] timeout[120 s]",
        "",
    ),
    # §7 #12
    (
        {"op_unsupported_aicore"},
        "EZ3002: Optype [ScatterNdUpdate] of Ops kernel [AIcoreEngine] is unsupported. Reason: "
        "The dtype of input [indices] is not supported.",
        "",
    ),
    # §7 #13
    (
        {"op_no_kernel"},
        "EZ3003: No supported Ops kernel and engine are found for [model/MyOp], optype [MyOp].",
        "model/MyOp",
    ),
    # §7 #14
    (
        {"op_compile_failed"},
        "E40021: Failed to compile Op [conv1/Conv2D]. (oppath: [Compile /usr/local/Ascend/opp/"
        "conv2d.py failed with errormsg/stack: ...], optype: [Conv2D])",
        "conv1/Conv2D",
    ),
    # §7 #15 (and the inner error it comes with is not reported twice)
    (
        {"aicore_error"},
        "EZ9999: Inner Error! there is an aicore error exception, core id is 3\n"
        "[ERROR] RUNTIME(99,python):device_error_proc.cc:600 Aicore kernel execute failed, "
        "device_id=0, stream_id=2, task_id=7, fault kernel_name=te_matmul_abc123, "
        "func_name=te_matmul__kernel0",
        "te_matmul_abc123",
    ),
    # §7 #16
    ({"inner_error"}, "E19999: Inner Error! Call rtMalloc failed, ret: 0x207001", ""),
    # §7 #18
    (
        {"device_out_of_memory"},
        "[ERROR] DRV(1,python):2023 Heap_alloc_managed out of memory, size=1073741824",
        "",
    ),
    # §7 #19
    (
        {"invalid_device_id"},
        "EE1001: The argument is invalid.Reason: Set device failed, invalid device id. "
        "Invalid device ID 8, valid device range is [0, 7)",
        "",
    ),
    # §7 #20
    (
        {"job_id_missing"},
        "ValueError: Load job info failed, please check whether `JOB_ID` is set in environment "
        "variable",
        "",
    ),
    # §7 #21 alone: the wrapper is all there is
    (
        {"geop_failed"},
        "2023-03-03 E tf_adapter/kernels/geop_npu.cc:1010] [GEOP] GE session build graph "
        "failed, domi_ret : 1343242270\nError Message is : ",
        "",
    ),
    # §7 #21 with the code it wraps: only the code is reported
    (
        {"op_unsupported_aicore"},
        "[GEOP] call ge session add graph failed\nError Message is :\nEZ3002: Optype [Sort] of "
        "Ops kernel [AIcoreEngine] is unsupported. Reason: ...",
        "",
    ),
    # §7 #22
    (
        {"loss_scale_placeholder"},
        "tensorflow.python.framework.errors_impl.InternalError: Placeholder not support",
        "",
    ),
    # §7 #24
    (
        {"hook_index_shifted"},
        "AttributeError: 'NPUBroadcastGlobalVariablesHook' object has no attribute 'best_loss'",
        "",
    ),
    # §7 #26
    (
        {"keras_zeros_uninitialized"},
        "tensorflow.python.framework.errors_impl.FailedPreconditionError: Attempting to use "
        "uninitialized value Variable_1\n\t [[{{node Variable_1/read}}]]",
        "Variable_1",
    ),
    # §7 #27
    (
        {"memory_optimizer_core_dump"},
        "2023 I tensorflow/core/grappler/optimizers/memory_optimizer.cc:1234] ...\n"
        "Segmentation fault (core dumped)",
        "",
    ),
    # §7 #29
    (
        {"dump_option_invalid"},
        "E tf_adapter/util/npu_attrs.cc:300] dump_step string style is error, correct "
        "example:'0|5|10|50-100'",
        "",
    ),
    ({"dump_option_invalid"}, "dump mode should be one of the list:[input, output, all]", ""),
    # tf2npu's own errors
    (
        {"config_error"},
        "tf2npu run: error: --option precision_mode=fp17: not a valid value; use one of ...",
        "",
    ),
    ({"usage_error"}, "tf2npu run: error: SCRIPT 'trian.py' does not exist; give the path", ""),
    (
        {"unknown_name"},
        "tf2npu graph: error: unknown graph pass 'fuison'; the valid ones are: fusion, layout",
        "",
    ),
    (
        {"loop_error"},
        "tf2npu run: error: train.py:40: iterations_per_loop=10: 'OneShotIterator' is a one-shot "
        "iterator, which the device loop cannot re-run; use ...",
        "",
    ),
    (
        {"collective_failed"},
        "tf2npu run: error: train.py:50: rank 0: collective HcomAllReduce 'Distributed_Allreduce/"
        "HcomAllReduce_1' failed: another rank died or cannot be reached (InternalError: ...)",
        "",
    ),
    (
        {"launch_error"},
        "tf2npu run: error: could not start rank 7 of 8 (can't start new thread); the 7 rank(s) "
        "started were stopped. Start fewer ranks, or raise the process limit (ulimit -u) or free "
        "memory",
        "",
    ),
    (
        {"worker_error"},
        "tf2npu migrate: error: a worker process stopped unexpectedly (killed, or out of memory)",
        "",
    ),
    (
        {"write_error"},
        "tf2npu migrate: error: cannot write 'out/a.py': disk full; free space (or choose "
        "another place with -o) and run again",
        "",
    ),
    (
        {"contrib_not_provided"},
        "tf2npu run: error: train.py:3: tf.contrib.seq2seq.BeamSearchDecoder is not provided by "
        "tf2npu run (TF 2.15 has no equivalent with TF 1.15 semantics); use ...",
        "",
    ),
    (
        {"contrib_module_not_provided"},
        "tf2npu run: error: train.py:2: tf.contrib.ffmpeg is not provided by tf2npu run; ...",
        "",
    ),
    (
        {"moved_import"},
        "tf2npu.compat.errors.MovedImportError: tensorflow.python.keras.layers.Foo does not "
        "exist under tf2npu run: this module is ...",
        "",
    ),
    (
        {"graph_error"},
        "tf2npu graph: error: graph file 'g.pb' is not a valid GraphDef: Error parsing message",
        "",
    ),
    ({"tf2npu_error"}, "tf2npu compare: error: the two dumps share no op name", ""),
    # the engine's diagnostics, as tf2npu run prints them (copied from real runs)
    (
        {"table_split"},
        "tf2npu run: error: /tmp/dr/case01_table.py:16: graph 1 cannot run on the device: "
        "hash_table: lookup table 'hash_table' (HashTableV2) is created and initialised on the "
        "device (where tables_initializer runs it) but 'MapDataset' (MapDataset) uses it on the "
        "host; the host holds its own, never initialised table, so the step fails with 'Table "
        "not initialized' Fix: keep the table ops together: set mix_compile_mode=True",
        "hash_table",
    ),
    (
        {"ref_variable_to_host"},
        "tf2npu run: error: t.py:9: graph 2 cannot run on the device: w: 1 ref variable(s) in a "
        "GeOp are taken by host nodes through a ref input (the host would update a device "
        "variable in place), which the vendor rejects",
        "w",
    ),
    (
        {"fallback_to_host"},
        "WARNING:tf2npu.runtime:graph 1: dense/MatMul: 2 device-capable node(s) "
        "('dense/MatMul', 'dense/BiasAdd') fall back to host execution: full offload keeps one "
        "GeOp (GeOp1_0) and they cannot join it without a cycle through host ops",
        "dense/MatMul",
    ),
    (
        {"fusion_instance_switched_off"},
        "INFO:tf2npu.runtime:graph 1: dense/BiasAdd: fusion rule matmul_biasadd is switched "
        "off at this root by /tmp/trial/instances.json",
        "dense/BiasAdd",
    ),
    (
        {"fault_target_fused"},
        "WARNING:tf2npu.runtime:graph 1: dense/MatMul: fault 'op:dense/MatMul=nan': "
        "dense/MatMul is computed inside a fused op (matmul_biasadd); its own value no "
        "longer exists",
        "dense/MatMul",
    ),
    (
        {"fault_target_unread"},
        "WARNING:tf2npu.runtime:graph 1: loss: fault 'op:loss=nan': nothing in the graph reads "
        "loss, so corrupting what its readers receive changes nothing",
        "loss",
    ),
    (
        {"runs_on_host"},
        "data/DecodeJpeg: DecodeJpeg runs on the host: not in the device op library; its inputs "
        "and outputs are copied between host and device every step",
        "data/DecodeJpeg",
    ),
    (
        {"host_feeds"},
        "x: 2 Placeholder(s) ('x', 'y') are fed from the host: each sess.run copies their values",
        "x",
    ),
    (
        {"fused_batch_norm_v3_mixed"},
        "WARNING:tf2npu.runtime:graph 1: bn/FusedBatchNormV3: 2 FusedBatchNormV3/"
        "FusedBatchNormGradV3 node(s) ('bn/FusedBatchNormV3') run on the device in mixed "
        "compute mode, where the op's fifth output ... is not supported",
        "bn/FusedBatchNormV3",
    ),
    (
        {"fusion_rule_switched_off"},
        "dense/MatMul: fusion rule matmul_biasadd (MatMulBiasAddFusionPass) is switched off by "
        "fusion_switch_file; it would have fused once, first at this node",
        "dense/MatMul",
    ),
    (
        {"cpu_fp32_fallback"},
        "gelu/Erf: Erf has no CPU kernel in the decided low-precision dtype; here it runs in "
        "float32 between casts",
        "gelu/Erf",
    ),
    (
        {"no_cpu_kernel"},
        "WARNING:tf2npu.runtime:graph 1: ops/Foo: Foo has no CPU kernel for its decided dtypes, "
        "nor in float32; running it here fails with TensorFlow's 'No OpKernel' error",
        "ops/Foo",
    ),
    (
        {"precision_mode_approximated"},
        "precision_mode cube_fp16in_fp32out: cube ops convert inside the kernel; the graph's "
        "dtypes do not change",
        "",
    ),
    (
        {"precision_unrunnable"},
        "WARNING:tf2npu.runtime:graph 3: m/Bar: Bar has no float32 device kernel and cannot run "
        "in float16 (float16 input)",
        "m/Bar",
    ),
    (
        {"without_npu_compile_ignored"},
        "WARNING:tf2npu.runtime:graph 1: py/PyFunc: 1 node(s) are under without_npu_compile_scope "
        "('py/PyFunc') but the scope only counts in mixed compute",
        "py/PyFunc",
    ),
    (
        {"mixlist_unknown_op"},
        "WARNING:tf2npu.runtime:graph 1: modify_mixlist names 'ReduceSumm', which is neither a "
        "TF op type nor the GE op type of one in the op library; it changes nothing",
        "",
    ),
    (
        {"variable_race"},
        "tf2npu: warning: [variable_race] variable 'global_step' is read by "
        "'PolynomialDecay/Cast_2' (Cast, /w/train.py:9 in <module>) and assigned by 'Assign' "
        "(Assign, /w/train.py:12 in <module>) in the same run, with nothing ordering them",
        "PolynomialDecay/Cast_2",
    ),
]


def ids(findings: list[Finding]) -> set[str]:
    return {f.id for f in findings}


@pytest.mark.parametrize(("expected", "text", "node"), LOGS, ids=[min(e[0]) for e in LOGS])
def test_each_log_gives_its_symptom(expected: set[str], text: str, node: str) -> None:
    found = match_log(Log("t.log", tuple(text.splitlines())))
    assert ids(found) == expected
    assert found[0].where.node == node


def test_every_row_with_patterns_has_a_literal_log_here() -> None:
    covered = {i for expected, _, _ in LOGS for i in expected}
    with_patterns = {s.id for s in SYMPTOMS if s.patterns}
    assert with_patterns - covered == set()


def test_a_row_whose_requirement_is_missing_does_not_report() -> None:
    oom = "EL0004: Failed to allocate memory requested by GE module."
    assert ids(match_log(Log("t", (oom,)))) == {"device_out_of_memory"}
    shuffle = "GeOp33_0GEOP::::DoRunAsync Failed"
    assert ids(match_log(Log("t", (shuffle,)))) == {"geop_failed"}


def test_evidence_names_the_log_line_and_repeats_are_counted() -> None:
    line = (
        "OP_REQUIRES failed at lookup_table_op.cc:809 : Failed precondition: Table not initialized."
    )
    found = match_log(Log("run.log", ("start", line, line)))
    assert len(found) == 1
    assert found[0].evidence == f"run.log:2: {line} (and 1 more)"


def test_a_long_line_is_shortened_in_the_evidence() -> None:
    found = match_log(Log("l", ("EZ9999: Inner Error! " + "x" * 1000,)))
    assert found[0].evidence.endswith("...")
    assert len(found[0].evidence) < 260


# -- where: node and source line --------------------------------------------------------------

TF_ERROR = """\
Traceback (most recent call last):
  File "/home/u/job/train.py", line 10, in <module>
    print(sess.run(loss))
  File "/usr/lib/python3/site-packages/tensorflow/python/client/session.py", line 972, in run
    result = self._run(None, fetches, feed_dict, options_ptr,
tensorflow.python.framework.errors_impl.FailedPreconditionError: Graph execution error:

Detected at node 'w/read' defined at (most recent call last):
Node: 'w/read'
Attempting to use uninitialized value w
\t [[{{node w/read}}]]
(op 'w/read' was created at /home/u/job/model.py:5 in build)
"""


def test_the_node_is_created_where_tf2npu_says() -> None:
    [found] = match_log(Log("t", tuple(TF_ERROR.splitlines())))
    assert found.where == Where(node="w", file="/home/u/job/model.py", line=5)


def test_without_the_creation_line_the_users_frame_is_named() -> None:
    lines = tuple(TF_ERROR.splitlines()[:-1])
    [found] = match_log(Log("t", lines))
    assert (found.where.file, found.where.line) == ("/home/u/job/train.py", 10)


def test_tf1_original_stack_trace_gives_the_creation_line() -> None:
    text = """\
FailedPreconditionError: Attempting to use uninitialized value v
\t [[node v/read (defined at /home/u/a.py:3) ]]
Original stack trace for 'v/read':
  File "/home/u/a.py", line 9, in <module>
    main()
  File "/home/u/a.py", line 3, in main
    v = tf.Variable(0.0)
  File "/usr/lib/python3.7/site-packages/tensorflow_core/python/ops/variables.py", line 260, in __call__
"""
    [found] = match_log(Log("t", tuple(text.splitlines())))
    assert (found.where.node, found.where.file, found.where.line) == ("v", "/home/u/a.py", 3)


def test_a_script_picks_its_own_frame() -> None:
    text = """\
Traceback (most recent call last):
  File "/home/u/launch.py", line 4, in <module>
    run()
  File "/home/u/train.py", line 77, in run
    hooks[-1].best_loss
AttributeError: 'NPUBroadcastGlobalVariablesHook' object has no attribute 'best_loss'
"""
    lines = tuple(text.splitlines())
    [plain] = match_log(Log("t", lines))
    assert (plain.where.file, plain.where.line) == ("/home/u/train.py", 77)
    [picked] = match_log(Log("t", lines), script="launch.py")
    assert (picked.where.file, picked.where.line) == ("/home/u/launch.py", 4)
    assert picked.where.op_type == "NPUBroadcastGlobalVariablesHook"


def test_a_traceback_far_above_is_not_the_lines_own() -> None:
    text = (
        'Traceback (most recent call last):\n  File "/u/a.py", line 1, in <module>\nValueError: x\n'
    )
    text += "\n".join(f"noise {i}" for i in range(30)) + "\nE19999: Inner Error! later\n"
    [found] = match_log(Log("t", tuple(text.splitlines())))
    assert found.where == Where()


# -- suppression ------------------------------------------------------------------------------


def f(symptom: str, where: Where = NOWHERE) -> Finding:
    return BY_ID[symptom].finding(where)


def test_resolve_drops_suppressed_and_redundant_generic_rows() -> None:
    kept = resolve([f("geop_failed"), f("inner_error"), f("op_compile_failed")])
    assert ids(kept) == {"op_compile_failed"}
    assert ids(resolve([f("geop_failed"), f("inner_error")])) == {"inner_error"}
    # a warning does not make an error-level generic row redundant
    assert ids(resolve([f("geop_failed"), f("fallback_to_host")])) == {
        "geop_failed",
        "fallback_to_host",
    }


def test_resolve_keeps_one_finding_per_place() -> None:
    a, b = Where(node="a"), Where(node="b")
    assert len(resolve([f("runs_on_host", a), f("runs_on_host", b), f("runs_on_host", a)])) == 2


# -- several inputs ---------------------------------------------------------------------------


def test_ranks_that_compiled_different_graphs() -> None:
    line = "The model has been compiled on the Ascend AI processor, current graph id is {}"
    rank0 = Log("rank0.log", tuple(line.format(n) for n in (1, 2, 3)))
    rank1 = Log("rank1.log", tuple(line.format(n) for n in (1, 2)))
    [found] = diagnose([rank0, rank1])
    assert found.id == "graphs_differ_across_ranks"
    assert found.where.file == "rank1.log"
    assert diagnose([rank0, rank0]) == []


def test_run_dir_names_the_op_type_and_is_not_repeated() -> None:
    log = Log("run.log", ("node hash_table: Table not initialized",))
    entry = {
        "name": "hash_table",
        "type": "HashTableV2",
        "not_support_reason": {"code": 3, "message": "in the dataset-initialisation graph of 'M'"},
    }
    run = RunDir(Path("r"), None, (entry,))
    [found] = diagnose([Log("l", ("\t [[{{node hash_table}}]] Table not initialized",))], run)
    assert (found.severity, found.where.op_type) == (Severity.ERROR, "HashTableV2")
    assert [x.severity for x in diagnose([], run)] == [Severity.WARNING]
    assert ids(diagnose([log], run)) == {"table_split"}


def test_findings_come_worst_first() -> None:
    log = Log(
        "l", ("dump_step string style is error", "x: 1 Placeholder(s) ('x') are fed from the host")
    )
    assert [x.severity for x in diagnose([log])] == [Severity.ERROR, Severity.INFO]


def test_an_empty_log_finds_nothing() -> None:
    assert match_log(Log("empty", ())) == []


# -- the literal that pre-selects lines -------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        (r"Table not initialized", "Table not initialized"),
        (r"ra rdev init failed, ret \[-17\]", "ra rdev init failed, ret [-17]"),
        (r"there is an? (aicore|aivec) error exception", " error exception"),
        (r"Attempting to use uninitiali[sz]ed value (?P<node>\S+)", "Attempting to use uninitiali"),
        (r"abcd?efgh", "efgh"),
        (r"\bE30008\b", "E30008"),
        (r"EI0002|EI0006", ""),
        (r"(?i)core dumped", ""),
        (r"a.b", ""),
    ],
)
def test_required_literal(pattern: str, literal: str) -> None:
    assert required_literal(pattern) == literal


@pytest.mark.parametrize("symptom", [s for s in SYMPTOMS if s.patterns], ids=lambda s: s.id)
def test_every_pattern_literal_is_in_the_patterns_own_match(symptom) -> None:  # type: ignore[no-untyped-def]
    """A literal that a matching line lacks would hide the row: check on this file's logs."""
    for _, text, _ in LOGS:
        for line in text.splitlines():
            for pattern in symptom.patterns:
                if re.search(pattern, line):
                    assert required_literal(pattern) in line, (pattern, line)


def test_a_race_names_the_read_at_its_script_line() -> None:
    line = (
        "tf2npu: warning: [variable_race] variable 'global_step' is read by 'lr/Cast' (Cast, "
        "/w/train.py:9 in <module>) and assigned by 'Assign' (Assign) in the same run"
    )
    [finding] = match_log(Log("run.log", (line,)))
    assert (finding.id, finding.severity.value) == ("variable_race", "warning")
    assert finding.where == Where("lr/Cast", "Cast", "/w/train.py", 9)
    assert "tf.control_dependencies" in finding.fix

"""Seed 000's three error cases, diagnosed from the logs and report folders of real runs.

``data/<case>/`` holds what ``tf2npu run --report-dir data/<case> <case>.py > data/<case>/run.log
2>&1`` left, run from ``tests/e2e/seed000/`` (where the scripts are); ``tests/e2e/test_seed000.py``
makes those runs afresh. All three fail in our runtime the way they fail on the device: the graph
engine reports ``table_split``, ``variable_in_preprocessing`` and ``v1_control_dynamic_shape``,
and ``tf2npu run`` stops with that error. Doctor reads each from the log, with the seed's fix;
case 02's variable also shows in ``check_result.tf.json`` (the input pipeline's graph holds it),
case 03's loop in the script (the migration's hazards table); and each case's device message as
the seed prints it is recognised too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tf2npu.debug.doctor.logtext import Log, read_log
from tf2npu.debug.doctor.match import diagnose
from tf2npu.debug.doctor.rundir import check_run, read_run_dir
from tf2npu.findings import Finding, Severity

DATA = Path(__file__).parent / "data"
SCRIPTS = Path(__file__).parents[2] / "e2e" / "seed000"

DEVICE_LOGS = {
    "case01_table": (
        "[2021-03-19 13:50:24.895266: W tensorflow/core/framework/op_kernel.cc:1651] "
        "OP_REQUIRES failed at lookup_table_op.cc:809 : Failed precondition: Table not "
        "initialized. [2021-03-19 13:50:24.895283: W tensorflow/core/framework/op_kernel.cc:1651] "
        "OP_REQUIRES failed at lookup_table_op.cc:809 : Failed precondition: Table not "
        "initialized."
    ),
    "case02_variable": (
        "tensorflow.python.framework.errors_impl.FailedPreconditionError: Error while reading "
        "resource variable inference/embed_continuous from Container: localhost. This could mean "
        "that the variable was uninitialized. Not found: Resource "
        "localhost/inference/embed_continuous/N10tensorflow3VarE does not exist."
    ),
    "case03_v1cond": (
        "node node_name(node_type) is v1 control operator, which is not supported, please "
        "convert to v2 control operator"
    ),
}
SEED_FIX = {
    "case01_table": 'custom_op.parameter_map["mix_compile_mode"].b = True',
    "case02_variable": "`batch_size = 64`",
    "case03_v1cond": "tf.enable_control_flow_v2() and tf.enable_resource_variables()",
}


def run(case: str, *, script: bool = False) -> list[Finding]:
    folder = DATA / case
    source = SCRIPTS / f"{case}.py" if script else None
    return diagnose([read_log(str(folder / "run.log"))], read_run_dir(folder), source)


def test_case01_table_not_initialised_fails_here_and_is_diagnosed() -> None:
    [found] = run("case01_table")
    assert (found.id, found.severity) == ("table_split", Severity.ERROR)
    assert SEED_FIX["case01_table"] in found.fix
    assert (found.where.node, found.where.op_type) == ("hash_table", "HashTableV2")
    assert (Path(found.where.file).name, found.where.line) == ("case01_table.py", 19)


def test_case02_variable_in_the_pipeline_fails_here_and_is_diagnosed() -> None:
    [found] = run("case02_variable")
    assert (found.id, found.severity) == ("variable_in_preprocessing", Severity.ERROR)
    assert SEED_FIX["case02_variable"] in found.fix
    assert (found.where.node, found.where.op_type) == ("Variable", "VariableV2")
    assert (Path(found.where.file).name, found.where.line) == ("case02_variable.py", 21)


def test_case02_check_result_alone_still_predicts_the_failure() -> None:
    [found] = check_run(read_run_dir(DATA / "case02_variable"))[:1]
    assert (found.id, found.severity) == ("variable_in_preprocessing", Severity.WARNING)
    assert found.cause.startswith("on the device: ")


def test_case03_v1_loop_with_a_growing_shape_fails_here_and_is_diagnosed() -> None:
    [found] = run("case03_v1cond")
    assert (found.id, found.severity) == ("v1_control_dynamic_shape", Severity.ERROR)
    assert SEED_FIX["case03_v1cond"] in found.fix
    assert (found.where.node, found.where.op_type) == ("while/Merge_1", "Merge")
    assert (Path(found.where.file).name, found.where.line) == ("case03_v1cond.py", 28)


def test_case03_the_script_points_at_the_loop() -> None:
    found = run("case03_v1cond", script=True)
    assert [f.id for f in found] == [
        "v1_control_dynamic_shape",
        "v1_loop_dynamic_shape",
        "v1_control_flow",
    ]
    assert "doctor symptom v1_control_dynamic_shape" in found[1].source
    assert SEED_FIX["case03_v1cond"] in found[1].fix
    assert found[1].where.line == 17


@pytest.mark.parametrize("case", sorted(DEVICE_LOGS))
def test_each_device_message_gets_the_seed_fix(case: str) -> None:
    [found] = diagnose([Log("device.log", (DEVICE_LOGS[case],))])
    assert found.severity is Severity.ERROR
    assert SEED_FIX[case] in found.fix
    assert found.source.startswith(f"seed 000 case 0{case[5]}")


def test_the_scripts_predict_what_the_device_would_hit() -> None:
    ids = {case: {f.id for f in run(case, script=True)} for case in SEED_FIX}
    assert "lookup_table_in_pipeline" in ids["case01_table"]
    assert "variable_in_pipeline" in ids["case02_variable"]
    assert "v1_loop_dynamic_shape" in ids["case03_v1cond"]

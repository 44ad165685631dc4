"""Seed 000's three error cases, diagnosed from the logs and report folders of real runs.

``data/<case>/`` holds what ``tf2npu run --report-dir data/<case> <case>.py > data/<case>/run.log
2>&1`` left, run from ``tests/e2e/seed000/`` (where the scripts are); ``tests/e2e/test_seed000.py``
makes those runs afresh. Only case 01 fails in our runtime the way it fails on the device: here a
variable or a v1 loop the device rejects runs on the CPU. Doctor still finds both: case 02 from
``check_result.tf.json`` (the variable sits in the input pipeline's graph), case 03 from the
script (the migration's hazards table); and each case's device message as the seed prints it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tf2npu.debug.doctor.logtext import Log, read_log
from tf2npu.debug.doctor.match import diagnose
from tf2npu.debug.doctor.rundir import read_run_dir
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


def test_case02_variable_in_the_pipeline_is_predicted_from_check_result() -> None:
    [found] = run("case02_variable")
    assert (found.id, found.severity) == ("variable_in_preprocessing", Severity.WARNING)
    assert SEED_FIX["case02_variable"] in found.fix
    assert (found.where.node, found.where.op_type) == ("Variable", "VariableV2")


def test_case03_v1_control_flow_runs_here_and_only_the_script_shows_it() -> None:
    assert run("case03_v1cond") == []
    found = run("case03_v1cond", script=True)
    assert [f.id for f in found] == ["v1_loop_dynamic_shape", "v1_control_flow"]
    assert "doctor symptom v1_control_dynamic_shape" in found[0].source
    assert SEED_FIX["case03_v1cond"] in found[0].fix
    assert found[0].where.line == 17


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

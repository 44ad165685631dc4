"""The symptoms table is complete and consistent with the code it describes (meta-tests)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tf2npu.debug.doctor.match import CHECKS
from tf2npu.debug.doctor.symptoms import BY_ID, SYMPTOMS, Symptom
from tf2npu.findings import Severity, Where
from tf2npu.migrate.tables.hazards import BY_ID as HAZARDS

SRC = Path(__file__).resolve().parents[3] / "src" / "tf2npu"
ROOT = SRC.parents[1]
GROUPS = {"node", "op_type", "file", "line"}


def test_ids_are_unique_slugs() -> None:
    assert len(BY_ID) == len(SYMPTOMS)
    for symptom in SYMPTOMS:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", symptom.id), symptom.id


def test_the_29_reference_patterns_each_have_one_row() -> None:
    references = [s.reference for s in SYMPTOMS if s.reference]
    assert sorted(references) == sorted(f"§7 #{n}" for n in range(1, 30))


def _tf2npu_error_classes() -> set[str]:
    """Every class in src/tf2npu deriving (transitively) from Tf2NpuError, by name."""
    bases: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names = {
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                }
                bases.setdefault(node.name, set()).update(names)
    found = {"Tf2NpuError"}
    while True:
        more = {name for name, parents in bases.items() if parents & found} - found
        if not more:
            return found
        found |= more


@pytest.mark.slow
def test_every_tf2npu_error_class_has_a_row() -> None:
    classes = _tf2npu_error_classes()
    assert {"LoopError", "ContribImportError", "UnknownNameError"} <= classes
    explained = {s.error_class for s in SYMPTOMS if s.error_class}
    assert classes - explained == set(), "Tf2NpuError classes without a doctor row"
    assert explained - classes == set(), "rows naming a class that does not exist"


def _emitted_slugs() -> dict[str, str]:
    """slug -> severity of every ``<diagnostics>.error/warning/info("slug", ...)`` call."""
    slugs: dict[str, str] = {}
    for path in (SRC / "graph").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("error", "warning", "info")
                and "diagnostics" in ast.unparse(node.func.value)
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                slugs[node.args[0].value] = node.func.attr
    return slugs


def test_every_engine_diagnostic_slug_has_a_row_with_its_severity() -> None:
    slugs = _emitted_slugs()
    assert {"table_split", "fallback_to_host", "mixlist_unknown_op"} <= set(slugs)
    for slug, severity in slugs.items():
        assert slug in BY_ID, f"diagnostic {slug!r} has no doctor row"
        assert BY_ID[slug].diagnostic == slug
        assert BY_ID[slug].severity.value == severity, slug
    assert {s.diagnostic for s in SYMPTOMS if s.diagnostic} == set(slugs)


def test_references_between_tables_resolve() -> None:
    for symptom in SYMPTOMS:
        assert set(symptom.hazards) <= set(HAZARDS), symptom.id
        assert set(symptom.suppresses) <= set(BY_ID), symptom.id
        assert symptom.id not in symptom.suppresses
        assert set(symptom.checks) <= CHECKS, symptom.id
    assert {c for s in SYMPTOMS for c in s.checks} == CHECKS


@pytest.mark.parametrize("symptom", SYMPTOMS, ids=lambda s: s.id)
def test_each_row_is_complete_and_findable(symptom: Symptom) -> None:
    assert symptom.cause and symptom.fix and symptom.source
    assert "\n" not in symptom.cause
    assert symptom.patterns or symptom.script or symptom.checks
    for pattern in (*symptom.patterns, *symptom.script, *symptom.requires):
        compiled = re.compile(pattern)
        assert set(compiled.groupindex) <= GROUPS, pattern


def test_finding_and_predicted_finding() -> None:
    row = BY_ID["variable_in_preprocessing"]
    where = Where(node="batch_size")
    seen = row.finding(where, "log:1: x")
    assert (seen.id, seen.severity, seen.cause, seen.where) == (
        row.id,
        Severity.ERROR,
        row.cause,
        where,
    )
    ahead = row.predicted(where)
    assert ahead.severity is Severity.WARNING
    assert ahead.cause == "on the device: " + row.cause
    assert BY_ID["uint8_saturation"].predicted().severity is Severity.INFO


def test_docs_list_every_symptom() -> None:
    docs = (SRC.parents[1] / "docs" / "doctor.md").read_text(encoding="utf-8")
    missing = [s.id for s in SYMPTOMS if f"| `{s.id}` |" not in docs]
    assert missing == [], "add these rows to docs/doctor.md's symptom table"


OVERFLOW_SCRIPT = """\
import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

x = tf.placeholder(tf.float32, [2], name="x")
with tf.Session(config=npu_config_proto()) as sess:
    print(sess.run(tf.square(x) * 2, {x: [1.0, 2.0]}))
"""


@pytest.mark.slow
@pytest.mark.tf
def test_the_overflow_commands_doctor_and_the_readme_print_work_as_printed(
    tmp_path: Path,
) -> None:
    fix = BY_ID["nonfinite_loss"].fix
    run, _, then = fix.partition("): ")[2].partition(", then ")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index("### Find what breaks accuracy") :]
    lines = [line.split("#")[0].strip() for line in block.splitlines()]
    readme_run = lines[lines.index("mkdir -p ovf") + 1].replace(".venv/bin/", "")
    (tmp_path / "train.py").write_text(OVERFLOW_SCRIPT, encoding="utf-8")
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TF_ENABLE_ONEDNN_OPTS": "0"}
    for command in (run.replace("SCRIPT", "train.py"), f"mkdir -p ovf && {readme_run}"):
        for step in (command, then):
            done = subprocess.run(
                ["bash", "-c", step], cwd=tmp_path, env=env, capture_output=True, text=True,
                timeout=600,
            )  # fmt: skip
            assert done.returncode == 0, f"{step}: {done.stderr}"
        assert "no overflow found in ovf" in done.stdout

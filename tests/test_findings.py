"""The shared finding type: severities rank, locations render, JSON keys are stable."""

from tf2npu.findings import Finding, Severity, Where, worst
from tf2npu.migrate.model import Severity as MigrateSeverity


def test_severity_ranks_and_values():
    assert [s.rank for s in (Severity.INFO, Severity.WARNING, Severity.ERROR)] == [0, 1, 2]
    assert Severity("error") is Severity.ERROR


def test_migrate_uses_the_same_severity():
    assert MigrateSeverity is Severity


def test_where_renders_what_is_known():
    assert str(Where()) == ""
    assert not Where()
    assert str(Where(node="w/read")) == "node 'w/read'"
    assert str(Where(file="train.py")) == "train.py"
    assert str(Where(file="train.py", line=7)) == "train.py:7"
    assert str(Where("t", "HashTableV2", "a.py", 3)) == "node 't' (HashTableV2) at a.py:3"


def test_finding_json_has_stable_keys_and_nulls():
    finding = Finding("x", Severity.WARNING, "because", "do this", Where(node="n"), "ref")
    assert finding.to_json() == {
        "id": "x",
        "severity": "warning",
        "cause": "because",
        "fix": "do this",
        "where": {"node": "n", "op_type": None, "file": None, "line": None},
        "source": "ref",
        "evidence": "",
    }


def test_worst():
    assert worst([]) is None
    info = Finding("a", Severity.INFO, "", "")
    error = Finding("b", Severity.ERROR, "", "")
    assert worst([info, error, info]) is Severity.ERROR

from __future__ import annotations

import pytest

from tf2npu.migrate.model import ApiStatus, Severity
from tf2npu.migrate.report.labels import STATUS_LABELS, counted, severity_count, status_label


def test_every_status_has_a_label_in_enum_order() -> None:
    assert list(STATUS_LABELS) == list(ApiStatus)


def test_labels_are_distinct() -> None:
    assert len(set(STATUS_LABELS.values())) == len(ApiStatus)


def test_labels() -> None:
    assert [status_label(s) for s in ApiStatus] == [
        "supported",
        "supported after migration",
        "training after migration",
        "manual migration",
        "unsupported",
        "unsupported (harmless)",
        "compat alias",
        "deprecated",
        "analysing",
        "not listed",
        "host Python",
    ]


def test_labels_cannot_be_changed() -> None:
    with pytest.raises(TypeError):
        STATUS_LABELS[ApiStatus.SUPPORTED] = "ok"  # type: ignore[index]


@pytest.mark.parametrize(("n", "expected"), [(0, "0 files"), (1, "1 file"), (2, "2 files")])
def test_counted(n: int, expected: str) -> None:
    assert counted(n, "file") == expected


def test_counted_with_an_irregular_plural() -> None:
    assert counted(3, "analysis", "analyses") == "3 analyses"


def test_severity_count() -> None:
    assert [severity_count(1, s) for s in Severity] == ["1 info", "1 warning", "1 error"]
    assert [severity_count(2, s) for s in Severity] == ["2 info", "2 warnings", "2 errors"]

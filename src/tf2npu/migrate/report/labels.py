"""Short human labels for the report's enum values: one wording for every renderer.

The machine-readable reports (CSV, JSON, the XLSX data sheet) use the stable enum values; the
human-readable ones (Markdown, terminal, the XLSX summary sheet) use these labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from tf2npu.migrate.model import ApiStatus, Severity

STATUS_LABELS: Final[Mapping[ApiStatus, str]] = MappingProxyType(
    {
        ApiStatus.SUPPORTED: "supported",
        ApiStatus.MIGRATED_BY_TOOL: "supported after migration",
        ApiStatus.TRAINING_AFTER_MIGRATION: "training after migration",
        ApiStatus.MANUAL: "manual migration",
        ApiStatus.UNSUPPORTED: "unsupported",
        ApiStatus.UNSUPPORTED_HARMLESS: "unsupported (harmless)",
        ApiStatus.COMPAT: "compat alias",
        ApiStatus.DEPRECATED: "deprecated",
        ApiStatus.ANALYSING: "analysing",
        ApiStatus.NOT_LISTED: "not listed",
        ApiStatus.HOST_PYTHON: "host Python",
    }
)
"""One short label per :class:`ApiStatus`, in the enum's order."""


SEVERITY_PLURALS: Final[Mapping[Severity, str]] = MappingProxyType(
    {Severity.ERROR: "errors", Severity.WARNING: "warnings", Severity.INFO: "info"}
)
"""The plural of each severity's value, for counts such as ``2 warnings, 3 info``."""


def status_label(status: ApiStatus) -> str:
    """The label of ``status``, e.g. ``"supported after migration"``."""
    return STATUS_LABELS[status]


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun that agrees with it: ``counted(2, "file")`` is ``"2 files"``."""
    noun = singular if n == 1 else (plural if plural is not None else singular + "s")
    return f"{n} {noun}"


def severity_count(n: int, severity: Severity) -> str:
    """``n`` findings at ``severity``: ``"1 error"``, ``"2 warnings"``, ``"3 info"``."""
    return counted(n, severity.value, SEVERITY_PLURALS[severity])

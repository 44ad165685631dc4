"""Results of a migration, as plain values.

Rules produce :class:`Change` and :class:`Finding` records, the analysis produces
:class:`ApiUse` records; the engine gathers them per file into a :class:`FileResult`.
Every renderer (terminal, Markdown, CSV, JSON, XLSX) is a view of these values.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from tf2npu.findings import Severity as Severity  # one severity for every finding type


class ApiStatus(enum.Enum):
    """Support status of a TF / Horovod API on Ascend, after the vendor's API support list.

    The values are stable strings used in every report.
    """

    SUPPORTED = "supported"
    """Works on Ascend as it is."""
    MIGRATED_BY_TOOL = "migrated_by_tool"
    """Works after the automatic rewrite (the tool changes the call)."""
    TRAINING_AFTER_MIGRATION = "training_after_migration"
    """Training works after the automatic rewrite (sessions, Horovod, ...)."""
    MANUAL = "manual"
    """Works, but some uses need a manual change (e.g. dynamic shapes in control flow)."""
    UNSUPPORTED = "unsupported"
    """Not supported on Ascend; there is no migration path: avoid it."""
    UNSUPPORTED_HARMLESS = "unsupported_harmless"
    """Not supported, but it does not affect migration (e.g. device queries)."""
    COMPAT = "compat"
    """A ``tf.compat`` alias; its target's status is what matters."""
    DEPRECATED = "deprecated"
    """Deprecated in TF 1.15 (most of ``tf.contrib``)."""
    ANALYSING = "analysing"
    """The vendor has not finished analysing it: support is not guaranteed."""
    NOT_LISTED = "not_listed"
    """Not in the support list at all."""
    HOST_PYTHON = "host_python"
    """Not in the support list, and builds no graph op: Python that runs on the host
    (command-line flags, session-config protobufs). tf2npu's own classification, not the
    vendor's."""


class FileStatus(enum.Enum):
    """What happened to one input file."""

    MIGRATED = "migrated"
    """A Python file that the rules changed."""
    UNCHANGED = "unchanged"
    """A Python file that needed no change (copied byte for byte)."""
    COPIED = "copied"
    """A non-Python file (copied byte for byte)."""
    FAILED = "failed"
    """A file that could not be processed (copied unchanged when possible); ``reason`` says why."""


@dataclass(frozen=True, slots=True)
class Change:
    """One edit a rule made: where, which rule, the source text before and after."""

    path: str
    line: int
    col: int
    rule: str
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class Finding:
    """Something the user should know or do, with the location, the rule and the fix."""

    path: str
    line: int
    col: int
    rule: str
    severity: Severity
    message: str
    fix: str = ""


@dataclass(frozen=True, slots=True)
class ApiUse:
    """One use of a TF or Horovod API, resolved to its full name and classified."""

    path: str
    line: int
    col: int
    module: str
    api: str
    status: ApiStatus
    advice: str
    kind: str = "call"
    """``call``, ``attribute``, ``decorator`` or ``base`` (a base class)."""


@dataclass(frozen=True, slots=True)
class FileResult:
    """Everything the migration learned and did for one input file."""

    path: str
    """Path relative to the migrated root, with ``/`` separators."""
    status: FileStatus
    lines: int = 0
    changes: tuple[Change, ...] = ()
    findings: tuple[Finding, ...] = ()
    api_uses: tuple[ApiUse, ...] = ()
    reason: str = ""
    """Why a FAILED file failed."""
    diff: str = ""
    """Unified diff of the change (empty when unchanged)."""


@dataclass(slots=True)
class MigrationReport:
    """The results for a whole run, in input order (sorted paths)."""

    source: str
    output: str
    files: list[FileResult] = field(default_factory=list)
    options: dict[str, object] = field(default_factory=dict)
    seconds: float = 0.0

    def count(self, status: FileStatus) -> int:
        return sum(1 for f in self.files if f.status is status)

    @property
    def findings(self) -> list[Finding]:
        return [x for f in self.files for x in f.findings]

    @property
    def changes(self) -> list[Change]:
        return [x for f in self.files for x in f.changes]

    @property
    def api_uses(self) -> list[ApiUse]:
        return [x for f in self.files for x in f.api_uses]

    @property
    def failed(self) -> bool:
        """True when a file failed or a finding is at error level (exit code 1)."""
        return any(
            f.status is FileStatus.FAILED or any(x.severity is Severity.ERROR for x in f.findings)
            for f in self.files
        )

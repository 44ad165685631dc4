"""The result type every diagnosing tool returns: a :class:`Finding` with its :class:`Severity`.

``tf2npu doctor`` (a log or a run folder in, findings out) and the profile advisor (profile rows
in) both produce findings; a renderer (terminal, JSON) is a view of them. A finding names the
*symptom* (a stable id users can grep and docs can link), its cause in one sentence, the fix as
the exact change to make, where it happened (node and source line, when the input says), and
where the fact comes from.

>>> f = Finding("table_split", Severity.ERROR, "the table is split", "set mix_compile_mode=True",
...             Where(node="hash_table", op_type="HashTableV2", file="train.py", line=12),
...             "seed 000 case 01")
>>> str(f.where)
"node 'hash_table' (HashTableV2) at train.py:12"
>>> sorted(f.to_json())
['cause', 'evidence', 'fix', 'id', 'severity', 'source', 'where']
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Finding", "Severity", "Where", "worst"]


class Severity(enum.Enum):
    """How much a finding matters; an ERROR makes a diagnosing command exit with 1."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        """0 for INFO, 1 for WARNING, 2 for ERROR (to sort the worst first)."""
        return _RANK[self.value]


_RANK = {"info": 0, "warning": 1, "error": 2}


@dataclass(frozen=True, slots=True)
class Where:
    """Where a finding happened: a graph node and/or a source line, as far as the input says."""

    node: str = ""
    op_type: str = ""
    file: str = ""
    line: int = 0
    """0 when unknown (or when only the file is known)."""

    def __bool__(self) -> bool:
        return bool(self.node or self.file)

    def __str__(self) -> str:
        parts = []
        if self.node:
            parts.append(f"node {self.node!r}" + (f" ({self.op_type})" if self.op_type else ""))
        if self.file:
            parts.append(
                ("at " if parts else "") + self.file + (f":{self.line}" if self.line else "")
            )
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """Stable keys: ``node``, ``op_type``, ``file``, ``line`` (null when unknown)."""
        return {
            "node": self.node or None,
            "op_type": self.op_type or None,
            "file": self.file or None,
            "line": self.line or None,
        }


@dataclass(frozen=True, slots=True)
class Finding:
    """One diagnosed symptom: what it is, why, what to change, where, and on whose word."""

    id: str
    """Stable symptom id (``table_split``, ``hccl_notify_timeout``, ...)."""
    severity: Severity
    cause: str
    """One sentence."""
    fix: str
    """The exact change: an option with its value, a ``modify_mixlist`` JSON, a code edit."""
    where: Where = field(default_factory=Where)
    source: str = ""
    """Where the fact comes from (a vendor FAQ page, an error-code page, a seed case)."""
    evidence: str = ""
    """What was matched, e.g. ``train.log:12: <the line>``; empty when nothing textual."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object with stable keys (``where`` is :meth:`Where.to_json`)."""
        return {
            "id": self.id,
            "severity": self.severity.value,
            "cause": self.cause,
            "fix": self.fix,
            "where": self.where.to_json(),
            "source": self.source,
            "evidence": self.evidence,
        }


def worst(findings: Iterable[Finding]) -> Severity | None:
    """The highest severity among ``findings`` (None when there are none)."""
    return max((f.severity for f in findings), key=lambda s: s.rank, default=None)

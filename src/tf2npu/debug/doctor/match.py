"""Logs, a run folder and a script in, :class:`~tf2npu.findings.Finding` values out (TF-free).

:func:`diagnose` is what ``tf2npu doctor`` runs. Each log is matched line by line against the
``patterns`` of :data:`~tf2npu.debug.doctor.symptoms.SYMPTOMS` (a row whose ``requires`` do not
all occur in the log is skipped), then read by the structured checks; the run folder's files
and the script give their own findings. Within one input a more specific row replaces the rows
it ``suppresses``, and a ``generic`` row only reports when nothing specific at error level
matched. The same row at the same place reports once, its evidence the first line seen.

>>> from tf2npu.debug.doctor.logtext import Log
>>> log = Log("train.log", ("E40021: Failed to compile Op [conv1/Conv2D]. (oppath: [x])",))
>>> [(f.id, f.where.node) for f in match_log(log)]
[('op_compile_failed', 'conv1/Conv2D')]
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tf2npu.debug.doctor.checks import loss_scale_findings, op_summary_findings, rank_findings
from tf2npu.debug.doctor.logtext import Log, locate
from tf2npu.debug.doctor.rundir import RunDir, check_run
from tf2npu.debug.doctor.symptoms import BY_ID, SYMPTOMS, Symptom
from tf2npu.findings import Finding, Severity, Where

__all__ = ["CHECKS", "diagnose", "match_log", "resolve"]

CHECKS = frozenset(
    {"check_result", "run_summary", "overflow_dump", "op_summary", "loss_scale_log", "ranks"}
)
"""The structured checks (:mod:`~tf2npu.debug.doctor.rundir`, :mod:`~tf2npu.debug.doctor.checks`)
a symptom row can name in ``checks``."""

_EVIDENCE_CHARS = 240


@dataclass(frozen=True, slots=True)
class _Pattern:
    """A compiled pattern and a substring every line it matches holds (``""``: none known)."""

    regex: re.Pattern[str]
    literal: str
    whole: re.Pattern[str]
    """The regex for a whole text (``^`` at every line start), used when there is no literal."""


@dataclass(frozen=True, slots=True)
class _Rule:
    """A symptom's compiled patterns."""

    symptom: Symptom
    patterns: tuple[_Pattern, ...]
    requires: tuple[_Pattern, ...]


def _pattern(text: str) -> _Pattern:
    return _Pattern(re.compile(text), required_literal(text), re.compile(text, re.MULTILINE))


@functools.cache
def _rules() -> tuple[_Rule, ...]:
    """Every row with patterns, compiled once."""
    return tuple(
        _Rule(s, tuple(map(_pattern, s.patterns)), tuple(map(_pattern, s.requires)))
        for s in SYMPTOMS
        if s.patterns
    )


_META = frozenset("()[]{}|*+?.^$")
_QUANTIFIERS = frozenset("*+?{")
_MIN_LITERAL = 3


def required_literal(pattern: str) -> str:
    r"""The longest run of plain characters that every match of ``pattern`` contains.

    Only characters outside groups and classes count, a character made optional by a
    quantifier does not, and a pattern with a top-level ``|`` or inline flags has none (``""``).

    >>> required_literal(r"Optype \[(?P<op_type>[^\]]+)\] of Ops kernel \[AIcoreEngine\]")
    '] of Ops kernel [AIcoreEngine]'
    >>> required_literal(r"\b(E19999|EE9999)\b"), required_literal("(?i)aborted")
    ('', '')
    """
    runs: list[str] = []
    run, depth, i = "", 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escaped = pattern[i + 1]
            plain = not escaped.isalnum()
            run = run + escaped if plain and depth == 0 else _end(runs, run)
            i += 2
            continue
        if char == "[":
            i = _class_end(pattern, i)
            run = _end(runs, run)
            continue
        if char in "()":
            if pattern.startswith("(?i", i) or pattern.startswith("(?s", i):
                return ""
            depth += 1 if char == "(" else -1
            run = _end(runs, run)
        elif char == "|" and depth == 0:
            return ""
        elif char in _QUANTIFIERS:
            run = _end(runs, run[:-1])
        elif char in _META:
            run = _end(runs, run)
        elif depth == 0:
            run += char
        i += 1
    _end(runs, run)
    best = max(runs, key=len, default="")
    return best if len(best) >= _MIN_LITERAL else ""


def _end(runs: list[str], run: str) -> str:
    if run:
        runs.append(run)
    return ""


def _class_end(pattern: str, start: int) -> int:
    """The index after the character class that starts at ``start``."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


class _Text:
    """A log as one string, to find candidate lines at C speed: a substring search over the
    whole text (or, for a pattern without a literal, one regex scan) instead of a Python-level
    test per line and pattern (200,000 lines x 100 patterns took half a minute)."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self.text = "\n".join(lines)
        self.starts = [0, *itertools.accumulate(len(line) + 1 for line in lines)][:-1]
        self._seen: dict[str, list[int]] = {}

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def candidates(self, pattern: _Pattern) -> list[int]:
        """Indices of the lines that may match ``pattern``, ascending, without repeats (one
        search per literal: rows share literals such as ``EL0004``)."""
        key = pattern.literal or pattern.whole.pattern
        if key not in self._seen:
            lines = (self.line_of(offset) for offset in self._offsets(pattern))
            self._seen[key] = list(dict.fromkeys(lines))
        return self._seen[key]

    def _offsets(self, pattern: _Pattern) -> Iterator[int]:
        if not pattern.literal:
            yield from (m.start() for m in pattern.whole.finditer(self.text))
            return
        offset = self.text.find(pattern.literal)
        while offset != -1:
            yield offset
            offset = self.text.find(pattern.literal, offset + 1)

    def matches(self, pattern: _Pattern) -> Iterator[tuple[int, re.Match[str]]]:
        for index in self.candidates(pattern):
            match = pattern.regex.search(self.lines[index])
            if match is not None:
                yield index, match


def match_log(log: Log, script: str | None = None) -> list[Finding]:
    """The findings of one log, after suppression and de-duplication (:func:`resolve`).

    ``script`` (a path) picks the traceback frame to name when a log holds several scripts.
    """
    text = _Text(log.lines)
    hits: dict[tuple[int, int], tuple[Symptom, re.Match[str]]] = {}
    for number, rule in enumerate(_rules()):
        found_here = [(i, m) for p in rule.patterns for i, m in text.matches(p)]
        if found_here and all(next(text.matches(p), None) for p in rule.requires):
            for index, match in found_here:
                hits.setdefault((index, number), (rule.symptom, match))
    found = [
        symptom.finding(
            locate(log, index, _captured(match), script),
            _evidence(log.name, index, log.lines[index]),
        )
        for (index, _), (symptom, match) in sorted(hits.items(), key=lambda item: item[0])
    ]
    found += loss_scale_findings(log)
    found += op_summary_findings(text.text, log.name)
    return resolve(found)


def _captured(match: re.Match[str]) -> Where:
    groups = match.groupdict()
    line = groups.get("line") or ""
    return Where(
        node=groups.get("node") or "",
        op_type=groups.get("op_type") or "",
        file=groups.get("file") or "",
        line=int(line) if line.isdigit() else 0,
    )


def _evidence(name: str, index: int, line: str) -> str:
    text = line.strip()
    if len(text) > _EVIDENCE_CHARS:
        text = text[: _EVIDENCE_CHARS - 3] + "..."
    return f"{name}:{index + 1}: {text}"


def resolve(found: Iterable[Finding]) -> list[Finding]:
    """``found`` without suppressed rows, generic rows made redundant, and repeats.

    Findings whose id is no row of the table (a migration hazard) are kept as they are.
    """
    found = list(found)
    ids = {f.id for f in found}
    suppressed = {s for i in ids if i in BY_ID for s in BY_ID[i].suppresses}
    specific = any(
        f.severity is Severity.ERROR and f.id not in suppressed and not _generic(f.id)
        for f in found
    )
    kept = [f for f in found if f.id not in suppressed and not (_generic(f.id) and specific)]
    return _unique(kept)


def _generic(symptom_id: str) -> bool:
    return symptom_id in BY_ID and BY_ID[symptom_id].generic


def _unique(found: list[Finding]) -> list[Finding]:
    """One finding per (id, where); the first keeps its evidence and counts the repeats.

    A finding without a place is dropped when the same symptom was also found at a place (the
    line that names the kernel says more than the headline above it).
    """
    located = {f.id for f in found if f.where}
    first: dict[tuple[str, Where], int] = {}
    repeats: list[int] = []
    out: list[Finding] = []
    for f in found:
        if not f.where and f.id in located:
            continue
        key = (f.id, f.where)
        if key in first:
            repeats[first[key]] += 1
            continue
        first[key] = len(out)
        out.append(f)
        repeats.append(0)
    return [
        replace(f, evidence=f"{f.evidence} (and {n} more)") if n and f.evidence else f
        for f, n in zip(out, repeats, strict=True)
    ]


def diagnose(
    logs: Sequence[Log] = (), run: RunDir | None = None, script: Path | None = None
) -> list[Finding]:
    """Every finding of ``logs``, the run folder and the script, worst first.

    Nodes a log names get their op type from the run's ``check_result.tf.json``.
    """
    from tf2npu.debug.doctor.script import check_script

    name = str(script) if script is not None else None
    found: list[Finding] = []
    for log in logs:
        found += match_log(log, name)
    found += rank_findings(logs)
    if run is not None:
        seen = {(f.id, f.where.node) for f in found} | {(f.id, "") for f in found}
        found += [f for f in resolve(check_run(run)) if (f.id, f.where.node) not in seen]
        found = [_with_op_type(f, run) for f in found]
    if script is not None:
        found += check_script(script)
    order = {s.id: n for n, s in enumerate(SYMPTOMS)}
    return sorted(resolve(found), key=lambda f: (-f.severity.rank, order.get(f.id, len(order))))


def _with_op_type(found: Finding, run: RunDir) -> Finding:
    if not found.where.node or found.where.op_type:
        return found
    op_type = run.op_type(found.where.node)
    return replace(found, where=replace(found.where, op_type=op_type)) if op_type else found

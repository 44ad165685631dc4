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

import functools
import re
from collections.abc import Iterable, Sequence
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
class _Rule:
    """A symptom's compiled patterns."""

    symptom: Symptom
    patterns: tuple[re.Pattern[str], ...]
    requires: tuple[re.Pattern[str], ...]


@functools.cache
def _rules() -> tuple[tuple[_Rule, ...], re.Pattern[str]]:
    """Every row with patterns, compiled once, and one regex any matching line matches (a
    line that misses it is skipped without trying each row)."""
    rules = tuple(
        _Rule(s, tuple(map(re.compile, s.patterns)), tuple(map(re.compile, s.requires)))
        for s in SYMPTOMS
        if s.patterns
    )
    unnamed = (re.sub(r"\(\?P<\w+>", "(?:", p) for s in SYMPTOMS for p in s.patterns)
    return rules, re.compile("|".join(f"(?:{p})" for p in unnamed))


def match_log(log: Log, script: str | None = None) -> list[Finding]:
    """The findings of one log, after suppression and de-duplication (:func:`resolve`).

    ``script`` (a path) picks the traceback frame to name when a log holds several scripts.
    """
    rules, any_rule = _rules()
    active = [r for r in rules if all(_occurs(p, log.lines) for p in r.requires)]
    found: list[Finding] = []
    for index, line in enumerate(log.lines):
        if not any_rule.search(line):
            continue
        for rule in active:
            match = next((m for p in rule.patterns if (m := p.search(line))), None)
            if match is not None:
                where = locate(log, index, _captured(match), script)
                found.append(rule.symptom.finding(where, _evidence(log.name, index, line)))
    found += loss_scale_findings(log)
    found += op_summary_findings("\n".join(log.lines), log.name)
    return resolve(found)


def _occurs(pattern: re.Pattern[str], lines: Sequence[str]) -> bool:
    return any(pattern.search(line) for line in lines)


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

"""``doctor --script``: what a script would hit on the device, before it runs (TF-free, read-only).

Two sources, both data: the migration's hazards table (the ``hazards`` rule of ``tf2npu
migrate`` run over the script in memory; nothing is written), whose findings keep their hazard
ids and name the doctor symptom each leads to; and the ``script`` patterns of
:data:`~tf2npu.debug.doctor.symptoms.SYMPTOMS` (one line of source each), reported as predicted
failures.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from tf2npu.debug.doctor.symptoms import SYMPTOMS, Symptom
from tf2npu.errors import UsageError
from tf2npu.findings import Finding, Where
from tf2npu.fs import NotRegularFile, read_regular

__all__ = ["HAZARDS_SOURCE", "check_script"]

HAZARDS_SOURCE = "tf2npu migrate hazards table (migrate/tables/hazards.py)"
_HAZARD_ID = re.compile(r"^\[(?P<id>\w+)\] ")


def check_script(path: Path) -> list[Finding]:
    """The hazards and script patterns found in ``path``, in line order.

    Raises:
        UsageError: the file does not exist, cannot be read, or is not Python that parses.
    """
    raw = _read(path)
    found = list(_hazards(raw, path)) + list(_patterns(raw, path))
    return sorted(found, key=lambda f: f.where.line)


def _read(path: Path) -> bytes:
    fix = "give the training script's .py file"
    if not path.exists():
        raise UsageError(f"--script {str(path)!r} does not exist; {fix}")
    try:
        return read_regular(path)
    except NotRegularFile as exc:  # a FIFO would block, /dev/zero never end
        raise UsageError(f"--script {str(path)!r} is {exc}; {fix}") from None
    except OSError as exc:
        raise UsageError(f"--script {str(path)!r} cannot be read ({exc.strerror}); {fix}") from None


def _hazards(raw: bytes, path: Path) -> Iterator[Finding]:
    from tf2npu.migrate.engine import migrate_source
    from tf2npu.migrate.model import FileStatus

    result = migrate_source(raw, str(path)).result
    if result.status is FileStatus.FAILED:
        raise UsageError(f"--script {str(path)!r} cannot be analysed: {result.reason}")
    leads_to = _leads_to()
    for item in result.findings:
        match = _HAZARD_ID.match(item.message)
        if item.rule != "hazards" or match is None:
            continue
        hazard = match["id"]
        source = HAZARDS_SOURCE
        symptom = leads_to.get(hazard)
        if symptom is not None:
            source += f"; on the device: doctor symptom {symptom.id} ({symptom.source})"
        yield Finding(
            hazard,
            item.severity,
            item.message[match.end() :],
            item.fix,
            Where(file=str(path), line=item.line),
            source,
            f"{path}:{item.line}",
        )


def _leads_to() -> dict[str, Symptom]:
    """Hazard id -> the symptom row it predicts (the first row naming it)."""
    table: dict[str, Symptom] = {}
    for symptom in SYMPTOMS:
        for hazard in symptom.hazards:
            table.setdefault(hazard, symptom)
    return table


def _patterns(raw: bytes, path: Path) -> Iterator[Finding]:
    rows = [(s, [re.compile(p) for p in s.script]) for s in SYMPTOMS if s.script]
    text = raw.decode("utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for symptom, patterns in rows:
            if any(p.search(code) for p in patterns):
                where = Where(file=str(path), line=number)
                yield symptom.predicted(where, f"{path}:{number}: {line.strip()}")

"""Migrating a file or a folder: walking, parallelism, atomic writes that never follow a link.

Nothing is lost: every input entry appears in the output (migrated, copied unchanged, or — for a
symbolic link — recreated as the same link, never followed; a named pipe is recreated, never
read) or is reported failed with the reason (an unreadable folder, a device). The input is never
modified unless ``in_place`` is set, and each output file is written to a temporary name and
renamed into place, so an interrupted run leaves no half-written file (a killed run may leave a
hidden temporary file, which the next run into the same place removes).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tf2npu.atomic import copy_stream_atomic, temp_name, write_bytes_atomic, write_bytes_new
from tf2npu.errors import Tf2NpuError, UsageError
from tf2npu.migrate.engine import MAX_SOURCE_BYTES, migrate_source, too_large_reason
from tf2npu.migrate.model import FileResult, FileStatus, Finding, MigrationReport, Severity
from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.plan import Plan, inside, make_plan, real
from tf2npu.migrate.project import forget_parsed, horovod_holders
from tf2npu.migrate.walk import (
    Kind,
    Task,
    conflicts,
    folder_tasks,
    make_folders,
    remove_leftovers,
    special_kind,
)

__all__ = ["Plan", "Task", "WriteError", "make_plan", "migrate_tree", "run_task", "tasks"]

PYTHON_SUFFIXES = (".py",)
MAX_BACKUPS = 100
"""``FILE.bak``, ``FILE.bak.1`` ... ``FILE.bak.99``: the names tried for a backup."""

_FATAL_WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}
"""Errors after which writing any further file is pointless: the run stops with a message."""


class WriteError(Tf2NpuError):
    """The output cannot be written at all (disk full, quota, read-only): the run stops."""


def tasks(plan: Plan) -> list[Task]:
    """Every entry below SRC (links included, not followed), sorted by relative path."""
    if plan.single_file:
        return [Task(plan.source.name, str(plan.source), str(plan.output))]
    return folder_tasks(plan.source, plan.output)


# -- one entry ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Settings:
    options: MigrateOptions
    in_place: bool
    backup: bool
    diff: bool
    root: str
    out_root: str


def run_task(task: Task, settings: Settings) -> FileResult:
    """Migrate, copy or recreate one entry; never raises for a problem with the entry itself.

    Raises:
        WriteError: the output cannot be written at all (e.g. the disk is full).
    """
    try:
        if task.kind is Kind.UNREADABLE:
            return _failed(task, task.detail)
        _make_parent(task, settings)
        if task.kind is Kind.LINK:
            return _link(task, settings)
        if task.kind is Kind.SPECIAL:
            return _special(task, settings)
        return _file(task, settings)
    except OSError as exc:
        where = task.src if settings.in_place else task.dst
        reason = exc.strerror or str(exc) or type(exc).__name__
        if exc.errno in _FATAL_WRITE_ERRORS:
            fix = "choose a writable place" if exc.errno == errno.EROFS else "free some space"
            raise WriteError(
                f"cannot write {where!r}: {reason}; {fix} (or choose another place with -o) "
                "and run again"
            ) from None
        return _failed(task, f"cannot write {where!r}: {reason}")


def _failed(task: Task, reason: str) -> FileResult:
    return FileResult(task.rel, FileStatus.FAILED, reason=reason)


def _make_parent(task: Task, settings: Settings) -> None:
    if not settings.in_place and settings.out_root:
        make_folders(Path(settings.out_root), task.rel.rpartition("/")[0])


def _open_regular(path: str) -> tuple[int, os.stat_result]:
    """Open ``path`` for reading without blocking on a pipe or following a link."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # replaced since the walk: never read it
        os.close(fd)
        raise IsADirectoryError(21, f"became a {special_kind(info.st_mode)}")
    return fd, info


def _file(task: Task, settings: Settings) -> FileResult:
    is_python = task.rel.endswith(PYTHON_SUFFIXES)
    if settings.in_place and not is_python:
        return FileResult(task.rel, FileStatus.COPIED)
    try:
        fd, info = _open_regular(task.src)
    except OSError as exc:
        return _failed(task, f"cannot read: {exc.strerror or exc}")
    mode = info.st_mode & 0o7777
    with os.fdopen(fd, "rb") as stream:
        if not is_python or info.st_size > MAX_SOURCE_BYTES:
            if not settings.in_place:
                copy_stream_atomic(Path(task.dst), stream, mode)
            if is_python:
                return _failed(task, too_large_reason(info.st_size))
            return FileResult(task.rel, FileStatus.COPIED)
        raw = stream.read()
    migrated = migrate_source(raw, task.rel, settings.options, diff=settings.diff)
    if not settings.in_place:
        write_bytes_atomic(Path(task.dst), migrated.output, mode)
        return migrated.result
    if migrated.output == raw:
        return migrated.result
    note: tuple[Finding, ...] = ()
    if settings.backup:
        note = (_backup(task, raw, mode),)
    write_bytes_atomic(Path(task.src), migrated.output, mode)
    return dataclasses.replace(migrated.result, findings=note + migrated.result.findings)


def _backup(task: Task, raw: bytes, mode: int) -> Finding:
    """Keep the original as ``FILE.bak`` or, when taken, the first free ``FILE.bak.N``."""
    src = Path(task.src)
    for n in range(MAX_BACKUPS):
        name = src.name + ".bak" + (f".{n}" if n else "")
        if write_bytes_new(src.with_name(name), raw, mode):
            taken = "" if not n else f" ({src.name}.bak existed already)"
            return Finding(task.rel, 1, 1, "files", Severity.INFO,
                           f"original kept as {name}{taken}")  # fmt: skip
    raise FileExistsError(
        17, f"no free backup name ({src.name}.bak ... .bak.{MAX_BACKUPS - 1} all exist)"
    )


def _link(task: Task, settings: Settings) -> FileResult:
    target = os.readlink(task.src)
    if not settings.in_place:
        dst = Path(task.dst)
        if dst.is_dir() and not dst.is_symlink():
            raise IsADirectoryError(21, "a folder is in the way of the link")
        temp = dst.with_name(temp_name(dst.name))
        os.symlink(target, temp)
        os.replace(temp, dst)  # replaces a stale file or link in OUT, never writes through it
    severity, note = Severity.INFO, "symbolic link recreated as the same link (not followed)"
    try:
        os.stat(task.src)
    except OSError as exc:
        what = "a link loop" if exc.errno == errno.ELOOP else "a dangling link"
        severity, note = Severity.WARNING, f"symbolic link to {target!r} is {what}; {note}"
    else:
        if not inside(real(Path(task.src)), Path(settings.root)):
            severity = Severity.WARNING
            note = f"symbolic link to {target!r} outside SRC: not followed; {note.split(' (')[0]}"
    return FileResult(task.rel, FileStatus.COPIED,
                      findings=(Finding(task.rel, 1, 1, "files", severity, note),))  # fmt: skip


def _special(task: Task, settings: Settings) -> FileResult:
    """A pipe, socket or device is never opened: a pipe is recreated, the others reported."""
    kind = task.detail
    if settings.in_place:
        note = f"{kind}: left as it is, never read"
    elif kind.startswith("named pipe"):
        dst = Path(task.dst)
        temp = dst.with_name(temp_name(dst.name))
        os.mkfifo(temp, os.lstat(task.src).st_mode & 0o777)
        os.replace(temp, dst)
        note = f"{kind}: recreated as an empty named pipe, never read"
    else:
        return _failed(task, f"a {kind}: never read, not copied; recreate it by hand if needed")
    finding = Finding(task.rel, 1, 1, "files", Severity.WARNING, note)
    return FileResult(task.rel, FileStatus.COPIED, findings=(finding,))


# -- the run ------------------------------------------------------------------------------------
def migrate_tree(
    plan: Plan,
    options: MigrateOptions,
    *,
    jobs: int = 1,
    diff: bool = False,
    progress: Callable[[str], None] | None = None,
) -> MigrationReport:
    """Migrate everything ``plan`` names; results come back in sorted path order.

    Raises:
        UsageError: OUT holds entries that would be written through or over (before any write),
            or worker processes cannot be started.
        WriteError: the output cannot be written at all (e.g. the disk is full).
    """
    from tf2npu.migrate.workers import run_all

    start = time.perf_counter()
    if plan.in_place:
        remove_leftovers(plan.source if not plan.single_file else plan.source.parent)
    work = tasks(plan)
    empty = [t for t in work if t.kind is Kind.EMPTY_FOLDER]
    work = [t for t in work if t.kind is not Kind.EMPTY_FOLDER]
    out_root = ""
    failed: list[FileResult] = []
    if not plan.in_place and not plan.single_file:
        _prepare_output(plan, work + empty)
        out_root = str(plan.output)
        failed = _empty_folders(plan.output, empty)
    root = plan.source if not plan.single_file else plan.source.parent
    if not options.horovod_holders:
        files = [(t.rel, Path(t.src)) for t in work if t.kind is Kind.FILE]
        options = dataclasses.replace(options, horovod_holders=horovod_holders(files))
    settings = Settings(options, plan.in_place, plan.backup, diff, str(root), out_root)
    try:
        results = run_all(work, settings, jobs, progress)
    finally:
        forget_parsed()
    if failed:
        results = sorted(results + failed, key=lambda r: r.path)
    return MigrationReport(
        source=str(plan.source),
        output=str(plan.output),
        files=results,
        options=options.as_dict(),
        seconds=time.perf_counter() - start,
    )


def _empty_folders(output: Path, empty: list[Task]) -> list[FileResult]:
    """Recreate SRC's empty folders in OUT; one that cannot be made is reported failed."""
    failed = []
    for task in empty:
        try:
            make_folders(output, task.rel)
        except OSError as exc:
            failed.append(_failed(task, f"cannot create this folder: {exc.strerror or exc}"))
    return failed


def _prepare_output(plan: Plan, work: list[Task]) -> None:
    if plan.output.is_dir():
        found = conflicts(plan.output, work)
        if found:
            more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
            raise UsageError(
                f"OUT {str(plan.output)!r} holds entries of another type than SRC's: "
                + "; ".join(found[:3])
                + more
                + ". Remove them or choose another output folder; nothing was written"
            )
        remove_leftovers(plan.output)
    plan.output.mkdir(parents=True, exist_ok=True)

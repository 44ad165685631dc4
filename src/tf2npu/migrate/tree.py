"""Migrating a file or a folder: where outputs go, walking, parallelism, atomic writes.

Nothing is lost: every input file appears in the output (migrated, copied unchanged, or — for a
symbolic link — recreated as the same link, never followed), the input is never modified unless
``in_place`` is set, and each output file is written to a temporary name and renamed into place,
so an interrupted run leaves no half-written file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tf2npu.atomic import write_bytes_atomic
from tf2npu.errors import UsageError
from tf2npu.migrate.engine import migrate_source
from tf2npu.migrate.model import FileResult, FileStatus, Finding, MigrationReport, Severity
from tf2npu.migrate.options import MigrateOptions

PYTHON_SUFFIXES = (".py",)


@dataclass(frozen=True, slots=True)
class Plan:
    """Validated input and output locations of one run."""

    source: Path
    output: Path
    """Where results go (== source with ``in_place``)."""
    report_dir: Path
    in_place: bool = False
    backup: bool = False
    single_file: bool = False


def make_plan(
    source: Path,
    output: Path | None = None,
    report_dir: Path | None = None,
    *,
    in_place: bool = False,
    backup: bool = False,
    force: bool = False,
) -> Plan:
    """Check the paths the user gave and fill in defaults; raise UsageError with the fix."""
    if not source.exists() and not source.is_symlink():
        raise UsageError(f"SRC {str(source)!r} does not exist; give a Python file or a folder")
    source = source.resolve()
    single = source.is_file()
    if backup and not in_place:
        raise UsageError("--backup only applies with --in-place (SRC is not modified otherwise)")
    if in_place:
        if output is not None:
            raise UsageError("--in-place writes into SRC; drop -o/--output or drop --in-place")
        output = source
    else:
        output = _default_output(source, single) if output is None else output.resolve()
        _check_output(source, output, single, force)
    if report_dir is None:
        base = output.parent / output.stem if single else output
        report_dir = base.with_name(base.name + "_report")
    report_dir = report_dir.resolve()
    if not in_place and not single and _inside(report_dir, source):
        raise UsageError(
            f"--report {str(report_dir)!r} is inside SRC {str(source)!r}, which is never "
            "modified; choose a report folder outside it"
        )
    return Plan(source, output, report_dir, in_place, backup, single)


def _default_output(source: Path, single: bool) -> Path:
    if single:
        return source.with_name(source.stem + "_npu" + source.suffix)
    return source.with_name(source.name + "_npu")


def _check_output(source: Path, output: Path, single: bool, force: bool) -> None:
    if output == source:
        raise UsageError("OUT is SRC; use --in-place to rewrite the sources themselves")
    if not single and _inside(output, source):
        raise UsageError(
            f"OUT {str(output)!r} is inside SRC {str(source)!r}; the next run would migrate "
            "the output too. Choose an output folder outside SRC"
        )
    if single:
        if output.is_dir():
            raise UsageError(f"OUT {str(output)!r} is a folder; give the output file's path")
        if output.exists() and not force:
            raise UsageError(f"OUT {str(output)!r} exists; use --force to overwrite it")
        return
    if output.exists() and not output.is_dir():
        raise UsageError(f"OUT {str(output)!r} exists and is not a folder")
    if output.is_dir() and any(output.iterdir()) and not force:
        raise UsageError(
            f"OUT {str(output)!r} exists and is not empty; use --force to write into it "
            "or choose another folder"
        )


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


# -- walking ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Task:
    """One input file and where its result goes."""

    rel: str
    src: str
    dst: str


def tasks(plan: Plan) -> list[Task]:
    """Every file below SRC (links included, not followed), sorted by relative path."""
    if plan.single_file:
        return [Task(plan.source.name, str(plan.source), str(plan.output))]
    found: list[Task] = []
    for rel in _walk(plan.source):
        found.append(Task(rel, str(plan.source / rel), str(plan.output / rel)))
    found.sort(key=lambda t: t.rel)
    return found


def _walk(root: Path) -> Iterator[str]:
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        for name in dirs:
            if (base / name).is_symlink():
                files.append(name)  # a linked folder is recreated as a link, not descended
        dirs[:] = sorted(d for d in dirs if not (base / d).is_symlink())
        for name in files:
            yield (base / name).relative_to(root).as_posix()


# -- one file -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Settings:
    options: MigrateOptions
    in_place: bool
    backup: bool
    diff: bool
    root: str


def run_task(task: Task, settings: Settings) -> FileResult:
    """Migrate or copy one file; never raises for a problem with the file itself."""
    src = Path(task.src)
    if src.is_symlink():
        return _link(task, settings)
    try:
        raw = src.read_bytes()
        mode = src.stat().st_mode & 0o7777
    except OSError as exc:
        return FileResult(task.rel, FileStatus.FAILED, reason=f"cannot read: {exc.strerror}")
    if not task.rel.endswith(PYTHON_SUFFIXES):
        if not settings.in_place:
            write_bytes_atomic(Path(task.dst), raw, mode)
        return FileResult(task.rel, FileStatus.COPIED)
    migrated = migrate_source(raw, task.rel, settings.options, diff=settings.diff)
    result = migrated.result
    if settings.in_place:
        if migrated.output != raw:
            if settings.backup:
                backup = src.with_name(src.name + ".bak")
                if not backup.exists():
                    write_bytes_atomic(backup, raw, mode)
            write_bytes_atomic(src, migrated.output, mode)
    else:
        write_bytes_atomic(Path(task.dst), migrated.output, mode)
    return result


def _link(task: Task, settings: Settings) -> FileResult:
    src = Path(task.src)
    target = os.readlink(src)
    resolved = (src.parent / target).resolve()
    root = Path(settings.root)
    outside = not _inside(resolved, root)
    if not settings.in_place:
        dst = Path(task.dst)
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.is_symlink() or dst.exists():
            dst.unlink()
        os.symlink(target, dst)
    note = "symbolic link recreated as the same link (not followed)"
    severity = Severity.INFO
    if outside:
        note = f"symbolic link to {target!r} outside SRC: not followed; {note.split(' (')[0]}"
        severity = Severity.WARNING
    finding = Finding(task.rel, 1, 1, "files", severity, note)
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
    """Migrate everything ``plan`` names; results come back in sorted path order."""
    start = time.perf_counter()
    work = tasks(plan)
    root = plan.source if not plan.single_file else plan.source.parent
    settings = Settings(options, plan.in_place, plan.backup, diff, str(root))
    if not plan.in_place and not plan.single_file:
        plan.output.mkdir(parents=True, exist_ok=True)
    results: list[FileResult] = []
    if jobs <= 1 or len(work) < 2:
        for task in work:
            results.append(run_task(task, settings))
            if progress:
                progress(task.rel)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            chunk = max(1, min(32, len(work) // (jobs * 4) or 1))
            for task, result in zip(
                work, pool.map(run_task, work, [settings] * len(work), chunksize=chunk), strict=True
            ):
                results.append(result)
                if progress:
                    progress(task.rel)
    return MigrationReport(
        source=str(plan.source),
        output=str(plan.output),
        files=results,
        options=options.as_dict(),
        seconds=time.perf_counter() - start,
    )

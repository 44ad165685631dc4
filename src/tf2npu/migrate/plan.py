"""Where a run reads and writes: SRC, OUT and the report folder, checked before any work.

Every refusal is a :class:`~tf2npu.errors.UsageError` naming the path, what is wrong and the fix
(exit 2): nothing has been written when one is raised. The three places never overlap (except
OUT == SRC with ``--in-place``), so no write can replace an input or a report an output.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from tf2npu.atomic import probe_writable
from tf2npu.errors import UsageError
from tf2npu.migrate.walk import special_kind


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
    source, single = _check_source(source)
    if backup and not in_place:
        raise UsageError("--backup only applies with --in-place (SRC is not modified otherwise)")
    if in_place:
        if output is not None:
            raise UsageError("--in-place writes into SRC; drop -o/--output or drop --in-place")
        output = source
        _check_writable(source.parent if single else source, "SRC (for --in-place)",
                        "make it writable, or write a copy with -o OUT instead")  # fmt: skip
    else:
        if output is None:
            output = _default_output(source, single)
        elif single:  # a link given as OUT is replaced by the output file, not written through
            output = real(output.parent) / output.name
        else:
            output = real(output)
        _check_output(source, output, single, force)
    if report_dir is None:
        base = output.parent / output.stem if single else output
        report_dir = base.with_name(base.name + "_report")
    report_dir = real(report_dir)
    _check_report(report_dir, source, output, single, in_place)
    return Plan(source, output, report_dir, in_place, backup, single)


def real(path: Path) -> Path:
    """``path`` made absolute with links resolved; unlike ``Path.resolve`` (Python 3.11), a
    link loop does not raise."""
    return Path(os.path.realpath(path))


def inside(path: Path, folder: Path) -> bool:
    """True if ``path`` is ``folder`` or below it."""
    return path == folder or folder in path.parents


def _check_source(given: Path) -> tuple[Path, bool]:
    name = str(given)
    try:
        info = os.stat(given)
    except OSError as exc:
        if os.path.islink(given):
            target = os.readlink(given)
            what = "a symbolic link loop" if exc.errno == 40 else "a dangling symbolic link"
            raise UsageError(
                f"SRC {name!r} is {what} (to {target!r}); give the real file or folder"
            ) from None
        if isinstance(exc, FileNotFoundError):
            raise UsageError(
                f"SRC {name!r} does not exist; give a Python file or a folder"
            ) from None
        raise UsageError(
            f"SRC {name!r} cannot be read ({exc.strerror}); check its permissions"
        ) from None
    source = real(given)
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        raise UsageError(
            f"SRC {name!r} is a {special_kind(info.st_mode)}, which is never read; give a "
            "Python file or a folder"
        )
    if source.parent == source:
        raise UsageError(
            f"SRC {name!r} is the file system root; give the folder of one project"
        )
    if stat.S_ISDIR(info.st_mode):
        try:
            os.scandir(source).close()
        except OSError as exc:
            raise UsageError(
                f"SRC {name!r} cannot be listed ({exc.strerror}); check its permissions"
            ) from None
    return source, stat.S_ISREG(info.st_mode)


def _default_output(source: Path, single: bool) -> Path:
    if single:
        return source.with_name(source.stem + "_npu" + source.suffix)
    return source.with_name(source.name + "_npu")


def _check_output(source: Path, output: Path, single: bool, force: bool) -> None:
    if output == source:
        raise UsageError("OUT is SRC; use --in-place to rewrite the sources themselves")
    if not single and inside(output, source):
        raise UsageError(
            f"OUT {str(output)!r} is inside SRC {str(source)!r}; the next run would migrate "
            "the output too. Choose an output folder outside SRC"
        )
    if not single and inside(source, output):
        raise UsageError(
            f"SRC {str(source)!r} is inside OUT {str(output)!r}; writing OUT would replace "
            "SRC's own files. Choose an output folder that does not contain SRC"
        )
    if single:
        _check_output_file(output, force)
        return
    if os.path.lexists(output) and not output.is_dir():
        raise UsageError(f"OUT {str(output)!r} exists and is not a folder; choose a folder")
    if output.is_dir() and _has_entries(output) and not force:
        raise UsageError(
            f"OUT {str(output)!r} exists and is not empty; use --force to write into it "
            "or choose another folder"
        )
    _check_writable(output, "OUT", "choose a writable output folder with -o")


def _has_entries(folder: Path) -> bool:
    try:
        with os.scandir(folder) as listing:
            return next(listing, None) is not None
    except OSError as exc:
        raise UsageError(
            f"OUT {str(folder)!r} cannot be listed ({exc.strerror}); check its permissions or "
            "choose another output folder"
        ) from None


def _check_output_file(output: Path, force: bool) -> None:
    if output.is_dir():
        raise UsageError(f"OUT {str(output)!r} is a folder; give the output file's path")
    if os.path.lexists(output) and not force:
        raise UsageError(f"OUT {str(output)!r} exists; use --force to overwrite it")
    if os.path.lexists(output) and not output.is_file():
        raise UsageError(
            f"OUT {str(output)!r} exists and is not a regular file; remove it or choose "
            "another output path"
        )
    _check_writable(output.parent, "OUT", "choose a writable output path with -o")


def _check_report(
    report: Path, source: Path, output: Path, single: bool, in_place: bool
) -> None:
    name = str(report)
    if os.path.lexists(report) and not report.is_dir():
        raise UsageError(
            f"--report {name!r} exists and is not a folder; give a folder (created if missing)"
        )
    clashes = [("SRC", source)] + ([] if in_place else [("OUT", output)])
    for what, path in clashes:
        if inside(path, report) or (not single and inside(report, path)):
            relation = "is inside" if inside(report, path) else "contains"
            raise UsageError(
                f"--report {name!r} {relation} {what} {str(path)!r}: report files would "
                f"replace files there; choose a report folder apart from {what}"
            )
    _check_writable(report, "--report", "choose a writable report folder with --report")


def _check_writable(path: Path, what: str, fix: str) -> None:
    """Try to create a file in ``path`` (or, if it does not exist yet, its nearest ancestor)."""
    folder = path
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    try:
        probe_writable(folder)
    except OSError as exc:
        raise UsageError(
            f"{what} {str(path)!r} is not writable ({exc.strerror or exc}); {fix}"
        ) from None

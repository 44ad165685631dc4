"""Listing SRC without ever following a link or opening a file, and checking OUT before writing.

Every entry below SRC becomes one :class:`Task` of a :class:`Kind`: a regular file, a symbolic
link (recreated, never followed), a special file (a named pipe, socket or device: never opened
for reading), or a folder that cannot be listed (reported failed). Names are kept as the file
system gives them: a name that is not valid UTF-8 holds surrogate escapes (``os.fsdecode``).
"""

from __future__ import annotations

import enum
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tf2npu.atomic import TEMP_NAME


class Kind(enum.Enum):
    """What an entry below SRC is, from ``lstat`` (links are never followed)."""

    FILE = "file"
    LINK = "link"
    SPECIAL = "special"
    UNREADABLE = "unreadable"
    """A folder that cannot be listed, or an entry that cannot be inspected."""
    EMPTY_FOLDER = "empty folder"
    """A folder with no entry: recreated in OUT, not a file of the report."""


@dataclass(frozen=True, slots=True)
class Task:
    """One input entry and where its result goes."""

    rel: str
    src: str
    dst: str
    kind: Kind = Kind.FILE
    detail: str = ""
    """For a special file, what it is ("named pipe"); for an unreadable entry, why."""


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "named pipe (FIFO)"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


def special_kind(mode: int) -> str:
    """What kind of special file ``mode`` (from ``lstat``) describes."""
    return next((name for test, name in _SPECIAL_KINDS if test(mode)), "special file")


def walk(root: Path) -> Iterator[tuple[str, Kind, str]]:
    """``(relative path, kind, detail)`` for every entry below ``root``, folders descended.

    Never raises for an entry: one that cannot be listed or inspected is yielded as
    :attr:`Kind.UNREADABLE` with the OS error, and the walk goes on.
    """
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        try:
            with os.scandir(root / rel_dir if rel_dir else root) as listing:
                entries = list(listing)
        except OSError as exc:
            yield rel_dir or ".", Kind.UNREADABLE, f"cannot read this folder: {_error(exc)}"
            continue
        if not entries and rel_dir:
            yield rel_dir, Kind.EMPTY_FOLDER, ""
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except FileNotFoundError:
                continue  # removed since the listing: nothing to migrate
            except OSError as exc:
                yield rel, Kind.UNREADABLE, f"cannot inspect: {_error(exc)}"
                continue
            if stat.S_ISDIR(mode):
                pending.append(rel)
            elif stat.S_ISLNK(mode):
                yield rel, Kind.LINK, ""
            elif stat.S_ISREG(mode):
                yield rel, Kind.FILE, ""
            else:
                yield rel, Kind.SPECIAL, special_kind(mode)


def _error(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def folder_tasks(source: Path, output: Path) -> list[Task]:
    """Every entry below ``source`` as a task writing below ``output``, sorted by path (empty
    folders included)."""
    found = [
        Task(rel, os.path.join(source, rel), os.path.join(output, rel), kind, detail)
        for rel, kind, detail in walk(source)
    ]
    found.sort(key=lambda t: t.rel)
    return found


# -- OUT ----------------------------------------------------------------------------------------
def conflicts(output: Path, work: list[Task]) -> list[str]:
    """Entries already in ``output`` that a run would have to write through or over.

    A folder of the result must be a real folder (not a link, which would lead the writes
    outside OUT, nor a file); a file's place must not hold a real folder. Each conflict is a
    sentence naming the path.
    """
    found: list[str] = []
    checked: dict[str, str | None] = {}
    for task in work:
        if task.kind is Kind.UNREADABLE:
            continue
        rel_parts = task.rel.split("/")
        folders = len(rel_parts) + (task.kind is Kind.EMPTY_FOLDER)
        for depth in range(1, folders):
            folder = "/".join(rel_parts[:depth])
            if folder not in checked:
                checked[folder] = _not_a_folder(output / folder)
            problem = checked[folder]
            if problem and problem not in found:
                found.append(problem)
        place = output / task.rel
        if task.kind is not Kind.EMPTY_FOLDER and place.is_dir() and not place.is_symlink():
            found.append(f"{str(place)!r} is a folder where SRC has a {task.kind.value}")
    return found


def _not_a_folder(path: Path) -> str | None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(mode):
        return None
    what = "a symbolic link" if stat.S_ISLNK(mode) else "a file"
    return f"{str(path)!r} is {what} where SRC has a folder"


def make_folders(root: Path, rel_folder: str) -> None:
    """Create ``root/rel_folder`` one level at a time, refusing to pass through a link or file.

    ``Path.mkdir(parents=True)`` would follow a link left in OUT and write outside it.
    """
    path = root
    for part in rel_folder.split("/") if rel_folder else ():
        path = path / part
        try:
            os.mkdir(path)
            continue
        except FileExistsError:
            pass
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise NotADirectoryError(20, "not a folder (a link or a file is in the way)", path)


def remove_leftovers(root: Path) -> int:
    """Delete the hidden temporary files an interrupted run left below ``root``; return how
    many. Only names of :data:`tf2npu.atomic.TEMP_NAME`'s exact form are touched."""
    removed = 0
    for folder, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            if TEMP_NAME.match(name):
                path = os.path.join(folder, name)
                try:
                    if stat.S_ISREG(os.lstat(path).st_mode):
                        os.unlink(path)
                        removed += 1
                except OSError:
                    pass  # gone already, or not ours to remove: the run goes on
    return removed

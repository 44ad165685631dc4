"""Atomic file replacement: readers see the old file or the whole new one, never a partial one."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

_NAME_BYTES = 200
"""Bytes of the target's name kept in the temporary name: with the dot, the random part and
``.tmp`` it stays under the 255-byte file name limit of common file systems."""

TEMP_NAME = re.compile(r"^\..+\.[0-9a-f]{12}\.tmp$", re.DOTALL)
"""The names :func:`atomic_path` gives its temporary files (a run killed mid-write leaves one)."""


def temp_name(name: str) -> str:
    """The hidden temporary name for a file called ``name``."""
    short = os.fsdecode(os.fsencode(name)[:_NAME_BYTES])
    return f".{short}.{secrets.token_hex(6)}.tmp"


@contextlib.contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a fresh temporary path next to ``target``; on success it replaces ``target``.

    The caller writes the whole file to the yielded path. If the block raises, the temporary
    file is removed and ``target`` is left as it was. The temporary file lives in the same
    directory so that :func:`os.replace` is a rename, and it is created with the usual
    permissions (``0o666`` less the umask). A symbolic link at ``target`` is replaced, never
    written through.
    """
    temp = target.with_name(temp_name(target.name))
    os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield temp
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_text_atomic(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` as UTF-8, atomically, with the newlines as given; the folder
    is created if missing."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as temp, open(temp, "w", encoding="utf-8", newline="") as stream:
        stream.write(text)


def write_bytes_atomic(target: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``target`` atomically; ``mode`` sets the permission bits if given."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as temp:
        temp.write_bytes(data)
        if mode is not None:
            os.chmod(temp, mode)


def copy_stream_atomic(target: Path, source: BinaryIO, mode: int | None = None) -> None:
    """Copy the rest of ``source`` to ``target`` atomically, in blocks (any size, little memory).

    Unlike the other writers, the folder must exist: callers that must not follow links in it
    create it themselves.
    """
    with atomic_path(target) as temp:
        with open(temp, "wb") as stream:
            shutil.copyfileobj(source, stream, 1 << 20)
        if mode is not None:
            os.chmod(temp, mode)


def write_bytes_new(target: Path, data: bytes, mode: int | None = None) -> bool:
    """Write ``data`` to ``target`` only if no file of that name exists; atomically.

    Returns False (and writes nothing) when ``target`` exists. The whole file is written to a
    temporary name first and then hard-linked to ``target``, which fails instead of replacing.
    """
    temp = target.with_name(temp_name(target.name))
    try:
        with open(temp, "xb") as stream:
            stream.write(data)
        if mode is not None:
            os.chmod(temp, mode)
        try:
            os.link(temp, target, follow_symlinks=False)
        except FileExistsError:
            return False
        return True
    finally:
        temp.unlink(missing_ok=True)


def write_first_free(names: Iterable[Path], write: Callable[[Path], object]) -> Path:
    """Have ``write`` fill a temporary file, then give it the first of ``names`` that no file
    holds yet; that path. Nothing is ever replaced, even when another process writes the same
    name at the same moment (the name is taken by a hard link, which fails if it exists).

    Raises:
        FileExistsError: every one of ``names`` is taken.
    """
    names = list(names)
    temp = names[0].with_name(temp_name(names[0].name))
    try:
        os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        write(temp)
        for target in names:
            try:
                os.link(temp, target, follow_symlinks=False)
            except FileExistsError:
                continue
            return target
        raise FileExistsError(f"{str(names[-1])!r} and the {len(names) - 1} names before it")
    finally:
        temp.unlink(missing_ok=True)


def probe_writable(folder: Path) -> None:
    """Create and remove a file in ``folder``; raise :class:`OSError` if that is not possible.

    ``os.access`` says yes to root and knows nothing of read-only mounts or quotas, so the only
    honest check is to try.
    """
    temp = folder / temp_name("tf2npu-probe")
    os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    os.unlink(temp)

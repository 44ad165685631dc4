"""Atomic file replacement: readers see the old file or the whole new one, never a partial one."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a fresh temporary path next to ``target``; on success it replaces ``target``.

    The caller writes the whole file to the yielded path. If the block raises, the temporary
    file is removed and ``target`` is left as it was. The temporary file lives in the same
    directory so that :func:`os.replace` is a rename, and it is created with the usual
    permissions (``0o666`` less the umask).
    """
    temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
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

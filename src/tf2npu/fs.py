"""Reading what a walk of a user's folder finds: no hang on a FIFO, no endless read of a device,
no folder skipped without a word (TF-free, numpy-free).

A name that looks like a dump file may be a FIFO (``open`` blocks until a writer comes), a link
to ``/dev/zero`` (``read`` never ends) or a folder. :func:`open_regular` opens without blocking
and refuses whatever is not a regular file; :func:`walk` is :func:`os.walk` that raises on a
folder it cannot list instead of leaving it out.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from tf2npu.errors import UsageError

__all__ = ["NotRegularFile", "kind_of", "open_regular", "read_regular", "walk"]


class NotRegularFile(OSError):
    """A path that names a FIFO, a device, a socket or a folder where a file was expected."""


def kind_of(mode: int, *, fifo: str = "a FIFO") -> str:
    """What a non-regular ``st_mode`` is, in words (``a FIFO``, ``a character device``);
    ``fifo`` is the words for a FIFO."""
    for test, words in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, fifo),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return words
    return "not a regular file"


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for binary reading, when it is a regular file (links followed).

    Raises:
        NotRegularFile: ``path`` is a FIFO, device, socket or folder (never blocks on a FIFO).
        OSError: it cannot be opened.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(f"{kind_of(mode)}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_regular`)."""
    with open_regular(path) as stream:
        return stream.read()


def walk(root: str | Path, what: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """:func:`os.walk` of ``root``, sub-folders in name order, links to folders not followed.

    Raises:
        UsageError: a folder under ``root`` cannot be listed; the message names it and ``what``
            (``NPU_DUMP``) so the user knows which input is incomplete.
    """

    def fail(exc: OSError) -> None:
        raise UsageError(
            f"{what}: cannot read the folder {exc.filename!r} ({exc.strerror}); make it "
            "readable (chmod u+rx) or give a folder without it: its files would be left out"
        )

    for directory, subdirs, names in os.walk(root, onerror=fail):
        subdirs.sort()
        yield directory, subdirs, names

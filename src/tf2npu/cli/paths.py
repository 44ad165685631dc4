"""Checks on the paths a command line names, made before any work starts.

Every check raises :class:`UsageError` naming the flag, the value and the fix, so a typo or an
unwritable folder is reported in one line at once, not as a traceback after a long run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tf2npu import fs
from tf2npu.atomic import probe_writable
from tf2npu.errors import UsageError


def path_arg(text: str) -> Path:
    """argparse ``type=`` for paths, refusing ``''`` (``Path('')`` is the current folder)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path; give a file or folder name")
    return Path(text)


def kind_of(path: Path) -> str:
    """What a non-regular file is, in words: ``a folder``, ``a FIFO (named pipe)``, ..."""
    return fs.kind_of(path.stat().st_mode, fifo="a FIFO (named pipe)")


def check_input_file(path: Path, what: str, fix: str) -> None:
    """``path``, if it exists, is a regular file that can be opened for reading.

    A FIFO or a device would block or never end when read; a missing file is left to the
    reader, whose message says what kind of file it expected.
    """
    if not path.exists():
        return
    if not path.is_file():
        raise UsageError(f"{what} {str(path)!r} is {kind_of(path)}; {fix}")
    try:
        with open(path, "rb") as stream:
            stream.read(1)
    except OSError as exc:
        raise UsageError(f"{what} {str(path)!r} cannot be read ({exc.strerror}); {fix}") from None


def check_output_dir(path: Path, flag: str) -> None:
    """``path`` is (or can be created as) a folder in which files can be written.

    The folder is created, and a probe file written and removed in it: permissions, read-only
    mounts and pseudo file systems all answer the same way to that.
    """
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {str(path)!r} is {_file_kind(path)}; give a folder")
    blocker = _file_above(path)
    if blocker is not None:
        raise UsageError(
            f"{flag} {str(path)!r} cannot be created: {str(blocker)!r} is a file, not a "
            "folder; give a path under a folder"
        )
    problem = _write_problem(path)
    if problem is not None:
        raise UsageError(
            f"{flag} {str(path)!r} is not writable ({problem}); give a folder you can write to"
        )


def check_output_file(path: Path, flag: str, example: str) -> None:
    """``path`` names a file that can be written: not a folder, in a writable folder."""
    if path.is_dir():
        raise UsageError(f"{flag} {str(path)!r} is a folder; give a file name, e.g. {example}")
    if path.exists() and not path.is_file():
        raise UsageError(f"{flag} {str(path)!r} is {kind_of(path)}; give a file name")
    blocker = _file_above(path.parent)
    if blocker is not None:
        raise UsageError(
            f"{flag} {str(path)!r} cannot be written: {str(blocker)!r} is a file, not a "
            f"folder; give a path under a folder, e.g. {example}"
        )
    problem = _write_problem(path.parent)
    if problem is not None:
        raise UsageError(
            f"{flag} {str(path)!r} cannot be written: its folder is not writable ({problem}); "
            f"give a path in a folder you can write to, e.g. {example}"
        )


def _write_problem(folder: Path) -> str | None:
    """Why no file can be written in ``folder`` (created if missing), or None."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe_writable(folder)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _file_kind(path: Path) -> str:
    return "a file" if path.is_file() else kind_of(path)


def _file_above(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` (or ``path``) when it is not a folder."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def checked_script(given: str, fix: str, where_options_go: str) -> Path:
    """SCRIPT as an absolute path, once it is an existing, readable ``.py`` file.

    ``fix`` says how to name the script right; ``where_options_go`` says, for a SCRIPT that is
    not a ``.py`` file (often one of the command's own options in the script's place), where
    the command's options and the script's arguments go.
    """
    script = Path(given)
    if not script.exists():
        raise UsageError(f"SCRIPT {str(script)!r} does not exist; {fix}")
    check_input_file(script, "SCRIPT", fix)
    if script.suffix != ".py":
        raise UsageError(f"SCRIPT {str(script)!r} is not a .py file; {where_options_go}")
    return script.resolve()

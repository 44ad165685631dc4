"""Reading a log and locating a line in it: the node it names, the user's source line.

A TensorFlow error names its node in several ways (``[[{{node w/read}}]]``, ``Node: 'w/read'``,
TF 1.x ``Original stack trace for 'w/read':`` followed by the frames that built it); tf2npu
adds ``(op 'w/read' was created at train.py:5 in build)`` and prints its own user errors as
``tf2npu run: error: train.py:16: ...``. A Python traceback above an exception line gives the
line of the user's code that ran it. :func:`locate` reads these around a matched line.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tf2npu.errors import UsageError
from tf2npu.findings import Where

__all__ = ["STDIN", "Log", "locate", "read_log", "user_frame"]

STDIN = "-"
"""The LOG argument that means standard input."""

MAX_LOG_BYTES = 256 * 1024 * 1024
"""Larger logs are read from their end: the failure is at the end of a log."""

_NODE_NEAR = (
    re.compile(r"\{\{node (?P<node>[^}\s]+)\}\}"),
    re.compile(r"^Node: '(?P<node>[^']+)'"),
    re.compile(r"Detected at node '(?P<node>[^']+)'"),
)
_CREATED = re.compile(r"\(op '(?P<node>[^']+)' was created at (?P<file>.+?):(?P<line>\d+) in ")
_CLI_ERROR = re.compile(r"^tf2npu [\w-]+: error: (?P<file>[^\s:]+\.py):(?P<line>\d+): ")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')
_TRACEBACK = "Traceback (most recent call last):"
_ORIGINAL = re.compile(r"^Original stack trace for '(?P<node>[^']+)':")
_BEFORE, _AFTER = 4, 8
"""Lines around a match searched for the node and its creation."""
_TRACEBACK_REACH = 400
"""How far above a matched line its traceback may start (frames of deep stacks)."""
_MESSAGE_LINES = 12
"""How many lines of exception message may lie between a traceback and a matched line."""
_LIBRARY_PARTS = ("site-packages", "dist-packages", "tensorflow", "tf2npu", "npu_bridge", "keras")


@dataclass(frozen=True, slots=True)
class Log:
    """One log: its name as the user gave it, and its lines without line ends."""

    name: str
    lines: tuple[str, ...]


def read_log(path: str) -> Log:
    """Read ``path`` (``-``: standard input) as text; undecodable bytes become U+FFFD.

    Raises:
        UsageError: the file does not exist, is a directory, or cannot be read.
    """
    if path == STDIN:
        stream = getattr(sys.stdin, "buffer", None)  # bytes, so bad bytes become U+FFFD too
        text = stream.read().decode("utf-8", "replace") if stream else sys.stdin.read()
        return Log("<stdin>", tuple(text.splitlines()))
    file = Path(path)
    if not file.exists():
        raise UsageError(f"LOG {path!r} does not exist; give the log file a run printed")
    if file.is_dir():
        raise UsageError(
            f"LOG {path!r} is a directory; give a log file, or --run-dir {path} for the "
            "report folder of a tf2npu run"
        )
    if not file.is_file():
        raise UsageError(f"LOG {path!r} is not a regular file; give a log file (- for stdin)")
    try:
        with file.open("rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            if size > MAX_LOG_BYTES:
                stream.seek(size - MAX_LOG_BYTES)
            data = stream.read()
    except OSError as exc:
        raise UsageError(
            f"LOG {path!r} cannot be read ({exc.strerror}); check its permissions"
        ) from None
    return Log(path, tuple(data.decode("utf-8", errors="replace").splitlines()))


def locate(log: Log, index: int, found: Where, script: str | None = None) -> Where:
    """``found`` (what the matching pattern captured) completed from the lines around ``index``.

    The node: captured, else named near the line. The source line: captured, else the
    ``tf2npu ...: error: FILE:LINE:`` prefix, else where the node was created, else the user's
    frame of the traceback the line ends.
    """
    node = found.node or _near_node(log.lines, index)
    file, line = found.file, found.line
    if not file:
        file, line = _source_line(log.lines, index, node, script)
    return Where(node=node, op_type=found.op_type, file=file, line=line)


def _near_node(lines: Sequence[str], index: int) -> str:
    for i in range(max(0, index - _BEFORE), min(len(lines), index + _AFTER)):
        for pattern in _NODE_NEAR:
            match = pattern.search(lines[i])
            if match:
                return match["node"]
    return ""


def _source_line(
    lines: Sequence[str], index: int, node: str, script: str | None
) -> tuple[str, int]:
    match = _CLI_ERROR.search(lines[index])
    if match:
        return match["file"], int(match["line"])
    created = _created(lines, index, node, script)
    if created[0]:
        return created
    return user_frame(_frames_above(lines, index), script)


def _created(lines: Sequence[str], index: int, node: str, script: str | None) -> tuple[str, int]:
    """Where ``node`` was made: tf2npu's ``(op ... was created at ...)`` or TF's original
    stack trace, in the lines after ``index``."""
    end = min(len(lines), index + _AFTER)
    for i in range(index, end):
        match = _CREATED.search(lines[i])
        if match and _same_node(match["node"], node):
            return match["file"], int(match["line"])
        original = _ORIGINAL.match(lines[i])
        if original and _same_node(original["node"], node):
            return user_frame(_frames_from(lines, i + 1), script)
    return "", 0


def _same_node(named: str, node: str) -> bool:
    """``named`` is ``node`` or one of its ops (``w/read`` of variable ``w``)."""
    return not node or named == node or named.startswith(node + "/")


def _frames_from(lines: Sequence[str], start: int) -> list[tuple[str, int]]:
    return _frames_and_end(lines, start)[0]


def _frames_and_end(lines: Sequence[str], start: int) -> tuple[list[tuple[str, int]], int]:
    """The frames listed from ``start`` on, and the index of the first line after them."""
    frames = []
    i = start
    while i < len(lines):
        match = _FRAME.match(lines[i])
        if match:
            frames.append((match["file"], int(match["line"])))
        elif not lines[i].startswith((" ", "\t")):
            break
        i += 1
    return frames, i


def _frames_above(lines: Sequence[str], index: int) -> list[tuple[str, int]]:
    """The frames of the traceback whose exception message holds line ``index``."""
    for start in range(index, max(-1, index - _TRACEBACK_REACH), -1):
        if lines[start].startswith(_TRACEBACK):
            frames, end = _frames_and_end(lines, start + 1)
            return frames if index - end <= _MESSAGE_LINES else []
    return []


def user_frame(frames: Sequence[tuple[str, int]], script: str | None = None) -> tuple[str, int]:
    """The innermost frame in ``script`` (when given and present), else the innermost frame
    outside libraries and Python itself; ``("", 0)`` when there is none."""
    if script:
        wanted = os.path.basename(script)
        mine = [f for f in frames if os.path.basename(f[0]) == wanted]
        if mine:
            return mine[-1]
    for file, line in reversed(frames):
        if not _is_library(file):
            return file, line
    return "", 0


def _is_library(file: str) -> bool:
    if file.startswith("<"):
        return True
    parts = Path(file).parts
    return any(p in _LIBRARY_PARTS or p.startswith("python3") for p in parts)

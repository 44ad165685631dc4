"""The rich consoles the commands print with.

Rich wraps at 80 columns when its stream is not a terminal, so a summary piped into a file or a
CI log came out hard-wrapped mid-value. Off a terminal (and unless ``COLUMNS`` says otherwise)
the console is made wide enough that lines end where the program ends them, and its stream
drops the blanks rich pads a line with up to that width (a table row, an indented block): a
piped line ends at its last character, never 1000 columns later.
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO

from rich.console import Console

PIPE_WIDTH = 1000
"""Columns assumed off a terminal: no line we print is that long, so nothing wraps."""

_PADDING = re.compile(r"[ \t]+(?=\r?\n|\Z)")


class _Unpadded:
    """A text stream that writes to the process's stdout or stderr of the moment, each line
    without its trailing blanks (rich writes whole lines, one print at a time)."""

    def __init__(self, *, stderr: bool) -> None:
        self._stderr = stderr

    @property
    def _stream(self) -> IO[str]:
        return sys.stderr if self._stderr else sys.stdout

    def write(self, text: str) -> int:
        return self._stream.write(_PADDING.sub("", text))

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"


def make_console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr) that wraps only on a real terminal, and never pads a
    line with blanks off one."""
    console = Console(stderr=stderr)
    if console.is_terminal or os.environ.get("COLUMNS"):
        return console
    return Console(file=_Unpadded(stderr=stderr), width=PIPE_WIDTH)  # type: ignore[arg-type]

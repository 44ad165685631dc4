"""The rich consoles the commands print with.

Rich wraps at 80 columns when its stream is not a terminal, so a summary piped into a file or a
CI log came out hard-wrapped mid-value. Off a terminal (and unless ``COLUMNS`` says otherwise)
the console is made wide enough that lines end where the program ends them.
"""

from __future__ import annotations

import os

from rich.console import Console

PIPE_WIDTH = 1000
"""Columns assumed off a terminal: no line we print is that long, so nothing wraps."""


def make_console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr) that wraps only on a real terminal."""
    console = Console(stderr=stderr)
    if console.is_terminal or os.environ.get("COLUMNS"):
        return console
    return Console(stderr=stderr, width=PIPE_WIDTH)

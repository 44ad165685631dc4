"""Error classes shared by every part of tf2npu.

User errors (bad input, bad options) derive from :class:`Tf2NpuError`; the CLI prints them
without a traceback and maps them to an exit code. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class Tf2NpuError(Exception):
    """A problem the user can fix. The message names the thing, the value and the fix."""

    exit_code = 2


class UsageError(Tf2NpuError):
    """Bad command-line use: a wrong path, a conflicting flag, an unknown value."""


class ConfigError(Tf2NpuError):
    """An option, switch file or mixlist that is invalid."""


class UnknownNameError(ConfigError):
    """A name (option, rule, pass) that does not exist; the message lists the valid names."""

    def __init__(self, kind: str, name: str, known: list[str] | tuple[str, ...]) -> None:
        self.kind = kind
        self.name = name
        self.known = tuple(sorted(known))
        listed = ", ".join(self.known)
        super().__init__(f"unknown {kind} {name!r}; the valid ones are: {listed}")


class GraphError(Tf2NpuError):
    """A graph given by the user that is not valid input: a malformed node, a bad edge, a cycle."""


class InternalError(Exception):
    """A bug in tf2npu (not a Tf2NpuError: the CLI keeps the traceback)."""

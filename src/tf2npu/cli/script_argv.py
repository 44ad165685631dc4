"""A command's own flags typed after SCRIPT: they go to the script, and the user is told so.

``tf2npu run train.py --no-npu`` passes ``--no-npu`` to ``train.py`` as its own argument (the
script's arguments are passed on untouched), so the run silently used the NPU. The command
warns, naming the flag and where it belongs; the script still gets its arguments as typed. An
explicit ``--`` before SCRIPT says the user knows, and ``-h`` / ``--help`` after SCRIPT are the
script's (its own help).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence

__all__ = ["FLAGS_KEY", "misplaced", "record_flags", "warn_misplaced"]

FLAGS_KEY = "_own_flags"
"""The namespace attribute holding the command's flags (set by :func:`record_flags`)."""
_SCRIPT_OWN = frozenset({"-h", "--help"})


def record_flags(parser: argparse.ArgumentParser) -> None:
    """Remember ``parser``'s flags in the namespace it parses (call after adding them all)."""
    # argparse has no public list of a parser's option strings; this mapping holds them all,
    # including those added through argument groups.
    flags = frozenset(parser._option_string_actions) - _SCRIPT_OWN
    parser.set_defaults(**{FLAGS_KEY: flags})


def misplaced(script_args: Sequence[str], flags: Iterable[str]) -> list[str]:
    """The arguments after SCRIPT that are flags of the command (``--x=v`` counts as ``--x``)."""
    own = frozenset(flags)
    found = []
    for arg in script_args:
        name = arg.split("=", 1)[0]
        if name in own and name not in found:
            found.append(name)
    return found


def warn_misplaced(
    command: str, script: str, script_args: Sequence[str], flags: Iterable[str]
) -> list[str]:
    """Warn on stderr about each flag of ``command`` given after ``script``; returns them."""
    found = misplaced(script_args, flags)
    for flag in found:
        print(
            f"{command}: warning: {flag} comes after SCRIPT, so {script} gets it as its own "
            f"argument and {command} does not; to use it, put it before SCRIPT: "
            f"{command} {flag} ... {script}",
            file=sys.stderr,
        )
    return found

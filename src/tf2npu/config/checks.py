"""Value checks used by the option table: each returns ``None`` or the fix to print.

The first docstring line of each check is what docs/options.md shows in the "allowed" column.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Check = Callable[[object], "str | None"]

_DEVICE_LIST = re.compile(r"\d+(,\d+)*")


def adapter_says(message: str, fix: str) -> str:
    """A fix that first quotes the adapter's own ``message`` for the same mistake.

    Users search for the adapter's words; the fix after them is ours.

    >>> adapter_says("if use dump function, dump_path must be set.", "set dump_path")
    'the adapter says "if use dump function, dump_path must be set."; set dump_path'
    """
    return f'the adapter says "{message}"; {fix}'


def at_least(low: int) -> Check:
    """Integers ``>= low``."""

    def check(value: object) -> str | None:
        if isinstance(value, int) and value >= low:
            return None
        return f"give an integer >= {low}"

    check.__doc__ = f"integer >= {low}"
    return check


def between(low: int, high: int) -> Check:
    """Integers in ``low..high`` (inclusive)."""

    def check(value: object) -> str | None:
        if isinstance(value, int) and low <= value <= high:
            return None
        return f"give an integer from {low} to {high}"

    check.__doc__ = f"integer {low}..{high}"
    return check


def device_list(value: object) -> str | None:
    """comma-separated device ids, e.g. `0,1`"""
    if isinstance(value, str) and (value == "" or _DEVICE_LIST.fullmatch(value)):
        return None
    return 'give comma-separated device ids without spaces, e.g. "0,1"'


def byte_count(value: object) -> str | None:
    """decimal byte count"""
    if isinstance(value, str) and (value == "" or value.isdigit()):
        return None
    return 'give a decimal byte count, e.g. "21474836480"'


_TUNE_MODES = ("RL", "GA")


def tune_modes(value: object) -> str | None:
    """`RL`, `GA` or both joined by `,` or `|`, e.g. `RL,GA`"""
    fix = 'give RL, GA or both joined by "," or "|", e.g. "RL,GA"'
    if not isinstance(value, str):
        return fix
    if value == "":
        return None
    items = re.split(r"[,|]", value)
    if any(item not in _TUNE_MODES for item in items) or len(set(items)) != len(items):
        return fix
    return None

"""Value checks used by the option table: each returns ``None`` or the fix to print.

The first docstring line of each check is what docs/options.md shows in the "allowed" column.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Check = Callable[[object], "str | None"]

_DEVICE_LIST = re.compile(r"\d+(,\d+)*")
_DUMP_ITEM = re.compile(r"(\d+)(?:-(\d+))?")


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


def dump_step(value: object) -> str | None:
    """`N` or `N-M` joined by `|` (at most 100, increasing), e.g. `0|5|10-20`"""
    fix = 'give steps as N or N-M joined by "|" (at most 100 items), e.g. "0|5|10-20"'
    if not isinstance(value, str):
        return fix
    if value == "":
        return None
    items = value.split("|")
    if len(items) > 100:
        return fix
    for item in items:
        match = _DUMP_ITEM.fullmatch(item)
        if match is None:
            return fix
        if match.group(2) is not None and int(match.group(2)) < int(match.group(1)):
            return f"{fix}; in {item!r} the range must increase"
    return None


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

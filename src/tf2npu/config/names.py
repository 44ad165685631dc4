"""Unknown-name errors with a close-match suggestion."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from tf2npu.errors import UnknownNameError


def unknown(kind: str, name: str, known: Iterable[str]) -> UnknownNameError:
    """An :class:`UnknownNameError` for ``name`` with "did you mean ...?" when one is close."""
    choices = sorted(known)
    error = UnknownNameError(kind, name, choices)
    close = closest(name, choices)
    if close is not None:
        error.args = (f"{error.args[0]}; did you mean {close!r}?",)
    return error


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``name``, or ``None`` when none is close."""
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return close[0] if close else None

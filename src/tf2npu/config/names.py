"""Unknown-name errors with a close-match suggestion."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from tf2npu.errors import UnknownNameError


def unknown(kind: str, name: str, known: Iterable[str]) -> UnknownNameError:
    """An :class:`UnknownNameError` for ``name`` with "did you mean ...?" when one is close."""
    choices = sorted(known)
    error = UnknownNameError(kind, name, choices)
    close = difflib.get_close_matches(name, choices, n=1)
    if close:
        error.args = (f"{error.args[0]}; did you mean {close[0]!r}?",)
    return error

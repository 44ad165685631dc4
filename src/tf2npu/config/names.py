"""Names in configuration files: fusion-rule aliases, and unknown-name errors (the close-match
suggestion first, then a short list)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from tf2npu.errors import UnknownNameError

LISTED_IN_FULL = 12
"""Up to this many valid names, the message lists them all; beyond, only the close ones."""
CLOSE_SHOWN = 3

KnownRules = Mapping[str, tuple[str, tuple[str, ...]]]
"""Canonical fusion rule name -> (category, Ascend pass-name aliases), as ``known_rules()``
gives."""


def alias_index(known_rules: KnownRules) -> dict[str, str]:
    """Every name a fusion rule answers to (its own and its Ascend aliases) -> its own name."""
    index: dict[str, str] = {}
    for name, (_, aliases) in known_rules.items():
        index[name] = name
        for alias in aliases:
            index[alias] = name
    return index


def unknown(
    kind: str, name: str, known: Iterable[str], listed_in: str | None = None
) -> UnknownNameError:
    """An :class:`UnknownNameError` for ``name``: "did you mean ...?" first, then the names.

    A long list of names on one line hides the suggestion, so past :data:`LISTED_IN_FULL` names
    only the close ones are shown, with ``listed_in`` (a doc page or a command) for the rest.

    >>> str(unknown("pass", "fusoin", ["fusion", "placement"]))
    "unknown pass 'fusoin'; did you mean 'fusion'? The valid ones are: fusion, placement"
    """
    choices = sorted(known)
    error = UnknownNameError(kind, name, choices)
    close = difflib.get_close_matches(name, choices, n=CLOSE_SHOWN, cutoff=0.6)
    head = f"unknown {kind} {name!r}"
    if close:
        head += f"; did you mean {close[0]!r}?"
    where = f"; {listed_in} lists them all" if listed_in else ""
    if len(choices) <= LISTED_IN_FULL:
        tail = f"the valid ones are: {', '.join(choices)}"
    elif len(close) > 1:
        tail = f"close names: {', '.join(close)} ({len(choices)} valid names{where})"
    elif close:
        tail = f"({len(choices)} valid names{where})"
    else:
        tail = f"the {len(choices)} valid names include {', '.join(choices[:CLOSE_SHOWN])}{where}"
    error.args = (f"{head} {tail[0].upper()}{tail[1:]}" if close else f"{head}; {tail}",)
    return error


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``name``, or ``None`` when none is close."""
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return close[0] if close else None

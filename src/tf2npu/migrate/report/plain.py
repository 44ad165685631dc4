"""Plain values for the report's free-form part (``MigrationReport.options``), and text that
every report format can hold (file names that are not valid UTF-8)."""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from collections.abc import Mapping
from pathlib import PurePath
from typing import TypeAlias

Plain: TypeAlias = bool | int | float | str | list["Plain"] | dict[str, "Plain"] | None
"""A value :func:`json.dumps` writes as it is."""


def to_plain(value: object) -> Plain:
    """``value`` as JSON-compatible data, deterministically.

    Enums become their value, paths POSIX strings, mappings dicts with sorted string keys, sets
    sorted lists, other sequences lists, dataclasses dicts of their fields; anything else its
    ``str``.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return to_plain(value.value)
    if isinstance(value, PurePath):
        return value.as_posix()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_plain({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if isinstance(value, Mapping):
        pairs = sorted(((str(k), v) for k, v in value.items()), key=lambda pair: pair[0])
        return {k: to_plain(v) for k, v in pairs}
    if isinstance(value, set | frozenset):
        return sorted((to_plain(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return str(value)


def option_text(value: object) -> str:
    """An option value for people: strings as they are, anything else as JSON (``null``, ...)."""
    plain = to_plain(value)
    return plain if isinstance(plain, str) else json.dumps(plain, ensure_ascii=False)


_SURROGATE = re.compile("[\ud800-\udfff]")
"""Lone surrogates: what :func:`os.fsdecode` makes of a file name's bytes that are not UTF-8
(``\\udcff`` for the byte ``0xff``). No UTF-8 writer can encode them as they are."""


def visible(text: str) -> str:
    """``text`` with each surrogate-escaped byte written ``\\xff`` (for people: Markdown, CSV,
    the spreadsheet, the terminal); other text is unchanged."""
    if text.isascii():  # most strings: no surrogate possible, and no regular expression run
        return text
    return _SURROGATE.sub(_byte_escape, text)


def _byte_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def json_escaped(document: str) -> str:
    """A JSON text with each lone surrogate written as a ``\\udcff`` escape: valid JSON that
    :func:`json.loads` reads back to the same string, whose :func:`os.fsencode` is the file
    name's original bytes. (Surrogates only occur inside JSON strings.)"""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", document)

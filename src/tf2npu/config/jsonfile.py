"""Reading the small JSON files options point to, with errors that give line and column."""

from __future__ import annotations

import json
from pathlib import Path

from tf2npu.errors import ConfigError


def parse_json(text: str, source: str) -> object:
    """``text`` as JSON or a :class:`ConfigError` naming ``source``, line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        hint = ""
        if text[exc.pos : exc.pos + 2] == "//":
            hint = "; JSON has no comments, remove the // lines"
        raise ConfigError(
            f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}{hint}"
        ) from None


def load_json(path: str | Path, option: str) -> object:
    """The JSON file ``path`` given to ``option`` (missing or unreadable files are errors)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"{option} = {str(path)!r}: cannot read the file ({exc.strerror}); "
            "give the path of an existing JSON file"
        ) from None
    return parse_json(text, f"{option} file {str(path)!r}")

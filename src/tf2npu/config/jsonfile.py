"""Reading the small JSON files options point to, with errors that give line and column."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from tf2npu.errors import ConfigError

_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


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
    except RecursionError:
        # json's decoder recurses once per nesting level; no valid file nests that deep.
        raise ConfigError(
            f"{source}: the JSON nests too deep (arrays or objects inside each other over "
            "~1000 levels); the file is not an options file, give the right path"
        ) from None


def load_json(path: str | Path, option: str) -> object:
    """The JSON file ``path`` given to ``option``, as UTF-8 text.

    Missing, unreadable, non-regular (FIFO, device) and non-UTF-8 files are errors.
    """
    file = Path(path)
    try:
        mode = file.stat().st_mode
        if not stat.S_ISREG(mode):
            what = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
            raise ConfigError(f"{option} = {str(path)!r} is {what}; give the path of a JSON file")
        data = file.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{option} = {str(path)!r}: cannot read the file ({exc.strerror}); "
            "give the path of an existing JSON file"
        ) from None
    return parse_json(_utf8(data, f"{option} = {str(path)!r}"), f"{option} file {str(path)!r}")


def _utf8(data: bytes, source: str) -> str:
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), None)
    try:
        if encoding is None:
            return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{source}: the file is not UTF-8 text (byte {exc.start} is {data[exc.start]:#04x})"
            "; save it as UTF-8"
        ) from None
    raise ConfigError(
        f"{source}: the file is {encoding} text (it starts with a {encoding} byte-order mark); "
        "save it as UTF-8"
    )


def short_repr(value: object) -> str:
    """``repr(value)`` cut to 60 characters, for an error message about a file's content."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

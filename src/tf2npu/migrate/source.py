"""Decoding a Python source file exactly as Python would; mapping ``ast`` positions to offsets.

The file's bytes are decoded with the encoding Python itself would use (PEP 263 cookie or BOM);
the rewrite is applied to the decoded text and encoded back with the same encoding, BOM and
line endings, so every byte outside an edited span is preserved.
"""

from __future__ import annotations

import ast
import codecs
import io
import re
import tokenize
from dataclasses import dataclass, field

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class SourceError(Exception):
    """The file cannot be read as Python source; the message is the reason shown to the user."""


@dataclass(slots=True)
class SourceFile:
    """One decoded source file with a line table for position mapping."""

    text: str
    encoding: str
    """The codec name to encode the result with (``utf-8-sig`` keeps a BOM)."""
    newline: str
    """The first line ending found (``\\n`` when there is none); used for inserted lines."""
    line_starts: list[int] = field(default_factory=list)

    @classmethod
    def decode(cls, raw: bytes) -> SourceFile:
        """Decode ``raw`` like the interpreter does; raise :class:`SourceError` with the reason."""
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        except SyntaxError as exc:
            if not exc.msg.startswith("invalid or missing encoding declaration"):
                raise SourceError(f"bad encoding declaration: {exc.msg}") from exc
            # No cookie and a first line that is not UTF-8: report the undecodable bytes below.
            encoding = "utf-8"
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise SourceError(f"cannot decode as {encoding}: {exc}") from exc
        if encoding == "utf-8" and raw.startswith(codecs.BOM_UTF8):
            encoding = "utf-8-sig"
            text = text.removeprefix("\ufeff")
        found = _LINE_BREAK.search(text)
        return cls(text=text, encoding=encoding, newline=found.group() if found else "\n")

    def __post_init__(self) -> None:
        starts = [0]
        starts.extend(m.end() for m in _LINE_BREAK.finditer(self.text))
        self.line_starts = starts

    @property
    def line_count(self) -> int:
        n = len(self.line_starts)
        return n - 1 if self.line_starts[-1] == len(self.text) else n

    def encode(self, text: str) -> bytes:
        """Encode rewritten text with the file's own encoding (and BOM)."""
        return text.encode(self.encoding)

    def line_text(self, line: int) -> str:
        """The text of 1-based ``line`` without its line ending."""
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def offset(self, line: int, col: int) -> int:
        """Text offset of an ``ast`` position (1-based line, UTF-8 byte column)."""
        start = self.line_starts[line - 1]
        if col == 0:
            return start
        prefix = self.text[start : start + col]
        if prefix.isascii():
            return start + col
        raw = self.line_text(line).encode("utf-8")[:col]
        return start + len(raw.decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        """Start and end text offsets of a node that has end positions."""
        n: ast.expr | ast.stmt | ast.arg | ast.keyword = node  # type: ignore[assignment]
        assert n.end_lineno is not None and n.end_col_offset is not None
        return self.offset(n.lineno, n.col_offset), self.offset(n.end_lineno, n.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def line_start(self, line: int) -> int:
        return self.line_starts[line - 1]

    def line_end(self, line: int) -> int:
        """Offset just past the line ending of ``line`` (end of text for the last line)."""
        return self.line_starts[line] if line < len(self.line_starts) else len(self.text)

    def indent_of(self, line: int) -> str:
        text = self.line_text(line)
        return text[: len(text) - len(text.lstrip(" \t\f"))]

"""Decoding source files like the interpreter, and mapping ast positions to text offsets."""

from __future__ import annotations

import ast

import pytest

from tf2npu.migrate.source import SourceError, SourceFile


def _parse(raw: bytes) -> tuple[SourceFile, ast.Module]:
    source = SourceFile.decode(raw)
    return source, ast.parse(source.text)


# -- encodings ----------------------------------------------------------------------------------
def test_pep263_latin1_round_trips_byte_for_byte() -> None:
    raw = "# -*- coding: latin-1 -*-\nname = 'café'  # déjà vu\n".encode("latin-1")
    assert b"\xe9" in raw
    source = SourceFile.decode(raw)
    assert source.encoding == "iso-8859-1"
    assert source.text == "# -*- coding: latin-1 -*-\nname = 'café'  # déjà vu\n"
    assert source.encode(source.text) == raw


def test_cookie_on_second_line_after_shebang() -> None:
    raw = "#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nx = '€'\n".encode("cp1252")
    source = SourceFile.decode(raw)
    assert source.encoding == "cp1252"
    assert source.text.endswith("x = '€'\n")
    assert source.encode(source.text) == raw


def test_edited_latin1_text_is_encoded_back_as_latin1() -> None:
    raw = "# coding: latin-1\ns = 'é'\n".encode("latin-1")
    source = SourceFile.decode(raw)
    assert source.encode(source.text.replace("s =", "t =")) == b"# coding: latin-1\nt = '\xe9'\n"


def test_utf8_bom_is_kept() -> None:
    raw = b"\xef\xbb\xbfx = '\xc3\xa9'\n"
    source = SourceFile.decode(raw)
    assert source.encoding == "utf-8-sig"
    assert source.text == "x = 'é'\n"
    assert source.encode(source.text) == raw
    assert source.encode("y = 1\n") == b"\xef\xbb\xbfy = 1\n"


def test_bom_with_utf8_cookie_is_accepted() -> None:
    raw = b"\xef\xbb\xbf# -*- coding: utf-8 -*-\nx = 1\n"
    source = SourceFile.decode(raw)
    assert source.text == "# -*- coding: utf-8 -*-\nx = 1\n"
    assert source.encode(source.text) == raw


def test_plain_utf8_without_cookie() -> None:
    source = SourceFile.decode("s = '中文'\n".encode())
    assert source.encoding == "utf-8"
    assert source.text == "s = '中文'\n"


def test_undecodable_bytes_name_the_encoding() -> None:
    with pytest.raises(SourceError) as info:
        SourceFile.decode(b"x = 1\ny = 2\ns = '\xff'\n")
    assert str(info.value).startswith("cannot decode as utf-8: ")
    assert "0xff" in str(info.value)


def test_undecodable_bytes_on_the_first_line_name_the_encoding() -> None:
    # tokenize reports these as a missing cookie; the user needs to know the bytes are not UTF-8.
    with pytest.raises(SourceError) as info:
        SourceFile.decode(b"s = '\xff'\n")
    assert str(info.value).startswith("cannot decode as utf-8: ")
    assert "0xff" in str(info.value)


def test_undecodable_bytes_under_a_cookie_name_that_encoding() -> None:
    with pytest.raises(SourceError) as info:
        SourceFile.decode(b"# coding: ascii\ns = '\xe9'\n")
    assert str(info.value).startswith("cannot decode as ascii: ")


def test_unknown_cookie_is_a_source_error() -> None:
    with pytest.raises(SourceError) as info:
        SourceFile.decode(b"# -*- coding: klingon -*-\nx = 1\n")
    assert str(info.value) == "bad encoding declaration: unknown encoding: klingon"


def test_bom_contradicting_cookie_is_a_source_error() -> None:
    with pytest.raises(SourceError) as info:
        SourceFile.decode(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n")
    assert str(info.value) == "bad encoding declaration: encoding problem: utf-8"


# -- line endings and the line table ------------------------------------------------------------
def test_crlf_line_table_and_offsets() -> None:
    source, tree = _parse(b"a = 1\r\nbb = 2\r\n")
    assert source.newline == "\r\n"
    assert source.line_starts == [0, 7, 15]
    assert source.line_count == 2
    assert [source.segment(s) for s in tree.body] == ["a = 1", "bb = 2"]
    assert source.offset(2, 5) == 12
    assert source.line_text(2) == "bb = 2"
    assert source.line_end(1) == 7
    assert source.encode(source.text) == b"a = 1\r\nbb = 2\r\n"


def test_cr_only_line_endings() -> None:
    source, tree = _parse(b"a = 1\rb = (2,\r     3)\r")
    assert source.newline == "\r"
    assert source.line_starts == [0, 6, 14, 22]
    assert source.line_count == 3
    assert source.segment(tree.body[1]) == "b = (2,\r     3)"
    assert source.line_text(3) == "     3)"


def test_mixed_line_endings_newline_is_the_first_one() -> None:
    source, tree = _parse(b"a = 1\nb = 2\r\nc = 3\rd = 4\n")
    assert source.newline == "\n"
    assert source.line_starts == [0, 6, 13, 19, 25]
    assert [source.offset(s.lineno, s.col_offset) for s in tree.body] == [0, 6, 13, 19]
    assert [source.segment(s) for s in tree.body] == ["a = 1", "b = 2", "c = 3", "d = 4"]
    assert [source.line_text(n) for n in (1, 2, 3, 4)] == ["a = 1", "b = 2", "c = 3", "d = 4"]


def test_crlf_found_first_wins() -> None:
    assert SourceFile.decode(b"a = 1\r\nb = 2\n").newline == "\r\n"


def test_no_line_ending_defaults_to_lf() -> None:
    source = SourceFile.decode(b"x = 1")
    assert source.newline == "\n"
    assert source.line_starts == [0]
    assert source.line_count == 1
    assert source.line_text(1) == "x = 1"
    assert source.line_end(1) == 5


def test_file_without_trailing_newline() -> None:
    source, tree = _parse(b"x = 1\ny = f(2)")
    assert source.line_count == 2
    assert source.line_starts == [0, 6]
    assert source.segment(tree.body[1]) == "y = f(2)"
    assert source.line_end(2) == 14


def test_empty_file() -> None:
    source = SourceFile.decode(b"")
    assert source.text == ""
    assert source.encoding == "utf-8"
    assert source.newline == "\n"
    assert source.line_starts == [0]
    assert source.line_count == 0
    assert source.encode("") == b""


def test_form_feed_is_not_a_line_break() -> None:
    # Python's tokenizer only breaks lines at \r\n, \r and \n (unlike str.splitlines).
    source = SourceFile.decode(b"\x0cx = 1\ny = 2\n")
    assert source.line_starts == [0, 7, 13]
    assert source.indent_of(1) == "\x0c"


# -- columns ------------------------------------------------------------------------------------
def test_non_ascii_columns_are_utf8_bytes() -> None:
    source, tree = _parse("s = 'é'; t = f(x)\nu = '中文字'; v = g(y)\n".encode())
    first, second, third, fourth = tree.body
    assert second.col_offset == 10  # bytes: 'é' is two
    assert source.offset(1, second.col_offset) == 9
    assert source.segment(second) == "t = f(x)"
    assert fourth.col_offset == 17  # three CJK characters of three bytes each
    assert source.offset(2, fourth.col_offset) == 18 + 11
    assert source.segment(fourth) == "v = g(y)"
    assert source.segment(third) == "u = '中文字'"
    assert source.span(first) == (0, 7)


def test_non_ascii_before_a_nested_node() -> None:
    source, tree = _parse("y = f('日本', rate=0.5)  # é\n".encode())
    call = tree.body[0].value
    assert isinstance(call, ast.Call)
    assert source.segment(call.keywords[0]) == "rate=0.5"
    assert source.segment(call.keywords[0].value) == "0.5"
    assert source.span(call) == (4, 21)


def test_non_ascii_in_a_multiline_node_on_its_end_line() -> None:
    source, tree = _parse("x = ('é',\n     'ü'); y = 2\n".encode())
    assert source.segment(tree.body[0]) == "x = ('é',\n     'ü')"
    assert source.segment(tree.body[1]) == "y = 2"


def test_tabs_count_as_one_column() -> None:
    source, tree = _parse(b"if x:\n\ty = f(1)\n\tz = 2\n")
    inner = tree.body[0]
    assert isinstance(inner, ast.If)
    assert source.segment(inner.body[0]) == "y = f(1)"
    assert source.offset(2, 1) == 7
    assert source.indent_of(2) == "\t"


def test_offset_at_column_zero_is_line_start() -> None:
    source = SourceFile.decode("é = 1\nb = 2\n".encode())
    assert source.offset(2, 0) == 6
    assert source.line_start(2) == 6


# -- helpers ------------------------------------------------------------------------------------
def test_indent_of() -> None:
    source = SourceFile.decode(b"def f():\n    x = 1\n\n  \t# c\n")
    assert source.indent_of(1) == ""
    assert source.indent_of(2) == "    "
    assert source.indent_of(3) == ""
    assert source.indent_of(4) == "  \t"


def test_line_text_strips_only_the_line_ending() -> None:
    source = SourceFile.decode(b"x = 1   \r\ny = 2\t\r\n")
    assert source.line_text(1) == "x = 1   "
    assert source.line_text(2) == "y = 2\t"


def test_line_count_with_and_without_final_newline() -> None:
    assert SourceFile.decode(b"a\nb\n").line_count == 2
    assert SourceFile.decode(b"a\nb").line_count == 2
    assert SourceFile.decode(b"\n\n").line_count == 2

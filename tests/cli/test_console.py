"""Consoles wrap at the terminal's width, never at 80 columns when piped."""

from __future__ import annotations

import pytest

from tf2npu.cli.console import PIPE_WIDTH, make_console


def test_piped_console_is_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    console = make_console(stderr=True)  # pytest captures: not a terminal
    assert (console.is_terminal, console.width) == (False, PIPE_WIDTH)
    with console.capture() as captured:
        console.print("word " * 40)
    assert captured.get() == "word " * 40 + "\n"  # one line, not cut at 80


def test_columns_set_by_the_user_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert make_console().width == 100


def test_piped_lines_are_never_padded(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    monkeypatch.delenv("COLUMNS", raising=False)
    console = make_console()
    table = Table("Rule", "Changes")
    table.add_row("dropout", "2")
    console.print(Padding(Text("message\nfix: do this"), (0, 0, 0, 8)))
    console.print(table, Text("end"))
    out = capsys.readouterr().out
    assert out.splitlines()[:2] == ["        message", "        fix: do this"]
    assert out.splitlines()[-1] == "end"
    assert all(line == line.rstrip() for line in out.splitlines()), out
    assert max(len(line) for line in out.splitlines()) < 40


def test_a_piped_console_writes_to_the_stream_of_the_moment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    make_console(stderr=True).print("to stderr   ")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "to stderr\n")

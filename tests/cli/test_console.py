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

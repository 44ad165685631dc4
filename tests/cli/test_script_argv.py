"""A command's own flags after SCRIPT are found (``--x=v`` too) and named in a warning."""

from __future__ import annotations

import argparse

import pytest

from tf2npu.cli.script_argv import FLAGS_KEY, misplaced, record_flags, warn_misplaced


def test_flags_are_found_once_in_order_with_values_joined_by_equals() -> None:
    flags = {"--no-npu", "--report-dir", "--option"}
    args = ["--epochs", "3", "--report-dir=out", "--no-npu", "--no-npu", "--option", "k=v"]
    assert misplaced(args, flags) == ["--report-dir", "--no-npu", "--option"]
    assert misplaced(["--epochs", "3", "no-npu"], flags) == []


def test_record_flags_keeps_help_out() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-npu", action="store_true")
    record_flags(parser)
    assert getattr(parser.parse_args([]), FLAGS_KEY) == frozenset({"--no-npu"})


def test_the_warning_names_the_flag_and_where_it_goes(capsys: pytest.CaptureFixture[str]) -> None:
    assert warn_misplaced("tf2npu run", "train.py", ["--lr", "0.1"], {"--no-npu"}) == []
    assert warn_misplaced("tf2npu run", "train.py", ["--no-npu"], {"--no-npu"}) == ["--no-npu"]
    assert capsys.readouterr().err == (
        "tf2npu run: warning: --no-npu comes after SCRIPT, so train.py gets it as its own "
        "argument and tf2npu run does not; to use it, put it before SCRIPT: "
        "tf2npu run --no-npu ... train.py\n"
    )

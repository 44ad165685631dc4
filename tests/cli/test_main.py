"""The ``tf2npu`` entry point: ``python -m tf2npu``, and a command group without its subcommand."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tf2npu
from tf2npu.cli.main import COMMANDS, build_parser, command_in

SRC = str(Path(tf2npu.__file__).parents[1])


def python_m(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "tf2npu", *args], capture_output=True, text=True, env=env,
        timeout=120,
    )  # fmt: skip


@pytest.mark.slow
def test_python_m_tf2npu_is_the_cli() -> None:
    done = python_m("--version")
    assert (done.returncode, done.stdout) == (0, f"tf2npu {tf2npu.__version__}\n")
    done = python_m("graph")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "tf2npu graph: error: give a subcommand: tf2npu graph inspect GRAPH (a .pb, .pbtxt or "
        ".meta file); `tf2npu graph inspect --help` lists its options\n"
    )


def test_help_names_the_program_tf2npu() -> None:
    done = python_m("--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: tf2npu [-h] [--version] COMMAND ...\n")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["migrate", "src", "-o", "out"], "migrate"),
        (["--version"], None),
        (["-h", "run", "x.py"], "run"),
        (["nosuch", "migrate"], None),
        (["--", "migrate"], None),
        ([], None),
    ],
)
def test_command_in_is_the_first_item_that_is_not_an_option(
    argv: list[str], expected: str | None
) -> None:
    assert command_in(argv) == expected


def test_a_command_imports_its_own_module_only() -> None:
    code = (
        "import sys\n"
        "from tf2npu.cli.main import main\n"
        "try:\n"
        "    main(['migrate', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('tf2npu.cli.')))\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    loaded = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert "tf2npu.cli.migrate" in loaded
    assert not {f"tf2npu.cli.{name}" for name in COMMANDS if name != "migrate"} & set(loaded)


def test_the_full_parser_lists_every_command_with_its_help() -> None:
    text = build_parser().format_help()
    for name, help_text in COMMANDS.items():
        assert f"    {name}" in text
        assert help_text.split()[0] in text
    lazy = build_parser(only="migrate")
    assert lazy.format_help() == text
    with pytest.raises(SystemExit):
        lazy.parse_args(["nosuch"])

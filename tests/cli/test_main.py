"""The ``tf2npu`` entry point: ``python -m tf2npu``, and a command group without its subcommand."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tf2npu

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

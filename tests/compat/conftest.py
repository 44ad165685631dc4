"""Run TF1 script text in a fresh interpreter after ``tf2npu.compat.activate()``.

activate() swaps ``sys.modules["tensorflow"]`` and disables v2 behaviour for the whole
process, so every scenario runs in its own subprocess and never leaks into other tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest

PRELUDE = "from tf2npu.compat import activate\nactivate()\n"


def run_python(code: str, timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with this interpreter; TF's C++ info logs are silenced."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.fixture
def run_plain() -> Callable[[str], subprocess.CompletedProcess[str]]:
    """``run_plain(code)`` → the finished process, for scenarios without activate()."""
    return run_python


@pytest.fixture
def run_tf1() -> Callable[[str], str]:
    """``run_tf1(script)`` → the script's stdout; fails the test with stderr if it fails."""

    def run(script: str) -> str:
        done = run_python(PRELUDE + textwrap.dedent(script))
        assert done.returncode == 0, f"script failed:\n{done.stderr[-4000:]}"
        return done.stdout

    return run

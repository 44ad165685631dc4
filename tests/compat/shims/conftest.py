"""Each test starts and ends with no ``precision_tool`` imported.

A test that puts a user's copy on ``sys.path`` leaves that copy in ``sys.modules`` (as a script
would); the next test in the same worker would import it instead of ours.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


def _forget() -> None:
    for name in [
        m for m in sys.modules if m == "precision_tool" or m.startswith("precision_tool.")
    ]:
        del sys.modules[name]


@pytest.fixture(autouse=True)
def _no_precision_tool_imported() -> Iterator[None]:
    _forget()
    yield
    _forget()

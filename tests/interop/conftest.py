"""The vendor tools as an oracle: ``.venv-vendor`` (``make vendor``), or a skip saying why."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / ".venv-vendor"
MSACCUCMP = "msprobe/msaccucmp/msaccucmp.py"
"""The real msaccucmp.py, inside mindstudio-probe's package (site-packages relative)."""


@dataclass(frozen=True)
class Vendor:
    python: Path
    msaccucmp: Path

    def msaccucmp_run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """``python msaccucmp.py ARGS`` with the vendor venv's Python (numpy 2, pandas 3)."""
        return subprocess.run(
            [str(self.python), str(self.msaccucmp), *args],
            capture_output=True, text=True, cwd=cwd, timeout=600,
        )  # fmt: skip


def _why_missing() -> str:
    failed = VENDOR / ".failed"
    if failed.is_file():
        return f"{VENDOR} was not built (PyPI not reachable?): {failed.read_text().strip()}"
    return f"{VENDOR} is missing: run `make vendor` (it needs PyPI)"


@pytest.fixture(scope="session")
def vendor() -> Vendor:
    """The vendor venv's tools; skips, saying why, when ``.venv-vendor`` is not built."""
    python = VENDOR / "bin" / "python"
    if not (VENDOR / ".installed").is_file() or not python.is_file():
        pytest.skip(_why_missing())
    found = sorted(VENDOR.glob(f"lib/python*/site-packages/{MSACCUCMP}"))
    if not found:
        pytest.skip(f"{VENDOR} holds no {MSACCUCMP}: rebuild it with `make vendor`")
    return Vendor(python, found[0])

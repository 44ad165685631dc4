"""hccl: a real CANN hccl package on sys.path wins over tf2npu's stand-in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hccl
from npu_bridge._handover import find_real_adapter

OURS = Path(hccl.__file__).parent
SRC = OURS.parent


def _fake_hccl(root: Path, init: str = "MARKER = 'cann'\n") -> Path:
    package = root / "hccl"
    (package / "manage").mkdir(parents=True)
    (package / "__init__.py").write_text(init)
    (package / "manage" / "__init__.py").write_text("")
    (package / "manage" / "api.py").write_text("def get_rank_id(group=None):\n    return 5\n")
    return package


@pytest.mark.slow
def test_a_real_hccl_after_ours_on_sys_path_wins(tmp_path) -> None:
    _fake_hccl(tmp_path)
    code = (
        f"import sys\nsys.path.insert(0, {str(SRC)!r})\nsys.path.append({str(tmp_path)!r})\n"
        "from hccl.manage.api import get_rank_id\nimport hccl\n"
        "print(getattr(hccl, 'MARKER', 'ours'), get_rank_id())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "cann 5\n"


def test_another_copy_of_the_stand_in_is_not_taken_for_cann(tmp_path) -> None:
    _fake_hccl(tmp_path, init=(OURS / "__init__.py").read_text())
    found = find_real_adapter(OURS, [str(SRC), str(tmp_path)], "hccl", hccl._is_real_hccl)
    assert found is None
    real = _fake_hccl(tmp_path / "cann")
    assert find_real_adapter(OURS, [str(tmp_path / "cann")], "hccl", hccl._is_real_hccl) == real

"""_handover: a real Ascend npu_bridge anywhere on sys.path wins over ours."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import npu_bridge
from npu_bridge._handover import find_real_adapter

OURS = Path(npu_bridge.__file__).parent
SRC = OURS.parent


def _fake_adapter(root: Path, library: str = "_tf_adapter.so") -> Path:
    package = root / "npu_bridge"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("MARKER = 'real adapter'\n")
    (package / "sub.py").write_text("VALUE = 42\n")
    if library:
        (package / library).write_bytes(b"")
    return package


def _import_in_subprocess(*extra_path: Path) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(SRC)!r})\n"
        f"sys.path.extend({[str(p) for p in extra_path]!r})\n"
        "import npu_bridge\n"
        "print(getattr(npu_bridge, 'MARKER', 'ours'))\n"
        "if hasattr(npu_bridge, 'MARKER'):\n"
        "    import npu_bridge.sub\n"
        "    print(npu_bridge.sub.VALUE)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_real_adapter_after_ours_on_sys_path_wins(tmp_path) -> None:
    _fake_adapter(tmp_path)
    result = _import_in_subprocess(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["real adapter", "42"]


def test_a_package_without_the_adapter_library_is_not_the_real_one(tmp_path) -> None:
    _fake_adapter(tmp_path, library="")
    assert find_real_adapter(OURS, [str(SRC), str(tmp_path)]) is None


def test_find_real_adapter(tmp_path) -> None:
    real = _fake_adapter(tmp_path / "a", library="tf_adapter.cpython-37m.so")
    assert find_real_adapter(OURS, [str(SRC), "/nonexistent", str(tmp_path / "a")]) == real
    assert find_real_adapter(OURS, [str(SRC)]) is None

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tf2npu.atomic import atomic_path, write_text_atomic


def test_writes_the_text_exactly(tmp_path: Path) -> None:
    target = tmp_path / "summary.md"
    write_text_atomic(target, "a\nü\r\n")
    assert target.read_bytes() == "a\nü\r\n".encode()
    assert os.listdir(tmp_path) == ["summary.md"]


def test_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")
    write_text_atomic(target, "new")
    assert target.read_text() == "new"
    assert os.listdir(tmp_path) == ["report.json"]


def test_temp_file_is_next_to_the_target_and_hidden(tmp_path: Path) -> None:
    target = tmp_path / "x.csv"
    with atomic_path(target) as temp:
        assert temp.parent == tmp_path
        assert temp.name.startswith(".x.csv.")
        assert temp.exists()
        assert not target.exists()
        temp.write_text("done")
    assert target.read_text() == "done"


def test_failure_keeps_the_old_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "x.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"), atomic_path(target) as temp:
        temp.write_text("half")
        raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["x.csv"]


def test_permissions_follow_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "a.md", "x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "a.md").stat().st_mode) == 0o644

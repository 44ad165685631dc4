from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tf2npu.atomic import (
    TEMP_NAME,
    atomic_path,
    copy_stream_atomic,
    probe_writable,
    temp_name,
    write_bytes_atomic,
    write_bytes_new,
    write_text_atomic,
)


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


def test_temporary_names_fit_the_name_limit_and_are_recognised() -> None:
    long = "é" * 127 + ".py"  # 257 bytes: over the limit itself, the temp name must not grow
    name = temp_name(long)
    assert len(os.fsencode(name)) <= 255 and TEMP_NAME.match(name)
    assert TEMP_NAME.match(temp_name("a.py"))
    assert not TEMP_NAME.match(".a.py.tmp") and not TEMP_NAME.match("a.py.0123456789ab.tmp")


def test_a_long_name_is_written(tmp_path: Path) -> None:
    target = tmp_path / ("x" * 250 + ".py")
    write_bytes_atomic(target, b"x = 1\n")
    assert os.listdir(tmp_path) == [target.name]


def test_writing_replaces_a_link_and_never_writes_through_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.symlink(victim, tmp_path / "link")
    write_bytes_atomic(tmp_path / "link", b"new")
    assert victim.read_text() == "keep"
    assert not (tmp_path / "link").is_symlink() and (tmp_path / "link").read_bytes() == b"new"


def test_write_new_never_replaces(tmp_path: Path) -> None:
    target = tmp_path / "t.py.bak"
    assert write_bytes_new(target, b"first", 0o640)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert not write_bytes_new(target, b"second")
    assert target.read_bytes() == b"first"
    assert os.listdir(tmp_path) == ["t.py.bak"]


def test_copy_stream_copies_in_blocks(tmp_path: Path) -> None:
    source = tmp_path / "big.bin"
    source.write_bytes(bytes(range(256)) * 10_000)
    with open(source, "rb") as stream:
        copy_stream_atomic(tmp_path / "copy.bin", stream, 0o600)
    assert (tmp_path / "copy.bin").read_bytes() == source.read_bytes()
    assert stat.S_IMODE((tmp_path / "copy.bin").stat().st_mode) == 0o600


def test_probe_leaves_nothing_and_raises_where_it_cannot_write(tmp_path: Path) -> None:
    probe_writable(tmp_path)
    assert os.listdir(tmp_path) == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        probe_writable(tmp_path / "file")

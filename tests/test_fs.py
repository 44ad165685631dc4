"""``tf2npu.fs``: regular files only, no hang on a FIFO, no folder skipped by a walk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tf2npu.errors import UsageError
from tf2npu.fs import NotRegularFile, open_regular, read_regular, walk


def test_a_regular_file_and_a_link_to_one_are_read(tmp_path: Path) -> None:
    (tmp_path / "a.npy").write_bytes(b"data")
    (tmp_path / "link.npy").symlink_to(tmp_path / "a.npy")
    assert read_regular(tmp_path / "link.npy") == b"data"
    with open_regular(tmp_path / "a.npy") as stream:
        assert stream.read(2) == b"da"


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: os.mkfifo(p), "a FIFO, not a regular file"),
        (lambda p: p.symlink_to("/dev/zero"), "a character device, not a regular file"),
        (lambda p: p.mkdir(), "a folder, not a regular file"),
    ],
    ids=["fifo", "dev-zero", "folder"],
)
def test_what_is_not_a_regular_file_is_refused_at_once(tmp_path: Path, make, words: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "x.npy"
    make(path)
    with pytest.raises(NotRegularFile, match=f"^{words}$"):
        read_regular(path)


def test_a_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "none")


def test_walk_sorts_and_names_a_folder_it_cannot_list(tmp_path: Path) -> None:
    for name in ("b", "a"):
        (tmp_path / name).mkdir()
    assert [Path(d).name for d, _, _ in walk(tmp_path, "DUMP")] == [tmp_path.name, "a", "b"]
    with pytest.raises(UsageError, match=r"^DUMP: cannot read the folder '.*/none' \(No such"):
        list(walk(tmp_path / "none", "DUMP"))

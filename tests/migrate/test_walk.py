"""Listing SRC without following links or opening files; checking and preparing OUT."""

import os
from pathlib import Path

import pytest

from tf2npu.migrate.walk import Kind, conflicts, folder_tasks, remove_leftovers, walk


def test_every_entry_has_its_kind_and_links_are_not_descended(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    os.symlink("pkg", tmp_path / "link")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "empty").mkdir()
    assert sorted(walk(tmp_path)) == [
        ("empty", Kind.EMPTY_FOLDER, ""),
        ("link", Kind.LINK, ""),
        ("pipe", Kind.SPECIAL, "named pipe (FIFO)"),
        ("pkg/a.py", Kind.FILE, ""),
    ]


def test_an_entry_that_cannot_be_inspected_is_yielded_and_a_vanished_one_skipped(
    tmp_path, monkeypatch
):
    for name in ("bad", "gone", "ok"):
        (tmp_path / name).write_text("")

    class Entry:
        def __init__(self, entry):
            self.name = entry.name
            self._entry = entry

        def stat(self, follow_symlinks=True):
            if self.name == "bad":
                raise PermissionError(13, "Permission denied")
            if self.name == "gone":
                raise FileNotFoundError(2, "No such file or directory")
            return self._entry.stat(follow_symlinks=follow_symlinks)

    real_scandir = os.scandir

    class Listing:
        def __init__(self, path):
            self._it = real_scandir(path)

        def __enter__(self):
            return (Entry(e) for e in self._it)

        def __exit__(self, *exc):
            self._it.close()

    monkeypatch.setattr(os, "scandir", Listing)
    assert sorted(walk(tmp_path)) == [
        ("bad", Kind.UNREADABLE, "cannot inspect: Permission denied"),
        ("ok", Kind.FILE, ""),
    ]


def test_tasks_are_sorted_and_keep_odd_names(tmp_path):
    name = os.fsdecode(b"\xff.py")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / name).write_text("")
    (tmp_path / "src" / "a.py").write_text("")
    found = folder_tasks(tmp_path / "src", tmp_path / "out")
    assert [t.rel for t in found] == ["a.py", name]
    assert found[1].dst == os.path.join(tmp_path / "out", name)


def test_conflicts_name_each_stale_entry_once(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "a.py").write_text("")
    (src / "pkg" / "b.py").write_text("")
    (src / "c.py").write_text("")
    out.mkdir()
    (out / "pkg").write_text("")
    (out / "c.py").mkdir()
    assert conflicts(out, folder_tasks(src, out)) == [
        f"{str(out / 'c.py')!r} is a folder where SRC has a file",
        f"{str(out / 'pkg')!r} is a file where SRC has a folder",
    ]


@pytest.mark.parametrize("name", [".a.py.0123456789ab.tmp", ".x.0123456789ab.tmp"])
def test_only_our_temporary_names_are_removed(tmp_path, name):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / name).write_text("half")
    (tmp_path / "d" / ".a.py.tmp").write_text("the user's")
    os.symlink("nowhere", tmp_path / ".l.0123456789ab.tmp")  # a link: not ours to remove
    assert remove_leftovers(tmp_path) == 1
    assert sorted(p.name for p in Path(tmp_path / "d").iterdir()) == [".a.py.tmp"]


def test_empty_folders_are_listed_and_must_not_be_files_in_out(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    (src / "a" / "empty").mkdir(parents=True)
    (src / "b").mkdir()
    assert sorted(walk(src)) == [("a/empty", Kind.EMPTY_FOLDER, ""), ("b", Kind.EMPTY_FOLDER, "")]
    (out / "a").mkdir(parents=True)
    (out / "a" / "empty").write_text("")
    assert conflicts(out, folder_tasks(src, out)) == [
        f"{str(out / 'a' / 'empty')!r} is a file where SRC has a folder"
    ]

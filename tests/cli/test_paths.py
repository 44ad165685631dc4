"""Path checks made before any work: literal messages for each way a path can be wrong."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pytest

from tf2npu.cli.paths import (
    check_input_file,
    check_output_dir,
    check_output_file,
    checked_script,
    kind_of,
    path_arg,
)
from tf2npu.errors import UsageError


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    Path("afile").write_text("x")
    return tmp_path


def test_empty_path_is_refused() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"^an empty path; give a file or"):
        path_arg("")
    assert path_arg("out") == Path("out")


def test_kind_of(here: Path) -> None:
    os.mkfifo("pipe")
    assert (kind_of(Path("pipe")), kind_of(here), kind_of(Path("/dev/null"))) == (
        "a FIFO (named pipe)",
        "a folder",
        "a character device",
    )


def test_output_dir_is_created_and_left_empty(here: Path) -> None:
    check_output_dir(Path("new/dumps"), "--dump-dir")
    assert list(Path("new/dumps").iterdir()) == []


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("afile", "--dump-dir 'afile' is a file; give a folder"),
        ("afile/sub/d", "--dump-dir 'afile/sub/d' cannot be created: 'afile' is a file, not a "
                        "folder; give a path under a folder"),
    ],
)  # fmt: skip
def test_output_dir_errors(here: Path, path: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        check_output_dir(Path(path), "--dump-dir")
    assert str(err.value) == message


@pytest.mark.skipif(sys.platform != "linux", reason="/proc takes no new files, even from root")
def test_unwritable_output_dir_is_found_by_writing() -> None:
    with pytest.raises(UsageError, match=r"^--report-dir '/proc/self' is not writable \("):
        check_output_dir(Path("/proc/self"), "--report-dir")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (".", "--html '.' is a folder; give a file name, e.g. p.html"),
        ("afile/p.html", "--html 'afile/p.html' cannot be written: 'afile' is a file, not a "
                         "folder; give a path under a folder, e.g. p.html"),
    ],
)  # fmt: skip
def test_output_file_errors(here: Path, path: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        check_output_file(Path(path), "--html", "p.html")
    assert str(err.value) == message


def test_output_file_in_a_new_folder_is_fine(here: Path) -> None:
    check_output_file(Path("out/p.html"), "--html", "p.html")
    assert Path("out").is_dir() and not Path("out/p.html").exists()


def test_input_file_checks(here: Path) -> None:
    check_input_file(Path("afile"), "GRAPH", "fix")
    check_input_file(Path("missing"), "GRAPH", "fix")  # left to the reader's own message
    os.mkfifo("pipe")
    with pytest.raises(UsageError) as err:
        check_input_file(Path("pipe"), "GRAPH", "give a graph file")
    assert str(err.value) == "GRAPH 'pipe' is a FIFO (named pipe); give a graph file"


def test_checked_script_names_the_script_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("")
    (tmp_path / "notes.txt").write_text("")
    assert checked_script(str(tmp_path / "train.py"), "FIX", "WHERE") == tmp_path / "train.py"
    with pytest.raises(UsageError) as missing:
        checked_script(str(tmp_path / "nope.py"), "FIX", "WHERE")
    assert str(missing.value) == f"SCRIPT {str(tmp_path / 'nope.py')!r} does not exist; FIX"
    with pytest.raises(UsageError) as text:
        checked_script(str(tmp_path / "notes.txt"), "FIX", "WHERE")
    assert str(text.value) == f"SCRIPT {str(tmp_path / 'notes.txt')!r} is not a .py file; WHERE"

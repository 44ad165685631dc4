"""Reading logs: files, stdin, bad paths, bad bytes; frames of the user's code."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tf2npu.debug.doctor import logtext
from tf2npu.debug.doctor.logtext import Log, read_log, user_frame
from tf2npu.errors import UsageError


def test_a_log_file_is_read_as_lines(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_bytes(b"one\r\ntwo\n\xff\xfe three\n")
    assert read_log(str(path)) == Log(str(path), ("one", "two", "\ufffd\ufffd three"))


def test_an_empty_log_has_no_lines(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_text("")
    assert read_log(str(tmp_path / "empty.log")).lines == ()


def test_dash_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("EI0002: timeout\n"))
    assert read_log("-") == Log("<stdin>", ("EI0002: timeout",))


def test_a_huge_log_is_read_from_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logtext, "MAX_LOG_BYTES", 10)
    path = tmp_path / "big.log"
    path.write_text("start of the log\nEI0002\n")
    assert read_log(str(path)).lines[-1] == "EI0002"
    assert "start" not in "\n".join(read_log(str(path)).lines)


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: p, "does not exist"),
        (lambda p: p.mkdir() or p, "is a directory; give a log file, or --run-dir"),
        (lambda p: os.mkfifo(p) or p, "is not a regular file"),
    ],
    ids=["missing", "directory", "fifo"],
)
def test_bad_paths_are_usage_errors(tmp_path: Path, make, words: str) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path / "x.log")
    with pytest.raises(UsageError, match=words):
        read_log(str(path))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_log_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "secret.log"
    path.write_text("x")
    path.chmod(0)
    with pytest.raises(UsageError, match="cannot be read"):
        read_log(str(path))


def test_an_unreadable_log_as_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.log"
    path.write_text("x")

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(UsageError, match=r"'.*x\.log' cannot be read \(Permission denied\)"):
        read_log(str(path))


def test_user_frame_skips_libraries_and_python() -> None:
    frames = [
        ("/home/u/train.py", 10),
        ("/home/u/model.py", 20),
        ("/venv/lib/python3.11/site-packages/tensorflow/python/client/session.py", 972),
        ("<frozen runpy>", 88),
    ]
    assert user_frame(frames) == ("/home/u/model.py", 20)
    assert user_frame(frames, "/other/train.py") == ("/home/u/train.py", 10)
    assert user_frame(frames[2:]) == ("", 0)


def test_stdin_bytes_that_are_not_utf8(monkeypatch: pytest.MonkeyPatch) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b"EI0002 \xff\n"))
    monkeypatch.setattr("sys.stdin", stdin)
    assert read_log("-").lines == ("EI0002 \ufffd",)

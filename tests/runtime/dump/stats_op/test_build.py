"""Building the statistics op (tf2npu.runtime.dump.stats_op.build): the command, and a failed
build that leaves a log and no library, so the dump falls back and says why."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from tf2npu.runtime.dump import stats_op
from tf2npu.runtime.dump.stats_op import build

pytestmark = pytest.mark.tf


def test_the_command_puts_tensorflow_s_flags_around_the_source() -> None:
    got = build.command(
        "g++", Path("s.cc"), Path("o.so"), ["-I/tf/include", "--std=c++17"], ["-L/tf", "-l:tf.so"]
    )
    assert got == [
        "g++", "-O3", "-shared", "-fPIC", "-I/tf/include", "--std=c++17", "s.cc", "-o", "o.so",
        "-L/tf", "-l:tf.so",
    ]  # fmt: skip


def test_no_compiler_leaves_a_log_and_no_library(tmp_path: Path) -> None:
    out = tmp_path / "_tensor_stats.so"
    out.write_bytes(b"an older build")
    why = build.build(out, compiler="no-such-g++")
    assert why == "no C++ compiler: 'no-such-g++' is not on PATH"
    assert not out.exists()
    assert (
        stats_op.load(out).why_not
        == f"_tensor_stats.so is not built: {why} ({out.with_suffix('.log')})"
    )


def test_a_compiler_error_is_quoted(tmp_path: Path) -> None:
    compiler = tmp_path / "cc"
    compiler.write_text("#!/bin/sh\necho 'tensor_stats.cc:1: error: boom' >&2\nexit 1\n")
    compiler.chmod(compiler.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "_tensor_stats.so"
    why = build.build(out, compiler=str(compiler))
    assert why == f"{compiler} exited with 1: tensor_stats.cc:1: error: boom"
    log = out.with_suffix(".log").read_text()
    assert log.startswith(f"{compiler} -O3 -shared -fPIC ") and log.endswith(why + "\n")
    assert not out.exists() and not (tmp_path / "_tensor_stats.so.tmp").exists()


def test_main_says_in_one_note_what_a_failed_build_means(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(build, "build", lambda: "no C++ compiler: 'g++' is not on PATH")
    assert build.main() == 1
    assert capsys.readouterr().err == (
        "note: the tf2npu statistics op was not built (no C++ compiler: 'g++' is not on PATH); "
        "dump_data=stats will measure with TensorFlow's reductions (five passes a tensor, "
        "slower)\n"
    )


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_g_plus_plus_builds_a_shared_library_and_removes_the_old_log(tmp_path: Path) -> None:
    out = tmp_path / "_tensor_stats.so"
    out.with_suffix(".log").write_text("an earlier failure\n")
    assert build.build(out) == ""
    assert out.read_bytes()[:4] == b"\x7fELF"
    assert not out.with_suffix(".log").exists()

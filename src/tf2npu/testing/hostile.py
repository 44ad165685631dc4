"""Running a tf2npu command against hostile input, the way the per-command sweeps in
``tests/cli/`` do: in its own process group, under a deadline, and then looking for what it
left running (TF-free).

A case passes when the command ends by itself before the deadline, prints no Python traceback
and leaves no process of its group behind (trials, ranks, a script's ``sleep 300``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tf2npu.config.env import SWEEP_TAG_ENV

__all__ = [
    "TAG",
    "Ended",
    "Started",
    "as_nobody",
    "finish",
    "group_members",
    "run_tf2npu",
    "start_tf2npu",
    "tagged",
    "wait_for",
]

TAG = SWEEP_TAG_ENV
"""The environment variable that marks every process a sweep case started."""


@dataclass(frozen=True, slots=True)
class Ended:
    """How one command ended, and what it left."""

    code: int
    out: str
    err: str
    left: tuple[int, ...]
    """Processes of the command's group still alive after it ended (reaped or killed since)."""

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.err


def group_members(pgid: int) -> tuple[int, ...]:
    """The live (not zombie) processes whose process group is ``pgid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stream:
                fields = stream.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(entry))
    return tuple(found)


def tagged(tag: str) -> tuple[int, ...]:
    """The live processes whose environment holds ``TAG=tag``: every descendant of a command
    started by :func:`start_tf2npu`, whatever session or group it moved to (trials and ranks
    start their own sessions)."""
    needle = f"{TAG}={tag}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stream:
                state = stream.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{entry}/environ", "rb") as stream:
                environ = stream.read().split(b"\0")
        except OSError:
            continue
        if state != "Z" and needle in environ:
            found.append(int(entry))
    return tuple(found)


def commands(pids: tuple[int, ...]) -> list[str]:
    """The command lines of ``pids`` (those still alive), words joined by spaces."""
    found = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as stream:
                found.append(stream.read().replace(b"\0", b" ").decode(errors="replace").strip())
        except OSError:
            continue
    return found


def wait_for(tag: str, needle: str, timeout: float) -> bool:
    """Wait until a process tagged ``tag`` runs a command line containing ``needle``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(needle in line for line in commands(tagged(tag))):
            return True
        time.sleep(0.1)
    return False


def stop_group(pgid: int) -> None:
    """SIGKILL what is left of group ``pgid`` (so one failed case does not leak into the next)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


@dataclass(frozen=True, slots=True)
class Started:
    """A command started by :func:`start_tf2npu` and the tag its processes carry."""

    process: subprocess.Popen[str]
    tag: str


def start_tf2npu(argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> Started:
    """``python -m tf2npu ARGV`` started in a new session (its own process group)."""
    full = dict(os.environ if env is None else env)
    full.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tag = full[TAG] = secrets.token_hex(8)
    full["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    process = subprocess.Popen(
        [sys.executable, "-m", "tf2npu", *argv],
        cwd=cwd,
        env=full,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    return Started(process, tag)


def finish(started: Started, timeout: float, *, settle: float = 1.0) -> Ended:
    """Wait for ``process`` (killed with its group at ``timeout``: then ``code`` is -9), look
    for the processes of its group and session still alive ``settle`` seconds later, and kill
    those."""
    process = started.process
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_group(process.pid)
        out, err = process.communicate()
    deadline = time.monotonic() + settle
    left = _left(started)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _left(started)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    stop_group(process.pid)
    return Ended(process.returncode, out, err, left)


def _left(started: Started) -> tuple[int, ...]:
    own = set(group_members(started.process.pid)) | set(tagged(started.tag))
    return tuple(sorted(own))


def run_tf2npu(
    argv: Sequence[str], cwd: Path, *, timeout: float = 60.0, env: dict[str, str] | None = None
) -> Ended:
    """Run ``python -m tf2npu ARGV`` to its end (see :func:`finish`)."""
    return finish(start_tf2npu(argv, cwd, env), timeout)


NOBODY = 65534


def as_nobody(folder: Path, argv: list[str]) -> tuple[int, str]:
    """``tf2npu ARGV`` in a forked child that became ``nobody`` in ``folder`` (which nobody must
    be able to write); its exit code and stderr. Only root can do this. (The venv's interpreter
    may live under /root, out of nobody's reach, so ``runuser`` cannot start a new one.)"""
    from tf2npu.cli.main import main

    err = folder / f".stderr-{secrets.token_hex(4)}.txt"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 70
        try:
            os.chdir(folder)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            with open(err, "w", encoding="utf-8") as stream:
                os.dup2(stream.fileno(), 2)
                sys.stderr = stream
                code = main(argv)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    text = err.read_text(encoding="utf-8")
    err.unlink()
    return os.waitstatus_to_exitcode(status), text

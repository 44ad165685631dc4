"""``tf2npu.procs``: children that die with their parent, a registry that stops them, signals
that become an exception."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tf2npu.procs import Children, Terminated, die_with_parent, signals_stop_children


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_child_dies_when_its_parent_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen(
        [sys.executable, "-c", (
            "import subprocess, sys, time\n"
            "from tf2npu.procs import die_with_parent\n"
            "child = subprocess.Popen(['sleep', '300'], preexec_fn=die_with_parent(), start_new_session=True)\n"
            f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
            "time.sleep(300)\n"
        )],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the child never started"
            time.sleep(0.05)
        child = int(pid_file.read_text())
        assert _alive(child)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 5
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        parent.kill()


def test_stop_all_kills_each_group_and_later_children_at_once() -> None:
    children = Children()
    first = subprocess.Popen(["sh", "-c", "sleep 300 & wait"], start_new_session=True)
    children.add(first)
    time.sleep(0.2)
    assert children.stop_all() == 1
    assert first.wait(timeout=5) == -signal.SIGKILL
    late = subprocess.Popen(["sleep", "300"], start_new_session=True)
    children.add(late)  # closed: a thread that was starting one when the signal came
    assert late.wait(timeout=5) == -signal.SIGKILL
    children.discard(first)
    children.discard(late)
    assert len(children) == 0


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_raise_terminated_and_stop_the_children(signum: int, code: int) -> None:
    children = Children()
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    children.add(child)
    before = signal.getsignal(signum)
    with pytest.raises(Terminated) as info, signals_stop_children(children):
        os.kill(os.getpid(), signum)
        time.sleep(5)
    assert (info.value.exit_code, str(info.value)) == (code, signal.Signals(signum).name)
    assert child.wait(timeout=5) == -signal.SIGKILL
    assert signal.getsignal(signum) == before and not children.closed


def test_die_with_parent_refuses_a_parent_already_gone() -> None:
    child = subprocess.Popen(["sleep", "300"], preexec_fn=die_with_parent(parent=1))
    assert child.wait(timeout=5) == 137


def test_a_group_watch_kills_the_group_when_its_owner_dies(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    owner = subprocess.Popen(
        [sys.executable, "-c", (
            "import subprocess, time\n"
            "from tf2npu.procs import GroupWatch\n"
            "child = subprocess.Popen(['sh', '-c', 'sleep 300 & echo $!; wait'], stdout=subprocess.PIPE, start_new_session=True, text=True)\n"
            "grandchild = child.stdout.readline().strip()\n"
            "watch = GroupWatch(child.pid)\n"
            f"open({str(pid_file)!r}, 'w').write(f'{{child.pid}} {{grandchild}}')\n"
            "time.sleep(300)\n"
        )],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the child never started"
            time.sleep(0.05)
        pids = [int(p) for p in pid_file.read_text().split()]
        assert all(_alive(p) for p in pids)
        owner.kill()
        owner.wait()
        deadline = time.monotonic() + 5
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(p) for p in pids)  # the child and what it started, both
    finally:
        owner.kill()

"""Worker processes: capped, and never left behind when the parent is killed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tf2npu.migrate.workers import die_with_parent, usable_jobs

PARENT = """
import os, sys, time
from pathlib import Path
from tf2npu.migrate import workers
from tf2npu.migrate.walk import Task

def stuck(task, settings):  # a worker busy for long: it must still die with the parent
    Path(task.dst).write_text(str(os.getpid()))
    time.sleep(300)

workers.run_task = stuck
workers.usable_jobs = lambda jobs, n: jobs
folder = sys.argv[1]
workers.run_all([Task(str(i), "", f"{folder}/{i}") for i in range(2)], None, 2, None)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")  # a zombie has exited; only its parent's reaping is left


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_workers_die_when_the_parent_is_killed(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path)], env=env)
    try:
        assert wait_for(lambda: len(list(tmp_path.iterdir())) == 2, 60), "workers did not start"
        time.sleep(0.2)  # both pid files are complete
        pids = [int(p.read_text()) for p in tmp_path.iterdir()]
        assert all(alive(pid) for pid in pids)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert wait_for(lambda: not any(alive(pid) for pid in pids), 20), "workers live on"
    finally:
        parent.kill()
        parent.wait()


def test_die_with_parent_is_available_on_linux():
    if sys.platform.startswith("linux"):
        assert subprocess.run(
            [sys.executable, "-c", "from tf2npu.migrate.workers import die_with_parent as d; "
             "raise SystemExit(0 if d() else 1)"],
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")},
        ).returncode == 0  # fmt: skip
    else:
        assert die_with_parent() is False


def test_usable_jobs_caps_at_tasks():
    assert usable_jobs(4, 3) <= 3
    assert usable_jobs(1, 100) == 1

"""Child processes that never outlive their command (TF-free).

``verify`` and ``bisect`` trials and ``run --ranks`` ranks run in their own sessions, so a
timeout can stop each with its whole process group. That also takes them out of the
terminal's reach: Ctrl-C, SIGTERM or SIGKILL of the command no longer reaches them. Three
things put them back in reach:

* :func:`die_with_parent`, the ``preexec_fn`` of every such child: the kernel sends it SIGKILL
  when the command dies, even by SIGKILL (``prctl(PR_SET_PDEATHSIG)``, Linux).
* :class:`Children`, a registry of the running children: :meth:`Children.stop_all` kills each
  one's process group (its grandchildren, a script's ``sleep 300``, included).
* :func:`signals_stop_children`: while a command runs its children, SIGTERM and SIGHUP raise
  :class:`Terminated` (a ``KeyboardInterrupt``, so every ``except KeyboardInterrupt`` cleanup
  runs) and on the way out every registered child is stopped.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "CHILDREN",
    "Children",
    "GroupWatch",
    "Terminated",
    "die_with_parent",
    "signals_stop_children",
]

_PR_SET_PDEATHSIG = 1
try:  # resolved before any fork: the child only calls it
    _PRCTL: Any = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: no parent-death signal
    _PRCTL = None


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived while children ran; ``exit_code`` is ``128 + signal``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = 128 + signum


def die_with_parent(parent: int | None = None) -> Callable[[], None]:
    """A ``preexec_fn`` that makes the child get SIGKILL when this process dies.

    The child checks its parent is still ``parent`` (this process) after the call: a parent
    that died between ``fork`` and ``prctl`` would never send the signal.
    """
    expected = os.getpid() if parent is None else parent

    def preexec() -> None:
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != expected:
            os._exit(137)

    return preexec


_WATCHER = """\
import os, signal, sys
read, group = int(sys.argv[1]), int(sys.argv[2])
try:
    said = os.read(read, 1)
except OSError:
    said = b""
if not said:  # the command died without saying goodbye: its child's group goes too
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
"""


class GroupWatch:
    """A tiny process that kills process group ``pgid`` when this process dies, by any signal
    (SIGKILL included): it waits on a pipe only this process writes to, and the pipe reads
    end-of-file when it dies. The parent-death signal reaches the child only; this reaches
    what the child started in its group (a script's ``sleep 300``). :meth:`release` ends the
    watch without killing (the child ended normally)."""

    def __init__(self, pgid: int) -> None:
        read, self._write = os.pipe()
        os.set_inheritable(self._write, False)
        try:
            self._watcher: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-c", _WATCHER, str(read), str(pgid)],
                pass_fds=(read,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C to our group does not end the watch early
            )
        except OSError:  # no process left: the parent-death signal still covers the child
            self._watcher = None
        finally:
            os.close(read)

    def release(self) -> None:
        """Tell the watcher the child ended normally, and reap it."""
        if self._write < 0:
            return
        with contextlib.suppress(OSError):
            os.write(self._write, b"x")
        os.close(self._write)
        self._write = -1
        if self._watcher is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._watcher.wait(timeout=5)


class Children:
    """The running children that lead their own process group (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, subprocess.Popen[Any]] = {}
        self._watches: dict[int, GroupWatch] = {}
        self.closed = False
        """Set by :meth:`stop_all`: a child added later (a thread that was starting one) is
        killed at once."""

    def add(self, child: subprocess.Popen[Any]) -> None:
        """Register ``child`` (the leader of its own group) and watch its group."""
        watch = GroupWatch(child.pid)
        with self._lock:
            self._live[child.pid] = child
            self._watches[child.pid] = watch
            closed = self.closed
        if closed:
            kill_group(child.pid)

    def discard(self, child: subprocess.Popen[Any]) -> None:
        """Forget ``child`` and kill what is left of its group (its grandchildren)."""
        with self._lock:
            self._live.pop(child.pid, None)
            watch = self._watches.pop(child.pid, None)
        kill_group(child.pid)
        if watch is not None:
            watch.release()

    def stop_all(self) -> int:
        """SIGKILL every registered child's process group, and those added from now on
        (until ``closed`` is reset); how many there were."""
        with self._lock:
            self.closed = True
            live = list(self._live.values())
        for child in live:
            kill_group(child.pid)
        return len(live)

    def __len__(self) -> int:
        with self._lock:
            return len(self._live)


CHILDREN = Children()
"""The children of this process: trials register here."""


def kill_group(pgid: int) -> None:
    """SIGKILL process group ``pgid``, if it still has members."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


@contextlib.contextmanager
def signals_stop_children(children: Children = CHILDREN) -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise :class:`Terminated` in the main thread;
    when the block ends by an exception (Ctrl-C included), every child in ``children`` is
    killed with its group before the exception goes on."""
    main = threading.current_thread() is threading.main_thread()
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        raise Terminated(signum)

    if main:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            previous[signum] = signal.signal(signum, handler)
    try:
        yield
    except BaseException:
        children.stop_all()
        raise
    finally:
        children.closed = False
        for number, old in previous.items():
            signal.signal(number, old)

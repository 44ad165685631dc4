"""Running the tasks of a migration, in this process or in a few worker processes.

Workers are capped at the number of tasks and of usable cores, ignore SIGINT (the parent decides
what an interrupt does) and die with the parent: on Linux they ask the kernel for SIGKILL when
the parent goes (``PR_SET_PDEATHSIG``), so a killed ``tf2npu migrate`` leaves no process behind.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from tf2npu.errors import Tf2NpuError, UsageError
from tf2npu.migrate.model import FileResult
from tf2npu.migrate.tree import Settings, run_task
from tf2npu.migrate.walk import Task

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

_PR_SET_PDEATHSIG = 1
_CHUNK = 8
"""Most tasks per work item: large enough to amortise the round trip, small enough that an
interrupt waits for little work and the progress bar moves."""


class WorkerError(Tf2NpuError):
    """A worker process died (killed, or out of memory): the run stops with a message."""


def usable_jobs(jobs: int, tasks: int) -> int:
    """``jobs`` capped at the number of tasks and of cores this process may use."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(jobs, tasks, cores))


def run_all(
    work: list[Task], settings: Settings, jobs: int, progress: Callable[[str], None] | None
) -> list[FileResult]:
    """Run every task; results in task order."""
    jobs = usable_jobs(jobs, len(work))
    if jobs == 1:
        results = []
        for task in work:
            results.append(run_task(task, settings))
            if progress:
                progress(task.rel)
        return results
    return _run_pool(work, settings, jobs, progress)


def _run_pool(
    work: list[Task], settings: Settings, jobs: int, progress: Callable[[str], None] | None
) -> list[FileResult]:
    # The pool's modules only when there is a pool (the default is one job: 17 ms of imports).
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # Forked workers are children of this process: the parent-death signal and the check of
    # the parent's pid below hold (a fork server would be their parent instead).
    linux = sys.platform.startswith("linux")
    context = multiprocessing.get_context("fork") if linux else None
    pool = ProcessPoolExecutor(jobs, context, initializer=_init_worker,
                               initargs=(os.getpid() if linux else 0,))  # fmt: skip
    size = max(1, min(_CHUNK, len(work) // (jobs * 4)))
    chunks = [work[i : i + size] for i in range(0, len(work), size)]
    try:
        futures = _submit(pool, chunks, settings, jobs)
        results: list[FileResult] = []
        for chunk, future in zip(chunks, futures, strict=True):
            results += future.result()
            if progress:
                for task in chunk:
                    progress(task.rel)
    except BrokenProcessPool:
        pool.shutdown(wait=True, cancel_futures=True)
        raise WorkerError(
            "a worker process stopped unexpectedly (killed, or out of memory); run again "
            "with --jobs 1 to find the file"
        ) from None
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return results


def _submit(
    pool: ProcessPoolExecutor, chunks: list[list[Task]], settings: Settings, jobs: int
) -> list[Future[list[FileResult]]]:
    try:
        return [pool.submit(_run_chunk, chunk, settings) for chunk in chunks]
    except OSError as exc:  # fork failed (e.g. BlockingIOError at a process limit)
        _stop_started(pool)
        raise UsageError(
            f"--jobs {jobs}: cannot start the worker processes ({exc.strerror or exc}); "
            "use a smaller --jobs, or --jobs 1"
        ) from None


def _stop_started(pool: ProcessPoolExecutor) -> None:
    """Kill the workers that did start: the pool does not (they would wait for work forever
    and keep the interpreter from exiting)."""
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        process.kill()
        process.join()
    pool.shutdown(wait=False, cancel_futures=True)


def _run_chunk(chunk: list[Task], settings: Settings) -> list[FileResult]:
    return [run_task(task, settings) for task in chunk]


def _init_worker(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    if parent and os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def die_with_parent() -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; False where not available."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False

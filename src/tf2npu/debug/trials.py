"""Run a script once as a recorded trial, in a fresh subprocess (TF-free).

``tf2npu verify`` and ``tf2npu bisect`` judge a script by running it several times under
different settings. Each :class:`Trial` is one ``python -m tf2npu run --quiet --record`` in a
child process — a fresh TensorFlow, no state carried over from an earlier trial — whose report
folder then holds ``run_summary.json``, ``steps.jsonl`` and ``variables.npz``
(:mod:`tf2npu.debug.records` reads them). The child's stdout and stderr go to ``trial.log`` in
that folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

import tf2npu
from tf2npu.artifacts.run_summary import SUMMARY_FILE, describe_error, read_summary
from tf2npu.procs import CHILDREN, die_with_parent

__all__ = [
    "LOG_FILE",
    "TIMED_OUT",
    "Trial",
    "TrialResult",
    "TrialTimeout",
    "run_trial",
    "trial_command",
]

LOG_FILE = "trial.log"
TIMED_OUT = 124
"""The status of a trial stopped by its timeout (as coreutils ``timeout`` reports it)."""
FIRST_TRIAL_TIMEOUT = 3600.0
"""Seconds the first trial (the reference: the original script) may run with no --timeout."""
TIMEOUT_FACTOR = 4.0
MIN_TIMEOUT = 300.0
"""With no --timeout, later trials may run ``TIMEOUT_FACTOR`` times the reference's time, and
at least this long (start-up costs vary on a loaded machine)."""
_SUMMARY = SUMMARY_FILE
_OUTPUTS = (_SUMMARY, "steps.jsonl", "steps.html", "variables.npz", "record.json")


@dataclass(frozen=True)
class Trial:
    """One run of ``script`` to record: how to run it and where its records go."""

    script: Path
    args: Sequence[str] = ()
    _: KW_ONLY
    report_dir: Path
    """The trial's report folder (created by the run)."""
    npu: bool = True
    """False runs every session stock (``--no-npu``)."""
    options: Sequence[str] = ()
    """``KEY=VALUE`` items, each passed as ``--option KEY=VALUE``."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set for the child on top of this process's environment."""
    flags: Sequence[str] = ()
    """More ``tf2npu run`` flags, before SCRIPT (e.g. ``--deterministic``)."""
    cwd: Path | None = None
    """The child's working directory (default: this process's)."""

    @property
    def deterministic(self) -> bool:
        """Whether the trial asks for deterministic execution (flag or option)."""
        return "--deterministic" in self.flags or "deterministic=1" in self.options

    def with_report_dir(self, report_dir: Path) -> Trial:
        """The same trial recording into ``report_dir``."""
        return dataclasses.replace(self, report_dir=report_dir)


@dataclass(frozen=True)
class TrialResult:
    """What a trial left: its exit status, report folder, run summary and duration."""

    status: int
    """The run's exit status (the script's); :data:`TIMED_OUT` when the timeout stopped it."""
    report_dir: Path
    summary: dict[str, Any]
    """``run_summary.json`` as written by the run ({} when it wrote none)."""
    seconds: float
    """Wall time of the child process, start-up included."""
    log: Path | None = None
    """The child's stdout and stderr."""

    @property
    def ok(self) -> bool:
        """Whether the script exited 0."""
        return self.status == 0

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the child's output (for an error message)."""
        if self.log is None or not self.log.is_file():
            return ""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def failure(self) -> str:
        """What the run ended with, for a one-line report: the run summary's ``error``
        section; with no summary (the child died first, or failed before its script ran),
        said so, with the last ``tf2npu run: error:`` line of the log, else the exception
        line of its last traceback, else its last line."""
        if self.status == TIMED_OUT:
            return "stopped by the timeout"
        if self.summary.get("error"):
            return describe_error(self.summary["error"])
        lines = self.log_tail(400).splitlines()
        said = _said(lines)
        if self.summary:
            return said
        return f"no run summary (the child exited {self.status}); its log: {said}"


def _said(lines: list[str]) -> str:
    for line in reversed(lines):
        if line.startswith("tf2npu run: error:"):
            return line.removeprefix("tf2npu run: error: ")
    start = max((i for i, line in enumerate(lines) if line.startswith("Traceback")), default=-1)
    if start >= 0:
        tail = [line for line in lines[start + 1 :] if line and not line[0].isspace()]
        if tail:
            return tail[0]
    return lines[-1] if lines else "(no output)"


@dataclass
class TrialTimeout:
    """The per-trial timeout of ``verify`` and ``bisect``: the user's ``--timeout``, else
    derived from the reference run's own time, so a hanging script cannot hang them.

    >>> t = TrialTimeout()
    >>> t.seconds(), t.note(0, 100.0), t.seconds()
    (3600.0, None, 400.0)
    """

    given: float | None = None
    """``--timeout S``; None: derived."""
    reference: float | None = None
    """Seconds of the first trial that succeeded (the reference), once one has."""

    def seconds(self) -> float:
        if self.given is not None:
            return self.given
        if self.reference is None:
            return FIRST_TRIAL_TIMEOUT
        return max(MIN_TIMEOUT, TIMEOUT_FACTOR * self.reference)

    def note(self, status: int, seconds: float) -> None:
        """Take a finished trial's time as the reference, if it is the first that succeeded."""
        if self.reference is None and status == 0 and math.isfinite(seconds) and seconds >= 0:
            self.reference = seconds

    def describe(self, flag: str = "--timeout S") -> str:
        """The policy in one line, with how to change it (the commands print it first)."""
        if self.given is not None:
            return f"per-trial timeout {self.given:g} s ({flag})"
        return (
            f"per-trial timeout: {FIRST_TRIAL_TIMEOUT:g} s for the reference run, then "
            f"{TIMEOUT_FACTOR:g}x its time (at least {MIN_TIMEOUT:g} s); {flag} sets one"
        )


def trial_command(trial: Trial) -> list[str]:
    """The child's command line: ``python -m tf2npu run --quiet --record --report-dir D ...``."""
    command = [sys.executable, "-m", "tf2npu", "run", "--quiet", "--record"]
    command += ["--report-dir", str(trial.report_dir)]
    if not trial.npu:
        command.append("--no-npu")
    for item in trial.options:
        command += ["--option", item]
    command += [*trial.flags, "--", str(trial.script), *trial.args]
    return command


def script_package_root(script: Path) -> Path | None:
    """The folder above the outermost package holding ``script``; None outside a package.

    ``albert/run_pretraining.py`` with ``albert/__init__.py`` gives ``albert``'s parent: the
    folder a user puts on ``PYTHONPATH`` so that the script's ``from albert import modeling``
    imports its own copy.
    """
    folder = script.resolve().parent
    if not (folder / "__init__.py").is_file():
        return None
    while (folder.parent / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder.parent


def trial_environment(trial: Trial, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: ``base`` (this process's) + the trial's own variables.

    tf2npu is made importable in the child whatever the caller's ``sys.path``; a script inside
    a package gets its :func:`script_package_root` first on ``PYTHONPATH``; TensorFlow's
    C++ INFO and warning lines are hidden unless the caller chose a level; a deterministic
    trial gets what ``--deterministic`` sets before TensorFlow is imported
    (:data:`tf2npu.runtime.determinism.ENVIRONMENT`: ``TF_ENABLE_ONEDNN_OPTS=0``, since oneDNN
    kernels are not run-to-run reproducible, and ``TF_NUM_INTEROP_THREADS=1``, a fixed
    schedule).
    """
    env = dict(os.environ if base is None else base)
    package_root = str(Path(tf2npu.__file__).resolve().parents[1])
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    script_root = script_package_root(trial.script)
    if script_root is not None:
        # The script's own copy of its package comes first: verify runs an original and its
        # migrated copy of one package (`from albert import modeling`) under one PYTHONPATH.
        paths = [str(script_root), *(p for p in paths if p != str(script_root))]
    if package_root not in paths:
        paths = [package_root, *paths]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if trial.deterministic:
        from tf2npu.runtime.determinism import ENVIRONMENT

        env.update(ENVIRONMENT)
    env.update(trial.env)
    return env


def run_trial(trial: Trial, timeout: float | None = None) -> TrialResult:
    """Run ``trial`` in a child process and wait for it (at most ``timeout`` seconds).

    A child still running at the timeout is stopped with its whole process group and gets the
    status :data:`TIMED_OUT`. The report folder is created first, so ``trial.log`` always
    exists afterwards; records an earlier trial left there are removed.
    """
    report_dir = Path(trial.report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    for name in _OUTPUTS:  # an earlier trial's records must not pass for this one's
        (report_dir / name).unlink(missing_ok=True)
    log = report_dir / LOG_FILE
    start = time.perf_counter()
    with log.open("wb") as output:
        child = subprocess.Popen(
            trial_command(trial),
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=trial_environment(trial),
            cwd=trial.cwd,
            start_new_session=True,  # its own process group: a timeout stops all of it
            preexec_fn=die_with_parent(),  # and it dies with us, even by SIGKILL
        )
        CHILDREN.add(child)
        try:
            status = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(child)
            status = TIMED_OUT
        except BaseException:  # Ctrl-C: the child is in its own session, stop it too
            _stop(child)
            raise
        finally:  # what the script started and left running (a `sleep 300`) goes too
            CHILDREN.discard(child)
    seconds = time.perf_counter() - start
    return TrialResult(status, report_dir, read_summary(report_dir), seconds, log)


def _stop(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended on its own meanwhile
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()

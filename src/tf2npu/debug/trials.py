"""Run a script once as a recorded trial, in a fresh subprocess (TF-free).

``tf2npu verify`` and ``tf2npu bisect`` judge a script by running it several times under
different settings. Each :class:`Trial` is a :class:`~tf2npu.runtime.job.RunSpec` (recorded,
quiet) run in a child process — a fresh TensorFlow, no state carried over from an earlier trial:
:func:`run_trial` writes the spec into the trial's report folder as ``run_spec.json``
(:mod:`tf2npu.artifacts.run_spec`) and starts :func:`tf2npu.runtime.job.child_command` on it,
the one child command line of every tool. The folder then holds ``run_summary.json``,
``steps.jsonl`` and ``variables.npz`` (:mod:`tf2npu.debug.records` reads them); the child's
stdout and stderr go to ``trial.log`` there. A trial is re-run by hand with the same command::

    python -m tf2npu.runtime.job TRIAL_FOLDER/run_spec.json

How a trial failed comes back as data: the ``error`` section of its run summary, or, when the
spec never reached the script (an option value the run rejects), the ``start_error.json`` the
child wrote (:data:`tf2npu.artifacts.run_spec.START_ERROR_FILE`); the log is only shown.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tf2npu
from tf2npu.artifacts import run_spec
from tf2npu.artifacts.run_summary import SUMMARY_FILE, RunSummary, read_summary
from tf2npu.procs import CHILDREN, die_with_parent

if TYPE_CHECKING:
    from tf2npu.runtime.job import RunSpec

__all__ = [
    "LOG_FILE",
    "TIMED_OUT",
    "Trial",
    "TrialResult",
    "TrialTimeout",
    "run_trial",
    "trial_spec",
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
_OUTPUTS = (
    _SUMMARY, "steps.jsonl", "steps.html", "variables.npz", "record.json",
    run_spec.START_ERROR_FILE,
)  # fmt: skip


@dataclass(frozen=True)
class Trial:
    """One run to record in a child process: the run itself and how the child starts."""

    spec: RunSpec
    """The run (:func:`trial_spec` makes a recorded, quiet one); its ``report_dir`` is the
    trial's folder."""
    _: KW_ONLY
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set for the child on top of this process's environment (the process's, not
    the run's settings: those are in ``spec``)."""
    cwd: Path | None = None
    """The child's working directory (default: this process's)."""

    @property
    def report_dir(self) -> Path:
        return self.spec.report_dir

    @property
    def deterministic(self) -> bool:
        """Whether the trial asks for deterministic execution (flag or option)."""
        from tf2npu.runtime.determinism import NPU_OPTION

        return self.spec.deterministic or NPU_OPTION in self.spec.options

    def with_report_dir(self, report_dir: Path) -> Trial:
        """The same trial recording into ``report_dir``."""
        spec = dataclasses.replace(self.spec, report_dir=Path(report_dir).absolute())
        return dataclasses.replace(self, spec=spec)


def trial_spec(
    script: Path,
    args: Sequence[str] = (),
    *,
    report_dir: Path,
    npu: bool = True,
    options: Sequence[str] = (),
    deterministic: bool = False,
    **fields: Any,
) -> RunSpec:
    """The spec of a recorded, quiet run of ``script args`` into ``report_dir``, as
    ``tf2npu run --quiet --record [--no-npu] [--deterministic] --option ...`` makes it.

    ``fields`` are the spec's other fields (``max_steps``, ``dropout_off``, ``engine``...).
    Paths are made absolute here, so the child finds them whatever its working directory.
    """
    from tf2npu import runtime
    from tf2npu.runtime.determinism import NPU_OPTION
    from tf2npu.runtime.job import RunSpec

    return RunSpec(
        script=Path(script).absolute(),
        script_args=tuple(args),
        report_dir=Path(report_dir).absolute(),
        options=(*options, *((NPU_OPTION,) if npu and deterministic else ())),
        npu=npu,
        execution=fields.pop("execution", runtime.DEFAULT_EXECUTION),
        deterministic=deterministic,
        record=True,
        quiet=True,
        **fields,
    )


@dataclass(frozen=True)
class TrialResult:
    """What a trial left: its exit status, report folder, run summary and duration."""

    status: int
    """The run's exit status (the script's); :data:`TIMED_OUT` when the timeout stopped it."""
    report_dir: Path
    summary: RunSummary | None
    """``run_summary.json`` as written by the run (None when it wrote none)."""
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
        section, else the error the child wrote when the spec never reached the script
        (``start_error.json``); with neither (the child died first), its exit status and the
        last line of its log."""
        if self.status == TIMED_OUT:
            return "stopped by the timeout"
        if self.summary is not None and self.summary.error is not None:
            return self.summary.error.describe()
        start = run_spec.read_start_error(self.report_dir)
        if start is not None:
            return start
        if self.summary is not None:
            return f"the run exited {self.status} with no error recorded"
        lines = self.log_tail(1).splitlines()
        died = (
            f"was killed by signal {-self.status}" if self.status < 0 else f"exited {self.status}"
        )
        last = f"; the last line of its log: {lines[-1]}" if lines else ""
        return f"no run summary (the child {died}){last}"


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
    script_root = script_package_root(trial.spec.script)
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
    status :data:`TIMED_OUT`. The report folder is created first, so ``trial.log`` and
    ``run_spec.json`` always exist afterwards; records an earlier trial left there are removed.
    """
    from tf2npu.runtime.job import child_command

    report_dir = trial.report_dir
    report_dir.mkdir(parents=True, exist_ok=True)
    for name in _OUTPUTS:  # an earlier trial's records must not pass for this one's
        (report_dir / name).unlink(missing_ok=True)
    spec_file = report_dir / run_spec.SPEC_FILE
    run_spec.write(spec_file, trial.spec)
    log = report_dir / LOG_FILE
    start = time.perf_counter()
    with log.open("wb") as output:
        child = subprocess.Popen(
            child_command(spec_file),
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

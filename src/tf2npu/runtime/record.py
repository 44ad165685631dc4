"""Run records: every fetched float scalar per run, and the trained variables at the end.

``tf2npu run --record`` (or ``TF2NPU_RECORD=1``) adds a :class:`RunRecorder` to the run
instruments, so NPU and stock sessions — ``Session.run``, ``MonitoredTrainingSession``,
Estimator, Keras' callables — all reach it. It writes into the report folder:

* ``steps.jsonl``: one line per run that fetched at least one float scalar (the loss a script
  prints, a learning rate, an accuracy): the run's index in the process, its signature number,
  whether it trained, the training steps so far, NPU or stock, the scalars (``null`` when not
  finite) and the names that were NaN/Inf;
* ``variables.npz``: the trainable variables of the last session that closed holding any (or
  that was still open at exit), read just before it closed;
* ``steps.html``: those scalars drawn per training step (:mod:`tf2npu.runtime.record_page`),
  for whoever opens the folder;
* ``record.json``: what else a comparison of two runs needs to know: the dropout ops the
  sessions' graphs hold, and where a step limit stopped the script.

Scalars are the values the run fetched anyway; reading the variables at close is one extra run
of the variables' read ops. :mod:`tf2npu.debug.records` reads the files back (TF-free).

``TF2NPU_MAX_STEPS=N`` (:class:`StepLimit`) ends the script with ``sys.exit(0)`` right after its
Nth training step, so a verify trial trains for N steps whatever the script's own settings.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tf2npu.atomic import write_text_atomic
from tf2npu.config.env import MAX_STEPS_ENV, RECORD_ENV
from tf2npu.errors import UsageError
from tf2npu.runtime import record_page
from tf2npu.runtime.instruments import RunHook, RunInstrument, RunSignature, SessionInfo

if TYPE_CHECKING:
    from tf2npu.runtime.context import RuntimeContext

__all__ = [
    "MAX_STEPS_ENV",
    "RECORD_ENV",
    "RECORD_INFO_FILE",
    "RunRecorder",
    "StepLimit",
    "dropout_ops",
    "max_steps_from_env",
    "record_from_env",
]

_LOG = logging.getLogger("tf2npu.runtime")
STEPS_FILE = "steps.jsonl"
VARIABLES_FILE = "variables.npz"
RECORD_INFO_FILE = "record.json"
_DROPOUT_TYPES = ("DropOutGenMask", "DropOutDoMask")
"""Type prefixes of the NPU dropout ops (tf2npu's CPU kernels carry a dtype suffix)."""
_MAX_NAMED = 20  # dropout op names kept in record.json


def record_from_env(env: Mapping[str, str]) -> bool:
    """Whether ``TF2NPU_RECORD`` asks for a record (``1``; unset, empty or ``0``: no).

    Raises:
        UsageError: any other value.
    """
    value = env.get(RECORD_ENV, "").strip()
    if value not in ("", "0", "1"):
        raise UsageError(f"{RECORD_ENV}={value!r}: use 1 to record the run, 0 or unset not to")
    return value == "1"


def max_steps_from_env(env: Mapping[str, str]) -> int | None:
    """The step limit ``TF2NPU_MAX_STEPS`` sets (None when unset or empty).

    Raises:
        UsageError: not a whole number >= 1.
    """
    value = env.get(MAX_STEPS_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise UsageError(
            f"{MAX_STEPS_ENV}={value!r}: give the number of training steps to run, e.g. 20"
        )
    return int(value)


class RunRecorder(RunInstrument):
    """Writes the run records into ``report_dir`` (see the module docstring)."""

    def __init__(self, report_dir: Path, ctx: RuntimeContext) -> None:
        self._dir = report_dir
        self._ctx = ctx
        self._lock = threading.Lock()
        self._runs = 0
        self._lines = io.StringIO()
        self._dropout: dict[str, None] = {}
        self._scanned: dict[int, int] = {}
        self._variables_from: int | None = None
        self._captured: set[int] = set()
        self._unwritten: OSError | None = None
        """The first write error at a session's close, raised by :meth:`close`."""
        self.stopped_at: int | None = None
        """The step a :class:`StepLimit` stopped the script at (None: it was not stopped)."""

    # -- steps -----------------------------------------------------------------------------

    def plan(self, run: RunSignature) -> RunHook:
        if run.step:
            self._scan_dropout(run.session.graph)
        return _RecordHook(self, run)

    def next_run(self) -> int:
        with self._lock:
            self._runs += 1
            return self._runs - 1

    def write_step(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(", ", ": ")) + "\n"
        with self._lock:
            self._lines.write(line)

    def _scan_dropout(self, graph: Any) -> None:
        """Remember the graph's dropout ops (once per graph version)."""
        version = graph.version
        if self._scanned.get(id(graph)) == version:
            return
        self._scanned[id(graph)] = version
        for name in dropout_ops(graph):
            self._dropout.setdefault(name)

    # -- variables ---------------------------------------------------------------------------

    def on_session(self, session: SessionInfo) -> None:
        self._scan_dropout(session.graph)

    def on_session_close(self, session: SessionInfo) -> None:
        """Read the trainable variables of ``session`` just before it closes."""
        try:
            self.capture(session)
        except OSError as exc:  # a full disk: said when the run ends (close), not lost
            self._unwritten = self._unwritten or exc
        except Exception as exc:  # a failed read never stops the script's close
            _LOG.warning("tf2npu: variables not recorded at session close: %s", exc)

    def capture(self, session: SessionInfo) -> None:
        """Read and write the trainable variables of the open ``session`` (once per session)."""
        if session.key in self._captured:
            return
        self._captured.add(session.key)
        values = read_trainable(session)
        if values:
            _write_npz(self._dir / VARIABLES_FILE, values)
            self._variables_from = session.key

    def close(self) -> None:
        """Flush: the open sessions' variables, then ``steps.jsonl``, ``steps.html`` and
        ``record.json``."""
        for session in self._ctx.open_sessions():
            self.capture(session)
        self._dir.mkdir(parents=True, exist_ok=True)
        with self._lock:
            text = self._lines.getvalue()
        write_text_atomic(self._dir / STEPS_FILE, text)
        del text  # getvalue's copy of every line: freed before the page is drawn
        self._write_page()
        info = {
            "dropout_ops": len(self._dropout),
            "dropout_examples": list(self._dropout)[:_MAX_NAMED],
            "stopped_at_step": self.stopped_at,
            "variables_session": self._variables_from,
        }
        write_text_atomic(self._dir / RECORD_INFO_FILE, json.dumps(info, indent=2) + "\n")
        if self._unwritten is not None:
            raise self._unwritten

    def summary_part(self) -> dict[str, Any]:
        return {"record": self.summary()}

    def summary(self) -> dict[str, Any]:
        """The run summary's ``record``: where the records and their page are (after close)."""
        return {
            "steps": str(self._dir / STEPS_FILE),
            "page": str(self._dir / record_page.PAGE_FILE),
            "variables": str(self._dir / VARIABLES_FILE) if self._variables_from else None,
            "stopped_at_step": self.stopped_at,
        }

    def _write_page(self) -> None:
        """``steps.html``, from ``steps.jsonl`` read back line by line: no second copy of a
        long run's records in memory."""
        title = f"tf2npu run: recorded steps ({self._dir.name})"
        with (self._dir / STEPS_FILE).open(encoding="utf-8") as stream:
            records = (json.loads(line) for line in stream if line.strip())
            page = record_page.render_page(records, title)
        write_text_atomic(self._dir / record_page.PAGE_FILE, page)


class _RecordHook(RunHook):
    def __init__(self, recorder: RunRecorder, run: RunSignature) -> None:
        self._recorder = recorder
        self._names = tuple(t.name for t in run.fetches)
        self._train = run.step
        self._signature = run.number
        self._npu = run.session.npu
        self._stats = recorder._ctx

    def without_extras(self) -> RunHook:
        return self

    def after_run(self, values: Sequence[Any], extras: Sequence[Any]) -> None:
        index = self._recorder.next_run()
        scalars: dict[str, float | None] = {}
        nonfinite = []
        for name, value in zip(self._names, values, strict=False):
            number = _float_scalar(value)
            if number is None:
                continue
            if math.isfinite(number):
                scalars[name] = number
            else:
                scalars[name] = None
                nonfinite.append(name)
        if not scalars:
            return
        record = {
            "run": index,
            "signature": self._signature,
            "train": self._train,
            "step": self._stats.stats.steps,
            "npu": self._npu,
            "scalars": scalars,
            "nonfinite": nonfinite,
        }
        self._recorder.write_step(record)


def _float_scalar(value: Any) -> float | None:
    """``value`` as a float when it is a scalar float (NumPy or Python), else None."""
    if isinstance(value, float | np.floating):
        return float(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind == "f":
        return float(value)
    return None


def dropout_ops(graph: Any) -> list[str]:
    """The names of the dropout ops in ``graph``: NPU dropout ops, and random ops that
    ``tf.nn.dropout`` / Keras ``Dropout`` create (a random op under a ``dropout`` scope)."""
    found = []
    for op in graph.get_operations():
        random = "Random" in op.type and "dropout" in op.name.lower()
        if random or op.type.startswith(_DROPOUT_TYPES):
            found.append(op.name)
    return found


def read_trainable(session: SessionInfo) -> dict[str, np.ndarray[Any, Any]]:
    """The trainable variables of ``session``'s graph, name without ``:0`` -> value ({} when it
    has none, or when they cannot be read: not initialised yet, say). The read is no run of
    the script (:meth:`SessionInfo.read`)."""
    from tensorflow.python.framework import errors, ops

    variables = session.graph.get_collection(ops.GraphKeys.TRAINABLE_VARIABLES)
    named = {}
    for variable in variables:
        tensor = variable._as_graph_element()
        if tensor is not None:
            named[variable.name.removesuffix(":0")] = tensor
    if not named:
        return {}
    try:
        values = session.read(list(named.values()))
    except (errors.OpError, ValueError, TypeError, RuntimeError):
        return {}
    return {name: np.asarray(value) for name, value in zip(named, values, strict=True)}


def _write_npz(path: Path, values: Mapping[str, np.ndarray[Any, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("wb") as stream:
            np.savez(stream, **values)
        os.replace(partial, path)
    except OSError as exc:  # a disk full: no .partial left behind, the file named
        partial.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


class StepLimit(RunInstrument):
    """Ends the script with ``sys.exit(0)`` after its ``limit``-th training step
    (``TF2NPU_MAX_STEPS``); the recorder, if any, notes where."""

    def __init__(self, limit: int, ctx: RuntimeContext, recorder: RunRecorder | None) -> None:
        self.limit = limit
        self._ctx = ctx
        self._recorder = recorder

    def plan(self, run: RunSignature) -> RunHook | None:
        return _LimitHook(self) if run.step else None

    def check(self) -> None:
        steps = self._ctx.stats.steps
        if steps >= self.limit:
            if self._recorder is not None:
                self._recorder.stopped_at = steps
            raise SystemExit(0)


class _LimitHook(RunHook):
    def __init__(self, limit: StepLimit) -> None:
        self._limit = limit

    def without_extras(self) -> RunHook:
        return self

    def after_run(self, values: Sequence[Any], extras: Sequence[Any]) -> None:
        self._limit.check()

"""The ``deterministic`` option: run-to-run reproducible CPU execution, or a clear "no".

On the device, ``deterministic=1`` selects deterministic kernels. Here the kernels are
TensorFlow's, and two things make a CPU run differ from the next: oneDNN's kernels (their
reductions depend on thread timing) and ops without a deterministic CPU implementation. So a
session with ``deterministic=1`` (or any session, after ``tf2npu run --deterministic``) turns on
TensorFlow's op determinism (``tf.config.experimental.enable_op_determinism``) as it starts, and
``tf2npu run --deterministic`` also sets ``TF_ENABLE_ONEDNN_OPTS=0`` before TensorFlow is
imported. A third cause is the schedule: with several inter-op threads, ops that nothing orders
run in whichever order the threads reach them, and a graph that reads and assigns a variable
without ordering the two (a race, :mod:`tf2npu.runtime.races`) gives a different value from
run to run. So every session made while determinism is asked runs its ops in the thread that
calls ``run`` (``inter_op_parallelism_threads=-1``): one inter-op thread is not enough, since
the calling thread runs ops beside it (measured: a seeded WGAN_GP's two original runs differed by
3.9e-4 of the variables with one inter-op thread, and repeat exactly in the caller's thread).
``--deterministic`` also sets ``TF_NUM_INTEROP_THREADS=1`` for TensorFlow's global pool (a
multi-rank job's sessions run on their server's); the run summary says
``schedule: the caller's thread``. Two cases cannot be fixed once the script runs,
and are said once, as a warning and in the run summary, rather than claimed away:

* oneDNN was on when TensorFlow was imported (the environment variable is read only then);
* the session's graph has no random seed: its initial values and dropout masks differ from run
  to run whatever the kernels, and TensorFlow's op determinism would make every unseeded random
  op an error, so it is left off;
* the graph has a seed, but a random op was made before it was set (its ``seed`` and ``seed2``
  are 0): op determinism would stop the run at that op, so it is left off too, naming the op.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from tf2npu.runtime.instruments import RunInstrument, SessionInfo

__all__ = [
    "CLI_FLAG",
    "ENVIRONMENT",
    "NPU_OPTION",
    "SCHEDULE",
    "Determinism",
    "onednn_enabled",
    "unseeded_random_ops",
]

_LOG = logging.getLogger("tf2npu.runtime")
CLI_FLAG = "--deterministic"
NPU_OPTION = "deterministic=1"
"""The option ``--deterministic`` adds to an NPU run's options (the sessions' own setting)."""
ONEDNN_FIX = (
    "set TF_ENABLE_ONEDNN_OPTS=0 before TensorFlow is imported, e.g. tf2npu run --deterministic"
)
ENVIRONMENT = {"TF_ENABLE_ONEDNN_OPTS": "0", "TF_NUM_INTEROP_THREADS": "1"}
"""What ``--deterministic`` sets before TensorFlow is imported (both are read only then)."""
SCHEDULE = "the caller's thread"
"""The run summary's ``schedule`` of a deterministic run (see the module docstring)."""
SEED_FIX = "set a graph-level seed, e.g. tf.set_random_seed(0) or RunConfig(tf_random_seed=0)"


def unseeded_random_ops(graph: Any) -> list[tuple[str, str]]:
    """The (name, type) of every op in ``graph`` whose ``seed`` and ``seed2`` are both 0.

    A random op takes its seeds when it is made: one made before ``tf.set_random_seed`` (legal
    in TF 1.x, the seed just does not reach it) keeps 0 and 0 although the graph has a seed
    now, and TensorFlow's op determinism then stops the run at it ("When determinism is
    enabled, random ops must have a seed specified").
    """
    found = []
    for op in graph.get_operations():
        attr = op.node_def.attr
        if "seed" in attr and "seed2" in attr and attr["seed"].i == 0 and attr["seed2"].i == 0:
            found.append((op.name, op.type))
    return found


def _unseeded_text(unseeded: list[tuple[str, str]]) -> str:
    name, kind = unseeded[0]
    if len(unseeded) > 1:
        subject = f"the random op '{name}' ({kind}) and {len(unseeded) - 1} more have no seed"
    else:
        subject = f"the random op '{name}' ({kind}) has no seed"
    return (
        f"{subject} although the graph has one (made before tf.set_random_seed): their draws "
        "differ from run to run, and op determinism, which would stop the run at them, stays "
        "off; set the graph-level seed before the model is built, e.g. at the top of the "
        "function that builds it"
    )


def onednn_enabled() -> bool:
    """Whether TensorFlow's oneDNN kernels are on in this process (fixed at its import)."""
    from tensorflow.python.util import _pywrap_util_port

    return bool(_pywrap_util_port.IsMklEnabled())


@dataclass
class Determinism(RunInstrument):
    """Honours ``deterministic``: see the module docstring.

    ``requested_by`` is ``--deterministic`` when the whole run asked for it, so stock sessions
    (``--no-npu``) get it too; otherwise an NPU session's ``deterministic=1`` asks.
    """

    requested_by: str | None = None
    op_determinism: bool = False
    """Whether TensorFlow's op determinism was turned on."""
    problems: list[str] = field(default_factory=list)
    """Why the run is not reproducible (said once each)."""
    sessions_scheduled: int = 0
    """Sessions given the fixed schedule (:meth:`session_config`)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def on_session(self, session: SessionInfo) -> None:
        asked = self.requested_by
        if asked is None and session.options is not None and session.options.deterministic == 1:
            asked = "deterministic=1"
        if asked is None:
            return
        with self._lock:
            self.requested_by = self.requested_by or asked
            self._apply(session.graph)

    def session_config(self, config: Any, target: str = "") -> Any:
        """The ``ConfigProto`` a session made now runs with: ``config`` (not changed) when
        nothing asks for determinism, else a copy that runs every op in the thread that calls
        ``run`` (a negative ``inter_op_parallelism_threads``; TF honours it only on the global
        pool, so no per-session or named pool). A session on a server (``target``, a multi-rank
        job) cannot choose ("Distributed session does not support session thread pool
        options"): it runs on its server's pool, which ``TF_NUM_INTEROP_THREADS=1`` gives one
        thread."""
        if self.requested_by is None:
            return config
        from tensorflow.core.protobuf import config_pb2

        fixed = config_pb2.ConfigProto()
        if config is not None:
            fixed.CopyFrom(config)
        fixed.inter_op_parallelism_threads = 1 if target else -1
        fixed.use_per_session_threads = False
        del fixed.session_inter_op_thread_pool[:]  # a named pool would win over the above
        with self._lock:
            self.sessions_scheduled += 1
        return fixed

    def _apply(self, graph: Any) -> None:
        if onednn_enabled():
            self._problem(f"oneDNN kernels were on when TensorFlow was imported; {ONEDNN_FIX}")
        if graph.seed is None:
            self._problem(f"the graph has no random seed, so op determinism stays off; {SEED_FIX}")
            return
        unseeded = unseeded_random_ops(graph)
        if unseeded:
            self._problem(_unseeded_text(unseeded))
            return
        if not self.op_determinism:
            from tensorflow.python.framework import config

            config.enable_op_determinism()
            self.op_determinism = True

    def _problem(self, text: str) -> None:
        if text in self.problems:
            return
        self.problems.append(text)
        _LOG.warning("tf2npu: %s asked for reproducible runs, but %s", self.requested_by, text)

    def summary_part(self) -> dict[str, Any]:
        return {"deterministic": self.summary()}

    def summary(self) -> dict[str, Any] | None:
        """The run summary's ``deterministic``: None when nothing asked for it."""
        if self.requested_by is None:
            return None
        return {
            "requested_by": self.requested_by,
            "reproducible": self.op_determinism and not self.problems,
            "op_determinism": self.op_determinism,
            "schedule": SCHEDULE if self.sessions_scheduled else None,
            "problems": list(self.problems),
        }

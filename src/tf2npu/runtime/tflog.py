"""TensorFlow's own log lines during ``tf2npu run``: out of the way unless ``--verbose``.

A 30-step Estimator script that turns on INFO logging (``tf.logging.set_verbosity(INFO)``, as
most Estimator scripts do) printed 390 stderr lines here (649 in the walk that found it): the
run config with its session config dumped as protobuf text, ``loss = ..., step = ...`` and
``global_step/sec`` every step, and deprecation notices for calls inside TensorFlow and tf2npu
itself. Unless ``--verbose``:

* ``TF_CPP_MIN_LOG_LEVEL`` defaults to 1 (TF's C++ INFO lines at import: oneDNN, CPU
  features), set before TensorFlow is imported; a value the user set is kept;
* records of the ``tensorflow`` logger that library code (TensorFlow, the Estimator, Keras,
  tf2npu and its compat packages) logs below WARNING are dropped, and so are deprecation
  notices about calls made by library code. The script's own ``tf.logging.info(...)`` lines,
  deprecation notices pointing at the script, and every warning and error stay.

The run summary says what ran (sessions, steps, loss scaling), so nothing is lost.
"""

from __future__ import annotations

import logging
import os
import sysconfig
from pathlib import Path

__all__ = ["TF_LOGGER", "LibraryNoise", "quiet_tensorflow"]

TF_LOGGER = "tensorflow"
CPP_LEVEL_ENV = "TF_CPP_MIN_LOG_LEVEL"
_DEPRECATION = "From %s"
"""How TensorFlow's deprecation notices start; their first argument is the caller's place."""


def _library_roots() -> tuple[str, ...]:
    roots = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    roots.add(str(Path(__file__).resolve().parents[2]))  # src/: tf2npu, npu_bridge, hccl, ...
    return tuple(sorted(os.path.join(r, "") for r in roots))


class LibraryNoise(logging.Filter):
    """Drops INFO/DEBUG records and deprecation notices that library code logs."""

    def __init__(self, roots: tuple[str, ...] | None = None) -> None:
        super().__init__()
        self.roots = _library_roots() if roots is None else roots

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        if isinstance(record.msg, str) and record.msg.startswith(_DEPRECATION) and record.args:
            where = record.args[0] if isinstance(record.args, tuple) else ""
            return not self._is_library(str(where))
        return record.levelno >= logging.WARNING or not self._is_library(record.pathname)

    def _is_library(self, path: str) -> bool:
        return os.path.abspath(path).startswith(self.roots)


def quiet_tensorflow(*, verbose: bool) -> None:
    """Keep TensorFlow's noise out of the run's stderr, unless ``verbose`` (call before the
    script imports TensorFlow; the filter sits on the logger TensorFlow will log to)."""
    if verbose:
        return
    os.environ.setdefault(CPP_LEVEL_ENV, "1")
    logger = logging.getLogger(TF_LOGGER)
    if not any(isinstance(f, LibraryNoise) for f in logger.filters):
        logger.addFilter(LibraryNoise())

"""Native TensorFlow kernels of the runtime, built by ``make venv`` (``make half-round``).

``half_round.so`` holds ``Tf2npuHalfRound`` (``half_round.cc``): a float32 tensor rounded to
float16 precision, float32 back, in one pass over memory, bit for bit the ``Cast`` pair
``Cast(Cast(x, float16), float32)`` that lowering otherwise emits for every float16 tensor a
float32 reader reads (two passes and a float16 buffer; on the CNN workloads most of what the
default precision mode adds, ``docs/benchmarks.md``).

The graph engine never imports TensorFlow's op machinery nor this module: the runtime calls
:func:`half_round_available` before each compile, which loads the library into TensorFlow once
(``tf.load_op_library``, so the op exists when the lowered ``GraphDef`` is imported) and
passes the answer down as ``run_engine(half_round=...)``. When the library was not built
(no g++, a failed build) or does not load, the answer is False, lowering emits the ``Cast``
pairs (the same bits, slower) and one note is logged.

``TF2NPU_HALF_ROUND=0`` turns the op off without rebuilding (a before/after in one tree).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from tf2npu.config.env import HALF_ROUND_ENV

__all__ = ["HALF_ROUND_ENV", "HALF_ROUND_LIBRARY", "half_round_available"]

#: The built library (git-ignored; ``make half-round`` writes it).
HALF_ROUND_LIBRARY = Path(__file__).with_name("half_round.so")

_LOG = logging.getLogger("tf2npu.runtime")
_LOCK = threading.Lock()
_loaded: bool | None = None


def half_round_available() -> bool:
    """Whether ``Tf2npuHalfRound`` (``half_via_fp32.HALF_ROUND_OP``) is registered in this
    process's TensorFlow (loading it the first time); False, with one logged note, when the
    library is missing or fails to load."""
    global _loaded
    if os.environ.get(HALF_ROUND_ENV, "1") == "0":
        return False
    with _LOCK:
        if _loaded is None:
            _loaded = _load()
        return _loaded


def _load() -> bool:
    if not HALF_ROUND_LIBRARY.is_file():
        _LOG.info(
            "note: %s is not built (make venv builds it with g++); float16 roundings run as "
            "Cast pairs (the same bits, about twice the time)",
            HALF_ROUND_LIBRARY,
        )
        return False
    import tensorflow as tf

    try:
        tf.load_op_library(str(HALF_ROUND_LIBRARY))
    except (tf.errors.NotFoundError, OSError) as error:  # built against another TensorFlow
        _LOG.info(
            "note: %s does not load (%s); float16 roundings run as Cast pairs (the same bits, "
            "about twice the time); rebuild it with `make half-round`",
            HALF_ROUND_LIBRARY,
            str(error).splitlines()[0] if str(error) else type(error).__name__,
        )
        return False
    return True

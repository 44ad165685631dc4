"""The one-pass statistics kernel of ``dump_data=stats``: a TensorFlow custom op of our own.

TensorFlow has no kernel that computes several reductions in one pass, so the in-graph
statistics took five passes over every dumped tensor (max, min, sum, ``L2Loss``, the zero
count; :mod:`tf2npu.runtime.dump.measure`). ``tensor_stats.cc`` computes all of them, and the
non-finite branch's counts, reading each element once (the figures and their precision are in
its header). It is built by ``make venv`` with g++ against the installed TensorFlow's headers
(:mod:`tf2npu.runtime.dump.stats_op.build`) into ``_tensor_stats.so`` next to the source, never
committed. Without g++, or with a library older than its source, :func:`load` says why and the
dump measures with TensorFlow's reductions: nothing else changes but the speed.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SOURCES = (HERE / "tensor_stats.cc", HERE / "stats_kernel.h", HERE / "blocks.inc")
"""The kernel's source files; the library is stale when one is newer than it."""
LIBRARY = HERE / "_tensor_stats.so"


def build_log(library: Path) -> Path:
    """The compiler's output of the last failed build of ``library`` (a build that succeeds
    removes it)."""
    return library.with_suffix(".log")


OP_NAME = "Tf2npuTensorStats"


@dataclass(frozen=True)
class Loaded:
    """The op's Python wrapper, or why there is none (then ``op`` is None)."""

    op: Any
    why_not: str = ""


def load(library: Path = LIBRARY) -> Loaded:
    """The op from ``library``, loaded into TensorFlow once per process (lazily: only a stats
    dump calls this); a missing, stale or unloadable library gives the reason instead."""
    return _load(os.fspath(library))


@functools.cache
def _load(library: str) -> Loaded:
    path = Path(library)
    if not path.exists():
        log = build_log(path)
        if log.exists():
            last = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
            return Loaded(None, f"{path.name} is not built: {last[-1] if last else '?'} ({log})")
        return Loaded(None, f"{path.name} is not built (`make venv` builds it with g++)")
    built = path.stat().st_mtime
    stale = [s.name for s in SOURCES if s.stat().st_mtime > built]
    if stale:
        return Loaded(
            None, f"{path.name} is older than {', '.join(stale)} (`make venv` rebuilds it)"
        )
    import tensorflow as tf

    try:
        module = tf.load_op_library(library)
    except (tf.errors.NotFoundError, OSError) as err:  # an ABI or TensorFlow version mismatch
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return Loaded(None, f"{path.name} does not load into TensorFlow {tf.__version__}: {first}")
    return Loaded(module.tf2npu_tensor_stats)

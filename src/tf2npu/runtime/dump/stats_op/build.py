"""Builds the statistics op: ``python -m tf2npu.runtime.dump.stats_op.build`` (``make venv``).

g++ compiles ``tensor_stats.cc`` with the installed TensorFlow's own compile and link flags
(``tf.sysconfig``: its headers, C++17, the C++11 string ABI and Eigen's alignment, which must
match the wheel's), into a temporary file renamed over the library once complete, so a failed or
interrupted build never leaves a library that half loads. A failure is not an error of the
install: the log is kept (:func:`build_log`), one note says what it means, and stats dumps
measure with TensorFlow's reductions.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tf2npu.runtime.dump.stats_op import LIBRARY, SOURCES, build_log

OPTIMISE = ("-O3", "-shared", "-fPIC")
"""The baseline x86-64 code, no ``-march``: the AVX2 variant of the inner loop is compiled by a
``#pragma GCC target`` in the source and picked at run time, so one library runs anywhere."""


def command(
    compiler: str, source: Path, out: Path, compile_flags: Sequence[str], link_flags: Sequence[str]
) -> list[str]:
    """The compiler's command line (link flags last: the linker reads libraries in order)."""
    return [compiler, *OPTIMISE, *compile_flags, os.fspath(source), "-o", os.fspath(out),
            *link_flags]  # fmt: skip


def build(out: Path = LIBRARY, compiler: str | None = None) -> str:
    """Build the library into ``out``; "" when it is built, else why not (logged)."""
    compiler = compiler or os.environ.get("CXX") or "g++"
    if shutil.which(compiler) is None:
        return _failed(out, f"no C++ compiler: {compiler!r} is not on PATH")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    partial = out.with_name(out.name + ".tmp")
    cmd = command(
        compiler, SOURCES[0], partial, tf.sysconfig.get_compile_flags(),
        tf.sysconfig.get_link_flags(),
    )  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        output = (done.stdout + done.stderr).splitlines()
        errors = [line for line in output if "error" in line] or output[-1:] or ["no output"]
        why = f"{compiler} exited with {done.returncode}: {errors[0]}"
        return _failed(out, why, "\n".join([" ".join(cmd), *output]))
    os.replace(partial, out)
    build_log(out).unlink(missing_ok=True)
    return ""


def _failed(out: Path, why: str, log: str = "") -> str:
    """Record a failed build: the log (its last line is ``why``, which :func:`load` quotes),
    and no library, as an older one must not stand in for this source."""
    out.unlink(missing_ok=True)
    build_log(out).write_text(f"{log}\n{why}\n" if log else f"{why}\n", encoding="utf-8")
    return why


def main(argv: Sequence[str] = ()) -> int:
    """Build; on failure one note on stderr and exit status 1 (``make`` goes on)."""
    why = build()
    if why:
        print(
            f"note: the tf2npu statistics op was not built ({why}); dump_data=stats will "
            "measure with TensorFlow's reductions (five passes a tensor, slower)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The statistics op (tf2npu.runtime.dump.stats_op) against numpy's float64 definition.

Max, min, the zero count and the NaN/-Inf/+Inf counts are exact, compared with ``==``; the sum
and the sum of squares are exact on the literal cases below (few elements: the kernel's tail
runs in double, and the exact path does) and within 1e-6 relative on the large ones (float
lanes, added in double every 32 elements a lane). The tests run the op in a v1 Session, as the
dump does: its kernels run on TensorFlow's threads, which flush denormals to zero.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.runtime.conftest import tf

from tf2npu.runtime.dump import stats_op

pytestmark = pytest.mark.tf

LOADED = stats_op.load()
needs_op = pytest.mark.skipif(
    LOADED.op is None, reason=f"the statistics op is not loaded: {LOADED.why_not}"
)
INF = float("inf")
BLOCK = 1 << 15
"""tensor_stats.cc's kBlock: elements per block (one unit of a thread's work)."""


def _measure(value: Any, dtype: Any = None, threads: int = 0) -> tuple[list[float], int]:
    """The op's two outputs for ``value`` (cast to ``dtype`` in the graph when given)."""
    graph = tf.Graph()
    with graph.as_default():
        tensor = tf.identity(tf.constant(value))
        if dtype is not None:
            tensor = tf.cast(tensor, dtype)
        sums, zero = LOADED.op(tensor)
    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=threads, use_per_session_threads=bool(threads)
    )
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        got_sums, got_zero = sess.run([sums, zero])
    return got_sums.tolist(), int(got_zero)


def _numpy(values: np.ndarray[Any, Any]) -> tuple[list[float], int]:
    """The definition: over the finite elements in float64 (-Inf/+Inf max/min when none)."""
    wide = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = wide[np.isfinite(wide)]
    top, bottom = (finite.max(), finite.min()) if finite.size else (-INF, INF)
    counts = [np.isnan(wide).sum(), (wide == -INF).sum(), (wide == INF).sum()]
    sums = [top, bottom, finite.sum(), 0.5 * np.dot(finite, finite)]
    return [float(v) for v in sums + counts], int((wide == 0).sum())


@needs_op
@pytest.mark.parametrize(
    ("array", "want_sums", "want_zero"),
    [
        (np.zeros(0, np.float32), [-INF, INF, 0.0, 0.0, 0.0, 0.0, 0.0], 0),
        (np.array([0.0, -0.0, 0.0], np.float32), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], 3),
        (
            np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -2.0, np.nan], np.float32),
            [1.0, -2.0, -1.0, 2.5, 2.0, 1.0, 1.0],
            1,
        ),
        (np.full(3, np.nan, np.float64), [-INF, INF, 0.0, 0.0, 3.0, 0.0, 0.0], 0),
        (
            np.array([65504.0, -65504.0, 1.0, 0.0], np.float16),  # float16's max: no overflow
            [65504.0, -65504.0, 1.0, 4290774016.5, 0.0, 0.0, 0.0],
            1,
        ),
        (
            np.array([2.0**100, -(2.0**101), 0.0], np.float32),  # float squares overflow
            [2.0**100, -(2.0**101), -(2.0**100), 2.5 * 2.0**200, 0.0, 0.0, 0.0],
            1,
        ),
    ],
    ids=["empty", "zeros", "nan-inf", "all-nan", "float16-max", "squares-overflow"],
)
def test_literal_tensors(array: Any, want_sums: list[float], want_zero: int) -> None:
    sums, zero = _measure(array)
    assert (sums, zero) == (want_sums, want_zero)
    assert (sums, zero) == _numpy(array)


@needs_op
def test_a_subnormal_is_not_a_zero_and_is_the_exact_minimum() -> None:
    """TensorFlow's threads treat denormal inputs as zero (DAZ); the kernel does not."""
    tiny = np.float32(1e-45)  # the smallest float32 subnormal
    array = np.array([1.0, -tiny, 0.0, tiny, 2.5], np.float32)
    sums, zero = _measure(array)
    assert sums[:2] == [2.5, -float(tiny)] and zero == 1
    assert (sums, zero) == _numpy(array)


@needs_op
def test_a_block_of_tiny_values_is_summed_in_double() -> None:
    """Float squares of 1e-30 underflow (1e-60 < 1.2e-38): such a block takes the double path."""
    array = np.full(BLOCK + 7, 1e-30, np.float32)
    array[5] = np.float32(1e-40)  # a subnormal among them
    sums, zero = _measure(array)
    want, want_zero = _numpy(array)
    assert sums[:2] == want[:2] and sums[4:] == want[4:] and zero == want_zero == 0
    assert sums[2:4] == pytest.approx(want[2:4], rel=1e-12)


@needs_op
def test_bfloat16_keeps_its_float32_range() -> None:
    big = float(tf.cast(tf.constant(3.3e38), tf.bfloat16).numpy())  # near bfloat16's max
    values = np.array([big, -1.5, 0.0, 2.0**-130, -big], np.float32)  # 2^-130: subnormal
    sums, zero = _measure(values, tf.bfloat16)
    assert (sums, zero) == _numpy(values)
    assert sums[0] == big and zero == 1


@needs_op
def test_float16_over_many_chunks_sums_without_overflow() -> None:
    array = np.full(2 * BLOCK + 1000, 65504.0, np.float16)
    array[::3] = -1.0
    sums, zero = _measure(array)
    want, want_zero = _numpy(array)
    assert sums[:2] == want[:2] and sums[4:] == want[4:] and zero == want_zero
    assert sums[2:4] == pytest.approx(want[2:4], rel=1e-6)  # 1.4e11 and 9.5e13: no Inf


@needs_op
def test_double_tensors_keep_double_precision() -> None:
    array = np.full(BLOCK + 1000, 0.1, np.float64)
    sums, _ = _measure(array)
    want, _ = _numpy(array)
    assert sums[2:4] == pytest.approx(want[2:4], rel=1e-13)  # float lanes would give ~1e-8


@needs_op
def test_non_finite_values_in_some_blocks_leave_the_others_fast() -> None:
    rng = np.random.default_rng(1)
    array = rng.standard_normal(3 * BLOCK + 100).astype(np.float32)
    array[::11] = 0.0
    array[BLOCK + 17] = np.nan
    array[2 * BLOCK + 5] = np.inf
    array[-1] = -np.inf
    sums, zero = _measure(array)
    want, want_zero = _numpy(array)
    assert sums[:2] == want[:2] and sums[4:] == want[4:] == [1.0, 1.0, 1.0]
    assert zero == want_zero
    scale = float(np.abs(array[np.isfinite(array)].astype(np.float64)).sum())
    assert abs(sums[2] - want[2]) <= 1e-6 * scale
    assert sums[3] == pytest.approx(want[3], rel=1e-6)


@needs_op
def test_the_figures_do_not_depend_on_the_number_of_threads() -> None:
    array = np.random.default_rng(2).standard_normal(40 * BLOCK + 3).astype(np.float32)
    one, two = _measure(array, threads=1), _measure(array, threads=2)
    assert one == two  # blocks are combined in their order, whoever measured them


def test_a_missing_library_says_how_to_build_it(tmp_path: Path) -> None:
    loaded = stats_op.load(tmp_path / "_tensor_stats.so")
    assert loaded.op is None
    assert loaded.why_not == "_tensor_stats.so is not built (`make venv` builds it with g++)"


def test_a_failed_build_is_quoted_from_its_log(tmp_path: Path) -> None:
    log = stats_op.build_log(tmp_path / "_tensor_stats.so")
    log.write_text("g++ ... tensor_stats.cc\nno C++ compiler: 'g++' is not on PATH\n")
    loaded = stats_op.load(tmp_path / "_tensor_stats.so")
    assert loaded.why_not == (
        f"_tensor_stats.so is not built: no C++ compiler: 'g++' is not on PATH ({log})"
    )


def test_a_library_older_than_its_source_is_not_loaded(tmp_path: Path) -> None:
    library = tmp_path / "_tensor_stats.so"
    library.write_bytes(b"")
    os.utime(library, (0, 0))
    assert stats_op.load(library).why_not == (
        "_tensor_stats.so is older than tensor_stats.cc, stats_kernel.h, blocks.inc (`make venv` "
        "rebuilds it)"
    )


def test_a_file_that_is_no_library_is_not_loaded(tmp_path: Path) -> None:
    library = tmp_path / "_tensor_stats.so"
    library.write_bytes(b"not an ELF file")
    why = stats_op.load(library).why_not
    assert why.startswith(f"_tensor_stats.so does not load into TensorFlow {tf.__version__}: ")
    assert "_tensor_stats.so" in why.split(": ", 1)[1]

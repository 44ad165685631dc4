"""``Tf2npuHalfRound`` against the ``Cast`` pair it replaces, bit for bit, and its loader.

The reference is TensorFlow's own ``Cast(Cast(x, float16), float32)`` run in the same graph
session (the executor's threads flush denormals, as in a training run). Cases: ties to even at
every exponent, the overflow boundary (65504 stays, 65520 rounds to inf), the subnormal range
(2^-24, half of it, just above half of it), signed zeros, infinities, NaNs with payloads and
float32 subnormals; then a strided sweep over all 2^32 bit patterns. The exhaustive check of
every pattern is ``benchmarks/half_round_exhaustive.py`` (minutes, not in the suite).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

from tf2npu.runtime import native
from tf2npu.runtime.native import HALF_ROUND_ENV, HALF_ROUND_LIBRARY, half_round_available

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
needs_library = pytest.mark.skipif(
    not HALF_ROUND_LIBRARY.is_file(), reason=f"{HALF_ROUND_LIBRARY} is not built (make half-round)"
)


def bits(values: Any) -> np.ndarray[Any, Any]:
    return np.asarray(values, np.uint32)


def both(patterns: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(the Cast pair's bits, the op's bits) for float32 bit ``patterns``."""
    assert half_round_available()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None])
        pair = tf.cast(tf.cast(x, tf.float16), tf.float32)
        op = tf.load_op_library(str(HALF_ROUND_LIBRARY)).tf2npu_half_round(x)
        copy = tf.identity(x)  # a second reader: the op must not round x in place under it
    with tf.compat.v1.Session(graph=graph) as session:
        values = patterns.astype(np.uint32).view(np.float32)
        got_pair, got_op, got_copy = session.run([pair, op, copy], {x: values})
    np.testing.assert_array_equal(got_copy.view(np.uint32), patterns.astype(np.uint32))
    return got_pair.view(np.uint32), got_op.view(np.uint32)


def assert_same(patterns: np.ndarray[Any, Any]) -> None:
    pair, op = both(patterns)
    wrong = np.nonzero(pair != op)[0]
    shown = [f"{patterns[i]:#010x}: pair {pair[i]:#010x}, op {op[i]:#010x}" for i in wrong[:5]]
    assert not wrong.size, f"{wrong.size} of {patterns.size} differ: {shown}"


@needs_library
def test_boundary_cases_literal() -> None:
    """The results written out, and the same as the Cast pair."""
    cases = {
        0x3F800000: 0x3F800000,  # 1.0
        0x3F801000: 0x3F800000,  # 1 + 2^-11, a tie: to even (1.0)
        0x3F803000: 0x3F804000,  # 1 + 3·2^-11, a tie: to even (1 + 2^-9)
        0x3F801001: 0x3F802000,  # just above the tie: up
        0x477FE000: 0x477FE000,  # 65504, the largest finite float16
        0x477FEFFF: 0x477FE000,  # just below 65520: 65504
        0x477FF000: 0x7F800000,  # 65520: the tie rounds to even, which is inf
        0xC77FF000: 0xFF800000,  # -65520: -inf
        0x33800000: 0x33800000,  # 2^-24, the smallest float16 subnormal
        0x33000000: 0x00000000,  # 2^-25, half of it: a tie, to even (0)
        0x33000001: 0x33800000,  # just above: 2^-24
        0x33C00000: 0x34000000,  # 1.5·2^-24: a tie, to even (2^-23)
        0x387FC000: 0x387FC000,  # the largest float16 subnormal
        0x387FE000: 0x38800000,  # halfway to 2^-14: to even (2^-14, the smallest normal)
        0x80000000: 0x80000000,  # -0.0 keeps its sign
        0xB3000000: 0x80000000,  # -2^-25: -0.0
        0x00000001: 0x00000000,  # the smallest float32 subnormal
        0x807FFFFF: 0x80000000,  # the largest negative float32 subnormal
        0x7F800000: 0x7F800000,  # inf
        0xFF800000: 0xFF800000,  # -inf
        0x7FC00000: 0x7FC00000,  # the quiet NaN
        0x7F800001: 0x7FC00000,  # a signalling NaN: quiet, payload dropped
        0x7FA12345: 0x7FC00000,  # a payload: dropped
        0xFFC00001: 0xFFC00000,  # a negative NaN keeps its sign
    }
    patterns = bits(list(cases))
    pair, op = both(patterns)
    assert [hex(v) for v in pair] == [hex(v) for v in cases.values()]
    assert [hex(v) for v in op] == [hex(v) for v in cases.values()]


@needs_library
def test_ties_and_their_neighbours_at_every_exponent() -> None:
    """For every float32 exponent and sign: the tie (low 13 bits 0x1000) after an even and an
    odd float16 mantissa, one ulp either side of it, and the largest fraction (carries)."""
    exponents = np.arange(256, dtype=np.uint32) << 23
    fractions = []
    for mantissa in (0, 1, 0x2AA, 0x3FE, 0x3FF):  # even, odd, ..., the last two
        for low in (0x0FFF, 0x1000, 0x1001, 0x1FFF):
            fractions.append((mantissa << 13) | low)
    grid = exponents[:, None] | np.asarray(fractions, np.uint32)[None, :]
    patterns = np.concatenate([grid.ravel(), grid.ravel() | 0x80000000])
    assert_same(patterns)


@needs_library
def test_every_float16_value_widened_is_unchanged() -> None:
    halves = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    assert_same(halves.astype(np.float32).view(np.uint32))


@needs_library
def test_a_strided_sweep_of_all_bit_patterns() -> None:
    """Every 4093rd pattern (a prime stride, so every low-bit residue comes up): 1.05 M
    values in one tensor, which the op splits over the intra-op threads."""
    patterns = np.arange(0, 2**32, 4093, dtype=np.uint64).astype(np.uint32)
    assert_same(patterns)
    assert_same(patterns + 1234)  # another offset: other low bits, other exponents


@needs_library
def test_the_library_loads_once_and_says_yes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HALF_ROUND_ENV, raising=False)
    assert half_round_available() is True
    assert half_round_available() is True


def test_the_environment_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HALF_ROUND_ENV, "0")
    assert half_round_available() is False


def test_a_missing_library_falls_back_with_one_note(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(HALF_ROUND_ENV, raising=False)
    missing = tmp_path / "half_round.so"
    monkeypatch.setattr(native, "HALF_ROUND_LIBRARY", missing)
    monkeypatch.setattr(native, "_loaded", None)
    with caplog.at_level(logging.INFO, logger="tf2npu.runtime"):
        assert half_round_available() is False
        assert half_round_available() is False
    notes = [r.getMessage() for r in caplog.records if "half_round.so" in r.getMessage()]
    assert len(notes) == 1 and str(missing) in notes[0] and "Cast pairs" in notes[0]


def test_a_library_that_does_not_load_falls_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "half_round.so"
    broken.write_bytes(b"not a shared object")
    monkeypatch.delenv(HALF_ROUND_ENV, raising=False)
    monkeypatch.setattr(native, "HALF_ROUND_LIBRARY", broken)
    monkeypatch.setattr(native, "_loaded", None)
    with caplog.at_level(logging.INFO, logger="tf2npu.runtime"):
        assert half_round_available() is False
    assert any("does not load" in r.getMessage() for r in caplog.records)

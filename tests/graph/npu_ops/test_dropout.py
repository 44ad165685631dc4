"""DropOutGenMask + DropOutDoMask: mask layout and length, seeds, identity at keep_prob 1, scale."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.ir import Graph
from tf2npu.graph.npu_ops import add_npu_node, materialize
from tf2npu.graph.npu_ops.dropout import mask_bytes
from tf2npu.graph.npu_ops.opdef import DT_FLOAT, DT_HALF, DT_INT32, DT_INT64

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


def _bits(mask: np.ndarray, count: int) -> np.ndarray:
    """Element i kept iff bit i % 8 of byte i // 8 is set (least significant bit first)."""
    return np.unpackbits(mask, bitorder="little")[:count]


@pytest.mark.parametrize(
    ("elements", "expected"), [(1, 16), (127, 16), (128, 16), (129, 32), (256, 32), (1000, 128)]
)
def test_mask_bytes_rounds_up_to_128_bits(elements: int, expected: int) -> None:
    assert mask_bytes(elements) == expected


@pytest.mark.parametrize("shape", [[3, 43], [2, 64], [129]])
def test_gen_mask_length_and_padding(run_op, shape: list[int]) -> None:
    prob = np.float32(1.0)
    (mask,) = run_op(
        "DropOutGenMask", [np.array(shape, np.int32), prob], DT_FLOAT, attrs={"seed": 1, "seed2": 2}
    )
    count = int(np.prod(shape))
    assert mask.dtype == np.uint8 and mask.shape == (mask_bytes(count),)
    bits = np.unpackbits(mask, bitorder="little")
    assert bits[:count].all()  # keep probability 1 keeps everything
    assert not bits[count:].any()  # padding bits are 0


def test_gen_mask_int64_shape(run_op) -> None:
    (mask,) = run_op(
        "DropOutGenMask",
        [np.array([5, 7], np.int64), np.float32(0.0)],
        DT_FLOAT,
        attrs={"seed": 3, "seed2": 4, "Tshape": DT_INT64},
    )
    assert mask.shape == (16,) and not mask.any()  # keep probability 0 drops everything


def test_same_seeds_give_the_same_mask_and_runs_advance(run_op) -> None:
    inputs = [np.array([4096], np.int32), np.float32(0.5)]
    first = run_op("DropOutGenMask", inputs, DT_FLOAT, attrs={"seed": 7, "seed2": 11})[0]
    again = run_op("DropOutGenMask", inputs, DT_FLOAT, attrs={"seed": 7, "seed2": 11})[0]
    other = run_op("DropOutGenMask", inputs, DT_FLOAT, attrs={"seed": 8, "seed2": 11})[0]
    np.testing.assert_array_equal(first, again)
    assert (first != other).any()
    kept = _bits(first, 4096).mean()
    assert 0.45 < kept < 0.55


def test_do_mask_keep_prob_one_is_identity(run_op) -> None:
    x = np.random.default_rng(0).standard_normal((5, 37)).astype(np.float32)
    mask = np.full(mask_bytes(x.size), 255, np.uint8)
    (y,) = run_op("DropOutDoMask", [x, mask, np.float32(1.0)], DT_FLOAT)
    np.testing.assert_array_equal(y, x)


def test_do_mask_applies_bits_in_order_and_scales(run_op) -> None:
    x = np.arange(1.0, 21.0, dtype=np.float16).reshape(4, 5)
    bits = np.zeros(128, np.uint8)
    bits[[0, 3, 8, 19]] = 1
    mask = np.packbits(bits, bitorder="little")
    (y,) = run_op("DropOutDoMask", [x, mask, np.float16(0.5)], DT_HALF)
    expected = np.zeros(20, np.float16)
    expected[[0, 3, 8, 19]] = x.reshape(-1)[[0, 3, 8, 19]] * 2
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y.reshape(-1), expected)


def test_gen_then_do_mask_preserves_the_mean(run_graph) -> None:
    from tensorflow.core.framework.attr_value_pb2 import AttrValue

    graph = Graph()
    x, shape, keep = (
        graph.add_node(f"in{i}", "Placeholder", attrs={"dtype": AttrValue(type=t)}).output()
        for i, t in enumerate((DT_FLOAT, DT_INT32, DT_FLOAT))
    )
    gen = add_npu_node(
        graph, "gen", "DropOutGenMask", [shape, keep], dtype=DT_FLOAT, attrs={"seed": 5, "seed2": 6}
    )
    add_npu_node(graph, "do", "DropOutDoMask", [x, gen.output(), keep], dtype=DT_FLOAT)
    assert materialize(graph) == 2
    graph.lint()
    ones = np.ones(100_000, np.float32)
    feeds = [ones, np.array([100_000], np.int32), np.float32(0.8)]
    (first, second) = run_graph(graph, feeds, ["do:0", "gen:0"], runs=2)
    y = first[0]
    assert set(np.unique(y)) == {np.float32(0.0), np.float32(1.0) / np.float32(0.8)}
    assert abs(y.mean() - 1.0) < 0.01
    assert abs((y == 0).mean() - 0.2) < 0.01
    # A seeded node is a stateful generator: the next run draws a new mask.
    assert (first[1] != second[1]).any()

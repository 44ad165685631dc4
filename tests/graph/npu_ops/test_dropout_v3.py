"""DropOutGenMaskV3 / DropOutDoMaskV3: one mask byte per element, padded to 16."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.graph.npu_ops.dropout_v3 import mask_v3_bytes
from tf2npu.graph.npu_ops.opdef import DT_FLOAT

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


def test_mask_length_is_rounded_up_to_16() -> None:
    assert [mask_v3_bytes(n) for n in (1, 16, 17, 100)] == [16, 16, 32, 112]


def test_gen_mask_v3_is_bytes_of_0_and_1_with_zero_padding(run_op) -> None:
    shape = np.array([3, 7], np.int32)
    (mask,) = run_op(
        "DropOutGenMaskV3", [shape, np.float32(0.5)], DT_FLOAT, {"seed": 1, "seed2": 2}
    )
    assert mask.dtype == np.uint8 and mask.shape == (32,)
    assert set(np.unique(mask[:21])) <= {0, 1} and not mask[21:].any()


def test_gen_mask_v3_keep_prob_1_keeps_all(run_op) -> None:
    (mask,) = run_op(
        "DropOutGenMaskV3",
        [np.array([5], np.int32), np.float32(1.0)],
        DT_FLOAT,
        {"seed": 3, "seed2": 4},
    )
    assert mask.tolist() == [1] * 5 + [0] * 11


def test_do_mask_v3_keeps_and_scales_by_byte(run_op) -> None:
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    mask = np.array([1, 0, 0, 1] + [0] * 12, np.uint8)
    (y,) = run_op("DropOutDoMaskV3", [x, mask, np.float32(0.5)], DT_FLOAT)
    assert y.tolist() == [[2.0, 0.0], [0.0, 8.0]]

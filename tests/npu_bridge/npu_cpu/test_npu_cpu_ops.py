"""npu_cpu_ops: randomchoicewithmask and embeddingrankid computed by TensorFlow ops."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.npu_cpu import npu_cpu_ops  # noqa: E402

pytestmark = pytest.mark.tf


def _run(*fetches):
    with tf.compat.v1.Session() as sess:
        return sess.run(list(fetches))


def test_choice_pads_to_count_and_masks_the_padding() -> None:
    with tf.Graph().as_default():
        x = tf.constant([False, True, False, True, True])
        y, mask = npu_cpu_ops.randomchoicewithmask(x, count=6, seed=3, seed2=4)
        assert y.shape.as_list() == [6, 1] and mask.shape.as_list() == [6]
        assert y.dtype == tf.int32 and mask.dtype == tf.bool
        y_value, mask_value = _run(y, mask)
    assert sorted(y_value[:3, 0].tolist()) == [1, 3, 4]
    assert y_value[3:].tolist() == [[0], [0], [0]]
    assert mask_value.tolist() == [True, True, True, False, False, False]


def test_choice_takes_count_of_many_and_returns_multi_dim_indices() -> None:
    with tf.Graph().as_default():
        x = tf.constant(np.eye(4, dtype=bool))
        y, mask = npu_cpu_ops.randomchoicewithmask(x, count=2, seed=1)
        everything, all_valid = npu_cpu_ops.randomchoicewithmask(x, count=0, seed=1)
        y_value, mask_value, every_value, valid_value = _run(y, mask, everything, all_valid)
    assert y_value.shape == (2, 2) and all(row[0] == row[1] for row in y_value.tolist())
    assert len({tuple(r) for r in y_value.tolist()}) == 2
    assert mask_value.tolist() == [True, True]
    assert sorted(map(tuple, every_value.tolist())) == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert valid_value.tolist() == [True] * 4


def test_seeded_choice_is_reproducible() -> None:
    def draw() -> list[int]:
        with tf.Graph().as_default():
            y, _ = npu_cpu_ops.randomchoicewithmask(tf.ones([50], tf.bool), count=10, seed=7)
            return _run(y)[0][:, 0].tolist()

    first = draw()
    assert first == draw()
    assert len(set(first)) == 10 and set(first) <= set(range(50))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"x": [1.0], "count": 1}, TypeError, "x is float32; it must be bool"),
        ({"x": [True], "count": -1}, ValueError, "count=-1 must be an int >= 0"),
        ({"x": True, "count": 1}, ValueError, "x has rank 0; give a tensor of rank 1 to 5"),
    ],
)
def test_choice_argument_errors(kwargs, error, message) -> None:
    with tf.Graph().as_default(), pytest.raises(error, match=message):
        npu_cpu_ops.randomchoicewithmask(**kwargs)


TABLE = np.array([[0, 1000, 3 * 16], [1, 9000, 2 * 16]], dtype=np.uint64)


def test_rank_id_mod_deals_rows_round_robin() -> None:
    with tf.Graph().as_default():
        out = npu_cpu_ops.embeddingrankid(TABLE, tf.constant([0, 1, 2, 5]), row_memory=16)
        assert out.dtype == tf.uint64
        (value,) = _run(out)
    assert value.tolist() == [[0, 1000, 16], [1, 9000, 16], [0, 1016, 16], [1, 9032, 16]]


def test_rank_id_order_fills_each_server_in_turn() -> None:
    with tf.Graph().as_default():
        ids = tf.constant([0, 2, 3, 4], tf.int64)
        (value,) = _run(npu_cpu_ops.embeddingrankid(TABLE, ids, row_memory=16, mode="order"))
    assert value.tolist() == [[0, 1000, 16], [0, 1032, 16], [1, 9000, 16], [1, 9016, 16]]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"row_memory": 0}, ValueError, "row_memory=0 must be an int > 0"),
        ({"mode": "hash"}, ValueError, "mode='hash'; use one of: mod, order"),
        ({"index": [0.5]}, TypeError, "index is float32; use int32, int64 or uint64"),
        ({"addr_tensor": [[0, 1]]}, ValueError, r"shape \(1, 2\); it must be \[servers, 3\]"),
    ],
)
def test_rank_id_argument_errors(kwargs, error, message) -> None:
    args = {"addr_tensor": TABLE, "index": [0], **kwargs}
    with tf.Graph().as_default(), pytest.raises(error, match=message):
        npu_cpu_ops.embeddingrankid(**args)

"""NPUStrategy: one device, dataset sharded by rank."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu.npu_strategy import NPUStrategy  # noqa: E402

pytestmark = pytest.mark.tf


@pytest.fixture(autouse=True)
def _one_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK_SIZE", "RANK_ID", "POD_NAME", "CM_WORKER_SIZE"):
        monkeypatch.delenv(name, raising=False)


def elements(dataset) -> list[int]:
    with tf.Graph().as_default():
        ds = dataset()
        next_element = tf.compat.v1.data.make_one_shot_iterator(ds).get_next()
        values = []
        with tf.compat.v1.Session() as sess:
            try:
                while True:
                    values.append(int(sess.run(next_element)))
            except tf.errors.OutOfRangeError:
                return values


def distributed_range(n: int):
    def build():
        return NPUStrategy().experimental_distribute_dataset(tf.data.Dataset.range(n))

    return build


def test_is_a_one_device_strategy_on_the_cpu() -> None:
    strategy = NPUStrategy()
    assert isinstance(strategy, tf.compat.v1.distribute.OneDeviceStrategy)
    assert strategy.num_replicas_in_sync == 1
    assert strategy.extended.worker_devices == ("/job:localhost/replica:0/task:0/device:CPU:0",)


def test_single_rank_keeps_every_element() -> None:
    assert elements(distributed_range(5)) == [0, 1, 2, 3, 4]


def test_shards_by_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "3")
    monkeypatch.setenv("RANK_ID", "1")
    assert elements(distributed_range(8)) == [1, 4, 7]


def test_result_is_a_plain_dataset() -> None:
    with tf.Graph().as_default():
        result = NPUStrategy().experimental_distribute_dataset(tf.data.Dataset.range(2))
        assert isinstance(result, tf.data.Dataset)

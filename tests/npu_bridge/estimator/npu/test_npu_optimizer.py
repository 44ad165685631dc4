"""npu_optimizer: one-rank wrappers are bit-identical to the plain optimizer; more ranks average."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu.npu_loss_scale_manager import FixedLossScaleManager  # noqa: E402
from npu_bridge.estimator.npu.npu_optimizer import (  # noqa: E402
    KerasDistributeOptimizer,
    NPUDistributedOptimizer,
    NPUOptimizer,
    allreduce,
    npu_allreduce,
    npu_distributed_optimizer_wrapper,
    reduce,
)
from tf2npu.errors import Tf2NpuError  # noqa: E402

pytestmark = pytest.mark.tf

W0 = np.array([0.3, -1.7, 2.9], dtype=np.float32)
FEEDS = [
    np.array([1.1, 0.7, -0.45], dtype=np.float32),
    np.array([0.2, -3.0, 1.0], dtype=np.float32),
    np.array([2.5, 0.01, -0.7], dtype=np.float32),
]


@pytest.fixture(autouse=True)
def _one_rank(monkeypatch):
    monkeypatch.delenv("RANK_SIZE", raising=False)
    monkeypatch.delenv("CM_WORKER_SIZE", raising=False)


def _train(wrap) -> bytes:
    """Variable bytes after three Momentum steps with ``wrap(optimizer)``."""
    with tf.Graph().as_default():
        w = tf.compat.v1.Variable(W0, name="w")
        x = tf.compat.v1.placeholder(tf.float32, [3])
        loss = tf.reduce_sum(tf.square(w * x - 0.5))
        opt = wrap(tf.compat.v1.train.MomentumOptimizer(0.05, 0.9))
        train = opt.minimize(loss, global_step=tf.compat.v1.train.get_or_create_global_step())
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for feed in FEEDS:
                sess.run(train, {x: feed})
            return sess.run(w).tobytes()


def test_distributed_optimizer_is_bit_identical_after_three_steps() -> None:
    assert _train(NPUDistributedOptimizer) == _train(lambda opt: opt)


def test_npu_optimizer_variants_are_bit_identical() -> None:
    plain = _train(lambda opt: opt)
    assert _train(lambda opt: NPUOptimizer(opt, is_distributed=True)) == plain
    assert (
        _train(lambda opt: NPUOptimizer(opt, FixedLossScaleManager(1024), is_loss_scale=True))
        == plain
    )


def test_npu_optimizer_loss_scale_skips_overflow_steps() -> None:
    with tf.Graph().as_default():
        w = tf.compat.v1.Variable(1.0)
        bad = tf.compat.v1.placeholder(tf.float32, [])
        opt = NPUOptimizer(
            tf.compat.v1.train.GradientDescentOptimizer(0.1),
            FixedLossScaleManager(2.0),
            is_loss_scale=True,
        )
        train = opt.minimize(w * bad)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(train, {bad: np.inf})
            assert sess.run(w) == 1.0
            sess.run(train, {bad: 1.0})
            assert sess.run(w) == np.float32(0.9)


def test_names_and_delegation() -> None:
    with tf.Graph().as_default():
        inner = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)
        opt = NPUDistributedOptimizer(inner)
        assert opt.get_name() == "DistributedMomentumOptimizer"
        assert NPUDistributedOptimizer(inner, name="d").get_name() == "d"
        assert NPUOptimizer(inner).get_name() == "NPUOptimizerMomentumOptimizer"
        w = tf.compat.v1.Variable(1.0)
        opt.minimize(w * 2.0)
        assert opt.get_slot_names() == ["momentum"]
        assert opt.get_slot(w, "momentum") is inner.get_slot(w, "momentum") is not None
        assert opt.variables() == inner.variables()


def test_wrong_arguments() -> None:
    with pytest.raises(TypeError, match=r"give a tf\.compat\.v1\.train\.Optimizer"):
        NPUDistributedOptimizer("sgd")
    with pytest.raises(ValueError, match="is_loss_scale=True needs a loss_scale_manager"):
        NPUOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1), is_loss_scale=True)


def test_more_ranks_raise_when_gradients_are_built(monkeypatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "2")
    with tf.Graph().as_default():
        w = tf.compat.v1.Variable(1.0)
        opt = NPUDistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))
        with pytest.raises(
            Tf2NpuError,
            match=r"NPUDistributedOptimizer\.compute_gradients: "
            "RANK_SIZE=2 asks for 2 ranks, but this process was not started",
        ):
            opt.minimize(w * 2.0)


def test_allreduce_reduce_and_npu_allreduce_with_one_rank() -> None:
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        sparse = tf.IndexedSlices(tf.constant([[3.0]]), tf.constant([1]), tf.constant([2, 1]))
        a, r, m = allreduce(x), reduce(x, 0), npu_allreduce(x)
        s = allreduce(sparse)
        listed = npu_allreduce([x, x], reduction="max")
        assert isinstance(listed, list) and len(listed) == 2
        with tf.compat.v1.Session() as sess:
            va, vr, vm, vs = sess.run([a, r, m, s.values])
        assert va.tolist() == vr.tolist() == vm.tolist() == [1.0, 2.0]
        assert vs.tolist() == [[3.0]]
        with pytest.raises(ValueError, match="reduction='avg'; use one of: mean, sum"):
            npu_allreduce(x, reduction="avg")


def test_npu_distributed_optimizer_wrapper_patches_in_place() -> None:
    with tf.Graph().as_default():
        opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        assert npu_distributed_optimizer_wrapper(opt) is opt
        assert "compute_gradients" in vars(opt)
        w = tf.compat.v1.Variable(2.0)
        ((grad, var),) = opt.compute_gradients(w * 3.0)
        assert var is w
        with tf.compat.v1.Session() as sess:
            sess.run(w.initializer)
            assert sess.run(grad) == 3.0
    keras_opt = npu_distributed_optimizer_wrapper("sgd")
    assert keras_opt.__class__.__name__ == "SGD"


def test_keras_distribute_optimizer_trains_like_the_wrapped_one() -> None:
    def fit(wrap) -> list[np.ndarray]:
        tf.keras.utils.set_random_seed(3)
        model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
        model.compile(loss="mse", optimizer=wrap(tf.keras.optimizers.legacy.SGD(0.1)))
        x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
        y = np.ones((4, 2), dtype=np.float32)
        model.fit(x, y, epochs=2, batch_size=2, verbose=0, shuffle=False)
        return model.get_weights()

    plain = fit(lambda opt: opt)
    wrapped = fit(KerasDistributeOptimizer)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(plain, wrapped, strict=True))


def test_keras_distribute_optimizer_shows_the_wrapped_hyperparameters_and_steps() -> None:
    # Before: AttributeError for .lr (LearningRateScheduler), and .iterations stayed 0.
    inner = tf.keras.optimizers.legacy.SGD(0.1, momentum=0.9)
    opt = KerasDistributeOptimizer(inner)
    assert opt.lr is inner.learning_rate and opt.momentum is inner.momentum
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
    model.compile(loss="mse", optimizer=opt)
    schedule = tf.keras.callbacks.LearningRateScheduler(lambda epoch: 0.05 / (epoch + 1))
    x, y = np.ones((4, 3), np.float32), np.ones((4, 2), np.float32)
    model.fit(x, y, epochs=2, batch_size=2, verbose=0, callbacks=[schedule])
    assert float(tf.keras.backend.get_value(inner.learning_rate)) == pytest.approx(0.025)
    assert int(tf.keras.backend.get_value(opt.iterations)) == 4  # 2 epochs x 2 batches
    with pytest.raises(AttributeError, match="no_such_thing"):
        _ = opt.no_such_thing


@pytest.fixture
def two_ranks(monkeypatch):
    """Rank 1 of a 2-rank job started by the launcher (graphs are built, never run here)."""
    monkeypatch.setenv("RANK_SIZE", "2")
    monkeypatch.setenv("RANK_ID", "1")
    monkeypatch.setenv("TF2NPU_CLUSTER", "127.0.0.1:1,127.0.0.1:2")


def _hcom(graph) -> list[tuple[str, bytes]]:
    return sorted(
        (op.name, op.get_attr("_npu_op"))
        for op in graph.get_operations()
        if op.node_def.attr["_npu_op"].s.startswith(b"Hcom")
    )


@pytest.mark.usefixtures("two_ranks")
def test_several_ranks_average_dense_and_gather_sparse_gradients() -> None:
    with tf.Graph().as_default() as graph:
        table = tf.compat.v1.Variable(np.ones([5, 2], np.float32))
        w = tf.compat.v1.Variable(1.0)
        loss = tf.reduce_sum(tf.nn.embedding_lookup(table, [0, 3])) * w
        opt = NPUDistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))
        (sparse, _), (dense, _) = opt.compute_gradients(loss, [table, w])
        assert isinstance(sparse, tf.IndexedSlices)
        assert _hcom(graph) == [
            ("DistributedGradientDescentOptimizer_Allreduce/HcomAllGather", b"HcomAllGather"),
            ("DistributedGradientDescentOptimizer_Allreduce/HcomAllGather_1", b"HcomAllGather"),
            ("DistributedGradientDescentOptimizer_Allreduce/HcomAllReduce", b"HcomAllReduce"),
        ]
        # Sum over the ranks, divided by their number: the average.
        assert dense.op.type == "RealDiv" and sparse.values.op.type == "RealDiv"
        assert tf.get_static_value(dense.op.inputs[1]) == 2.0


def _fused(graph) -> list[tuple[str, int]]:
    """Each HcomAllReduce's input size and the tensors it carries, in creation order."""
    return [
        (op.inputs[0].shape.as_list(), op.get_attr("_tf2npu_fused") if "_tf2npu_fused" in
         op.node_def.attr else 1)
        for op in graph.get_operations()
        if op.node_def.attr["_npu_op"].s == b"HcomAllReduce"
    ]  # fmt: skip


def _gradients(graph, shapes) -> list:
    """Averaged gradients of one loss over variables of ``shapes`` (float32)."""
    variables = [tf.compat.v1.Variable(tf.ones(shape), name=f"v{i}") for i, shape in
                 enumerate(shapes)]  # fmt: skip
    loss = tf.add_n([tf.reduce_sum(v * v) for v in variables])
    opt = NPUDistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))
    return opt.compute_gradients(loss, variables)


@pytest.fixture
def split_strategies(monkeypatch):
    from npu_bridge.hccl import manage

    monkeypatch.setattr(manage, "_split_strategies", {})
    return manage


@pytest.mark.usefixtures("two_ranks")
def test_dense_gradients_are_fused_by_the_default_split(split_strategies) -> None:
    with tf.Graph().as_default() as graph:
        # 100 + 4 + 2 + 1 floats: the first is 93.5% <= 96.54% of the bytes, the first two
        # 97.2%, so the last three cross the cut and travel as one all-reduce.
        pairs = _gradients(graph, [[10, 10], [4], [2], [1]])
        assert _fused(graph) == [([10, 10], 1), ([7], 3)]
        assert [g.shape.as_list() for g, _ in pairs] == [[10, 10], [4], [2], [1]]
        assert all(g.op.type == "RealDiv" for g, _ in pairs)


@pytest.mark.usefixtures("two_ranks")
def test_the_split_strategy_cuts_the_fused_all_reduces(split_strategies) -> None:
    split_strategies.set_split_strategy_by_idx([0, 2])
    with tf.Graph().as_default() as graph:
        _gradients(graph, [[3], [2, 2], [5], [7]])
        assert _fused(graph) == [([3], 1), ([9], 2), ([7], 1)]
    split_strategies.set_split_strategy_by_size([50, 50])  # by size wins over by index
    with tf.Graph().as_default() as graph:
        _gradients(graph, [[3], [2, 2], [5], [7]])
        assert _fused(graph) == [([7], 2), ([12], 2)]


@pytest.mark.usefixtures("two_ranks")
def test_npu_allreduce_mean_and_max() -> None:
    with tf.Graph().as_default() as graph:
        mean, top = npu_allreduce([tf.constant([1.0]), tf.constant([2.0])], "mean")[0], None
        top = npu_allreduce(tf.constant([2.0]), "max")
        assert mean.op.type == "RealDiv" and top.op.get_attr("_npu_op") == b"HcomAllReduce"
        assert len(_hcom(graph)) == 3

"""NpuSession end to end: training matches stock TF, state survives growth, names map back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.runtime.conftest import npu_config, tf

pytestmark = pytest.mark.tf


def _mlp(seed: int = 1) -> dict[str, Any]:
    """A small MLP classifier trained with Adam; returns its graph and tensors."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(seed)
        x = tf.compat.v1.placeholder(tf.float32, [None, 8], name="x")
        y = tf.compat.v1.placeholder(tf.int32, [None], name="y")
        w1 = tf.compat.v1.get_variable("w1", [8, 16])
        b1 = tf.compat.v1.get_variable("b1", [16], initializer=tf.compat.v1.zeros_initializer())
        w2 = tf.compat.v1.get_variable("w2", [16, 4])
        b2 = tf.compat.v1.get_variable("b2", [4], initializer=tf.compat.v1.zeros_initializer())
        hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1))
        logits = tf.nn.bias_add(tf.matmul(hidden, w2), b2, name="logits")
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss"
        )
        step = tf.compat.v1.train.get_or_create_global_step()
        train = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
        init = tf.compat.v1.global_variables_initializer()
    rng = np.random.RandomState(0)
    feed = {x: rng.randn(32, 8).astype(np.float32), y: rng.randint(0, 4, 32)}
    return {
        "graph": graph,
        "loss": loss,
        "train": train,
        "init": init,
        "feed": feed,
        "step": step,
        "w1": w1,
    }


def _train(model: dict[str, Any], config: Any, steps: int = 30) -> float:
    with tf.compat.v1.Session(graph=model["graph"], config=config) as sess:
        sess.run(model["init"])
        for _ in range(steps):
            loss, _ = sess.run([model["loss"], model["train"]], model["feed"])
    return float(loss)


def test_must_keep_origin_dtype_trains_bit_identically_to_stock() -> None:
    model = _mlp()
    stock = _train(model, None)
    npu = _train(model, npu_config(precision_mode="must_keep_origin_dtype"))
    assert npu == stock


def test_steps_count_runs_that_apply_gradients() -> None:
    from tf2npu.runtime import run_stats

    model = _mlp()
    with tf.compat.v1.Session(graph=model["graph"], config=npu_config()) as sess:
        sess.run(model["init"])
        for _ in range(4):
            sess.run(model["train"], model["feed"])
        sess.run(model["loss"], model["feed"])
    assert run_stats().steps == 4
    assert run_stats().sessions == 1 and run_stats().graphs_compiled == 1


def test_state_survives_graph_growth() -> None:
    graph = tf.Graph()
    with graph.as_default():
        v = tf.compat.v1.get_variable("v", [3], initializer=tf.compat.v1.ones_initializer())
        sess = tf.compat.v1.Session(config=npu_config())
        sess.run(tf.compat.v1.global_variables_initializer())  # built after the session
        bump = tf.compat.v1.assign_add(v, [1.0, 1.0, 1.0])
        for _ in range(3):
            sess.run(bump)
        late = tf.identity(v * 2.0, name="late")  # created after three runs
        np.testing.assert_array_equal(sess.run(late), [8.0, 8.0, 8.0])
        assert [r.imported_nodes for r in sess.mirror.syncs][-1] < len(graph.as_graph_def().node)
        sess.close()


def test_a_checkpoint_saved_by_an_npu_session_restores_bit_identically_in_a_stock_one(
    tmp_path: Path,
) -> None:
    model = _mlp()
    with model["graph"].as_default():
        saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session(graph=model["graph"], config=npu_config()) as sess:
        sess.run(model["init"])
        sess.run(model["train"], model["feed"])
        saved = sess.run(model["w1"])
        path = saver.save(sess, str(tmp_path / "model"))
    with tf.compat.v1.Session(graph=model["graph"]) as stock:
        saver.restore(stock, path)
        np.testing.assert_array_equal(stock.run(model["w1"]), saved)


def test_a_run_time_error_names_the_users_op() -> None:
    graph = tf.Graph()
    with graph.as_default():
        value = tf.compat.v1.placeholder(tf.float32, [], name="value")
        check = tf.raw_ops.Assert(condition=value > 0, data=["must be positive"], name="my_check")
        sess = tf.compat.v1.Session(config=npu_config())
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be positive") as err:
            sess.run(check, {value: -1.0})
        sess.close()
    assert err.value.op is not None and err.value.op.graph is graph
    assert err.value.op.name == "my_check"
    assert "test_session.py" in err.value.message and "was created at" in err.value.message


def test_make_callable_and_partial_run() -> None:
    graph = tf.Graph()
    with graph.as_default():
        a = tf.compat.v1.placeholder(tf.float32, [], name="a")
        b = tf.compat.v1.placeholder(tf.float32, [], name="b")
        total = a + b
        product = total * 3.0
        with tf.compat.v1.Session(config=npu_config()) as sess:
            constant = sess.make_callable(tf.constant(5.0) * 2.0)
            assert constant() == 10.0
            fed = sess.make_callable(total, feed_list=[a, b])
            assert fed(1.0, 2.0) == 3.0
            handle = sess.partial_run_setup([total, product], [a, b])
            assert sess.partial_run(handle, total, {a: 1.0, b: 2.0}) == 3.0
            assert sess.partial_run(handle, product) == 9.0


def test_monitored_training_session_with_a_scaffold(tmp_path: Path) -> None:
    model = _mlp()
    seen: list[Any] = []
    with model["graph"].as_default():
        scaffold = tf.compat.v1.train.Scaffold(init_fn=lambda _scaffold, sess: seen.append(sess))
        hooks = [tf.compat.v1.train.StopAtStepHook(last_step=5)]
        with tf.compat.v1.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path), scaffold=scaffold, hooks=hooks, config=npu_config()
        ) as sess:
            while not sess.should_stop():
                sess.run(model["train"], model["feed"])
    from tf2npu.runtime.session import NpuSession

    assert len(seen) == 1 and isinstance(seen[0], NpuSession)
    assert list(tmp_path.glob("model.ckpt-5.index"))


@pytest.mark.slow
def test_estimator_train_evaluate_predict(tmp_path: Path) -> None:
    from tf2npu.runtime import run_stats

    def model_fn(features: Any, labels: Any, mode: Any) -> Any:
        logits = tf.compat.v1.layers.dense(features["x"], 2)
        predictions = {"class": tf.argmax(logits, 1)}
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions=predictions)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        train = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step()
        )
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)

    x = np.random.RandomState(0).randn(64, 4).astype(np.float32)
    labels = (x[:, 0] > 0).astype(np.int32)

    def input_fn() -> Any:
        data = tf.compat.v1.data.Dataset.from_tensor_slices(({"x": x}, labels))
        return data.repeat().batch(16)

    config = tf.estimator.RunConfig(model_dir=str(tmp_path), session_config=npu_config())
    estimator = tf.estimator.Estimator(model_fn, config=config)
    estimator.train(input_fn, steps=30)
    metrics = estimator.evaluate(input_fn, steps=2)
    assert metrics["global_step"] == 30 and metrics["loss"] < 0.5
    predictions = estimator.predict(lambda: tf.compat.v1.data.Dataset.from_tensors({"x": x}))
    assert sum(1 for _ in predictions) == 64
    assert run_stats().sessions == 3 and run_stats().steps == 30


def test_keras_with_set_session_trains() -> None:
    graph = tf.Graph()
    with graph.as_default():
        sess = tf.compat.v1.Session(config=npu_config())
        tf.compat.v1.keras.backend.set_session(sess)
        model = tf.compat.v1.keras.Sequential(
            [
                tf.compat.v1.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                tf.compat.v1.keras.layers.Dense(2),
            ]
        )
        model.compile("adam", tf.compat.v1.keras.losses.SparseCategoricalCrossentropy(True))
        x = np.random.RandomState(0).randn(64, 4).astype(np.float32)
        y = (x[:, 0] > 0).astype(np.int32)
        history = model.fit(x, y, epochs=5, batch_size=16, verbose=0)
        assert history.history["loss"][-1] < history.history["loss"][0]
        assert model.predict(x[:5]).shape == (5, 2)
        assert len(sess.mirror.syncs) >= 2
        sess.close()


def test_mixed_compute_runs_a_py_func_on_the_host_between_geops(tmp_path: Path) -> None:
    from tf2npu.runtime import configure, run_stats

    configure(report_dir=tmp_path)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant([[1.0, -2.0]], name="x")
        first = tf.nn.relu(tf.matmul(x, tf.ones([2, 2])), name="first")
        doubled = tf.compat.v1.py_func(lambda a: a * 2.0, [first], tf.float32, name="twice")
        doubled.set_shape([1, 2])
        out = tf.matmul(doubled, tf.ones([2, 1]), name="out")
        with tf.compat.v1.Session(config=npu_config(mix_compile_mode=True)) as sess:
            np.testing.assert_allclose(sess.run(out), [[0.0]])
            summary = sess.mirror.last_summary
    assert len(summary.geops) == 2
    assert any(op.name == "twice" for op in summary.host_ops)
    assert (tmp_path / "check_result.tf.json").exists()
    assert run_stats().geops == 2


def test_print_model_writes_the_subgraph_dumps(tmp_path: Path, monkeypatch: Any) -> None:
    from tf2npu.runtime import configure

    monkeypatch.setenv("PRINT_MODEL", "1")
    configure(report_dir=tmp_path)
    model = _mlp()
    _train(model, npu_config(), steps=1)
    assert list(tmp_path.glob("BeforeSubGraph_*.pbtxt"))
    assert list(tmp_path.glob("AfterSubGraph_*.pbtxt"))


def test_xla_execution_trains_like_host_execution() -> None:
    from tf2npu.runtime import configure

    model = _mlp()
    host = _train(model, npu_config(precision_mode="must_keep_origin_dtype"), steps=10)
    configure(execution="xla")
    config = npu_config(precision_mode="must_keep_origin_dtype")
    with tf.compat.v1.Session(graph=model["graph"], config=config) as sess:
        sess.run(model["init"])
        for _ in range(10):
            xla, _ = sess.run([model["loss"], model["train"]], model["feed"])
        marked = [
            op for op in sess.mirror.graph.get_operations() if "_XlaCompile" in op.node_def.attr
        ]
    assert marked and all(op.type != "VariableV2" for op in marked)
    assert float(xla) == pytest.approx(host, rel=1e-4)


def test_allow_mix_precision_trains_within_two_percent_and_inserts_casts() -> None:
    from tf2npu.runtime import run_stats

    model = _mlp()
    stock = _train(model, None)
    mixed = _train(model, npu_config(precision_mode="allow_mix_precision"))
    assert mixed == pytest.approx(stock, rel=0.02)
    assert run_stats().casts_inserted > 0
    assert run_stats().fusions["matmul_biasadd"] > 0


def test_a_small_change_goes_through_the_engine_on_its_own() -> None:
    """Ops added to a large graph are compiled with stubs for what they read (runtime.delta)."""
    from tf2npu.runtime import run_stats

    graph = tf.Graph()
    with graph.as_default():
        v = tf.compat.v1.get_variable("v", [4], initializer=tf.compat.v1.ones_initializer())
        h = tf.identity(v)
        for _ in range(30):
            h = tf.nn.relu(h * 1.5 + 0.5)
        top, index = tf.math.top_k(h, k=2)
        sess = tf.compat.v1.Session(config=npu_config())
        sess.run(tf.compat.v1.global_variables_initializer())
        sess.run(tf.compat.v1.assign_add(v, [1.0, 1.0, 1.0, 1.0]))  # small: incremental
        scaled = tf.identity(h * 2.0, name="scaled")
        with tf.control_dependencies([top]):
            later = tf.identity(v + 1.0, name="later")
        np.testing.assert_allclose(sess.run(later), [3.0] * 4)
        want = sess.run(h)
        np.testing.assert_allclose(sess.run(scaled), want * 2.0)
        index_plus = index + 1  # reads output 1 of an earlier op: a stub cannot stand in
        assert sess.run(index_plus).shape == (2,)
        records = sess.mirror.syncs
        sess.close()
    assert [r.incremental for r in records] == [False, True, True, False]
    assert records[2].imported_nodes < 20
    stats = run_stats()
    assert stats.graphs_compiled == 4 and stats.host_ops < 10


def test_a_small_change_reads_what_replaced_an_earlier_node() -> None:
    """Under allow_mix_precision the MatMul runs in float16 behind a cast back; a later op
    reading it must read the cast back, as the earlier readers do."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(np.ones((2, 3), np.float32))
        w = tf.compat.v1.get_variable("w", [3, 3], initializer=tf.compat.v1.ones_initializer())
        h = tf.matmul(x, w, name="product")
        for _ in range(30):
            h = tf.math.abs(h) + 0.0
        sess = tf.compat.v1.Session(config=npu_config(precision_mode="allow_mix_precision"))
        sess.run(tf.compat.v1.global_variables_initializer())
        sess.run(h)
        later = tf.identity(graph.get_tensor_by_name("product:0"), name="later")
        np.testing.assert_allclose(sess.run(later), np.full((2, 3), 3.0))
        node = sess.mirror.graph.get_operation_by_name("later")
        assert sess.mirror.syncs[-1].incremental
        assert node.inputs[0].op.name != "product"  # the replacement, not the original
        sess.close()


def test_the_inner_session_runs_where_the_instruments_session_target_says() -> None:
    # A multi-rank job moves it onto the rank's server this way (DistributedInstrument); the
    # hook sees the session's options (hccl_timeout) and a config without NpuOptimizer.
    from tf2npu.runtime import context
    from tf2npu.runtime.hook import has_npu_optimizer
    from tf2npu.runtime.instruments import RunInstrument, SessionInfo
    from tf2npu.runtime.session import NpuSession

    seen: list[Any] = []

    class _Threads(RunInstrument):
        def session_target(self, session: SessionInfo, target: str, config: Any) -> Any:
            seen.append((session.npu, session.options.hccl_timeout, has_npu_optimizer(config)))
            config.inter_op_parallelism_threads = 3
            return target, config

    context().extra_instruments.append(_Threads())
    with tf.Graph().as_default():
        sess = NpuSession(config=npu_config(hccl_timeout=40))
        assert sess._inner._config.inter_op_parallelism_threads == 3
        assert sess._config.inter_op_parallelism_threads == 0  # the client session's: as given
        sess.close()
        NpuSession(config=npu_config()).close()
    assert seen == [(True, 40, False), (True, None, False)]

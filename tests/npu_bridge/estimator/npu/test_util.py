"""util: iteration-offload variables and IterationOp, validators, graph-exec attrs, rank size."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu import util  # noqa: E402

pytestmark = pytest.mark.tf


def _train_graph():
    step = tf.compat.v1.train.get_or_create_global_step()
    return step, tf.compat.v1.assign_add(step, 1).op


def _loop_values(sess):
    names = ["iterations_per_loop", "loop_cond", "zero", "one"]
    graph = sess.graph
    variables = [graph.get_collection(f"npu_runconfig_{n}")[0] for n in names]
    return [sess.run(v) for v in variables], variables


def test_n_equal_1_returns_train_op_and_creates_nothing() -> None:
    with tf.Graph().as_default() as graph:
        _, train_op = _train_graph()
        with tf.compat.v1.Session() as sess:
            assert util.set_iteration_per_loop(sess, train_op, 1) is train_op
        assert graph.get_collection("npu_runconfig_iterations_per_loop") == []


def test_n_greater_1_creates_and_loads_the_four_variables() -> None:
    with tf.Graph().as_default() as graph:
        _, train_op = _train_graph()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            op = util.set_iteration_per_loop(sess, train_op, 10)
            values, variables = _loop_values(sess)
        assert op.name == "IterationOp"
        assert op.type == "NoOp"
        assert train_op in op.control_inputs
        assert values == [9, 0, 0, 1]
        assert [v.name for v in variables] == [
            "npu_runconfig/iterations_per_loop:0",
            "npu_runconfig/loop_cond:0",
            "npu_runconfig/zero:0",
            "npu_runconfig/one:0",
        ]
        assert all(v.dtype.base_dtype == tf.int64 for v in variables)
        assert all(v.op.type == "VarHandleOp" for v in variables)  # resource variables
        local = graph.get_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES)
        assert set(variables) <= set(local)
        assert not set(variables) & set(tf.compat.v1.trainable_variables())


def test_calling_twice_reuses_the_variables() -> None:
    with tf.Graph().as_default() as graph:
        _, train_op = _train_graph()
        with tf.compat.v1.Session() as sess:
            util.set_iteration_per_loop(sess, train_op, 3)
            util.set_iteration_per_loop(sess, train_op, 5)
            values, _ = _loop_values(sess)
        assert values == [4, 0, 0, 1]
        assert len(graph.get_collection("npu_runconfig_one")) == 1


def test_rejects_a_tensor_train_op() -> None:
    with tf.Graph().as_default():
        step, _ = _train_graph()
        with (
            tf.compat.v1.Session() as sess,
            pytest.raises(ValueError, match=r"not an Operation.*tensor\.op"),
        ):
            util.set_iteration_per_loop(sess, step.read_value(), 2)


@pytest.mark.parametrize(
    ("n", "error", "message"),
    [
        (0, ValueError, "iterations_per_loop=0 must be positive"),
        (-3, ValueError, "iterations_per_loop=-3 must be positive"),
        ("2", TypeError, r"iterations_per_loop='2' \(str\) must be an int"),
        (2.0, TypeError, r"\(float\) must be an int"),
        (True, TypeError, r"\(bool\) must be an int"),
    ],
)
def test_rejects_bad_iteration_counts(n, error, message) -> None:
    with tf.Graph().as_default():
        _, train_op = _train_graph()
        with tf.compat.v1.Session() as sess, pytest.raises(error, match=message):
            util.set_iteration_per_loop(sess, train_op, n)


def test_iteration_per_loop_in_two_steps() -> None:
    with tf.Graph().as_default():
        _, train_op = _train_graph()
        loop = util.IterationPerLoop()
        op = loop.create_iteration_per_loop_var(train_op)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            loop.load_iteration_per_loop_var(sess, 4)
            values, _ = _loop_values(sess)
        assert op.name == "IterationOp"
        assert values == [3, 0, 0, 1]


def test_load_before_create_is_an_error() -> None:
    with (
        tf.Graph().as_default(),
        tf.compat.v1.Session() as sess,
        pytest.raises(RuntimeError, match="call create_iteration_per_loop_var"),
    ):
        util.IterationPerLoop().load_iteration_per_loop_var(sess, 2)


def test_variable_initializer_in_host_is_named_var_in_host() -> None:
    with tf.Graph().as_default():
        v = tf.compat.v1.Variable(3.0)
        op = util.variable_initializer_in_host([v])
        assert op.name == "var_in_host"
        with tf.compat.v1.Session() as sess:
            sess.run(op)
            assert sess.run(v) == 3.0


def test_set_graph_exec_config_sets_the_attrs() -> None:
    with tf.Graph().as_default():
        x = tf.constant(1.0, name="x")
        y = tf.identity(x, name="y")
        out = util.set_graph_exec_config(
            [x, y.op], True, "lazy_recompile", "data:[1~4]", is_train_graph=True
        )
        assert out == [x, y.op]
        for op in (x.op, y.op):
            assert op.get_attr("_graph_dynamic_input") is True
            assert op.get_attr("_graph_dynamic_graph_execute_mode") == b"lazy_recompile"
            assert op.get_attr("_graph_dynamic_inputs_shape_range") == b"data:[1~4]"
            assert op.get_attr("_is_train_graph") is True
        assert util.set_graph_exec_config("x:0") is x


def test_set_graph_exec_config_rejects_bad_mode_and_fetch() -> None:
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        with pytest.raises(ValueError, match="use one of: lazy_recompile, dynamic_execute"):
            util.set_graph_exec_config(x, dynamic_graph_execute_mode="static")
        with pytest.raises(ValueError, match="fetch item 3 is a int"):
            util.set_graph_exec_config([3])


def test_keep_tensors_dtypes() -> None:
    with tf.Graph().as_default() as graph:
        tf.identity(tf.constant(1.0), name="keep")
        util.keep_tensors_dtypes(graph, ["keep:0"])
        assert graph.get_operation_by_name("keep").get_attr("_keep_dtype") == 1
        with pytest.raises(ValueError, match="must be a list or tuple"):
            util.keep_tensors_dtypes(graph, "keep:0")
        with pytest.raises(ValueError, match=r"must be a tf\.Graph"):
            util.keep_tensors_dtypes(None, ["keep:0"])


def test_npu_compile_runs_the_fetches() -> None:
    with tf.Graph().as_default():
        v = tf.compat.v1.Variable(1.0)
        with tf.compat.v1.Session() as sess:
            util.npu_compile(sess, v.initializer)
            assert sess.run(v) == 1.0


@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, "1"), ({"RANK_SIZE": "8"}, "8"), ({"CM_WORKER_SIZE": "4"}, "4")],
)
def test_get_ranksize(monkeypatch, env, expected) -> None:
    monkeypatch.delenv("RANK_SIZE", raising=False)
    monkeypatch.delenv("CM_WORKER_SIZE", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert util.get_ranksize() == expected


def test_get_ranksize_rejects_both(monkeypatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "2")
    monkeypatch.setenv("CM_WORKER_SIZE", "2")
    with pytest.raises(ValueError, match="both set; unset one of them"):
        util.get_ranksize()


def test_global_dict() -> None:
    util.global_dict_init()
    try:
        assert util.get_value("k", "default") == "default"
        util.set_value("k", 5)
        assert util.get_value("k") == 5
    finally:
        util.global_dict_init()
    assert util.get_value("k") is None


def test_validators() -> None:
    assert util.convert_bool_to_int(True) == 1
    assert util.convert_bool_to_int(False) == 0
    assert util.convert_bool_to_int(None) == -1
    assert util.format_string(None, "x") == ""
    assert util.check_profiling_options(["training_trace", "op_trace"]) == (
        "training_trace:op_trace"
    )
    with pytest.raises(ValueError, match="training_trace, task_trace, op_trace"):
        util.check_profiling_options(["bad"])
    with pytest.raises(TypeError, match="must be a string"):
        util.format_string(3, "x")
    with pytest.raises(TypeError, match="must be True or False"):
        util.check_bool_type(1, "flag")
    with pytest.raises(ValueError, match="must not be None"):
        util.check_not_none(None, "thing")
    with pytest.raises(ValueError, match="must be non-negative"):
        util.check_nonnegative_integer(-1, "n")
    util.check_aoe_mode("2")
    with pytest.raises(ValueError, match="aoe_mode='5'"):
        util.check_aoe_mode("5")
    with pytest.raises(ValueError, match="mstune_mode=1"):
        util.check_mstune_mode(1)


def test_check_path(tmp_path) -> None:
    assert util.check_path(str(tmp_path)) == str(tmp_path.resolve())
    with pytest.raises(ValueError, match="does not exist"):
        util.check_path(str(tmp_path / "missing"))
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="is not a directory"):
        util.check_path(str(tmp_path / "f"))


def test_runtime_runs_iteration_op_n_times_per_run() -> None:
    """The contract with tf2npu's runtime: one run of IterationOp = N training steps."""
    import npu_bridge  # noqa: F401  (installs the session hook)
    from tf2npu import runtime

    assert runtime.is_installed()
    with tf.Graph().as_default():
        step, train_op = _train_graph()
        config = tf.compat.v1.ConfigProto()
        entry = config.graph_options.rewrite_options.custom_optimizers.add()
        entry.name = "NpuOptimizer"
        entry.parameter_map["iterations_per_loop"].i = 5
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            op = util.set_iteration_per_loop(sess, train_op, 5)
            sess.run(op)
            assert sess.run(step) == 5
            sess.run(op)
            assert sess.run(step) == 10

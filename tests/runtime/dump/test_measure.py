"""``dump_data=stats`` inside the run (tf2npu.runtime.dump.measure): the figures the graph
computes make the rows the numpy path (``artifacts.dump.tensor_stats``) makes, measured by the
statistics op and by TensorFlow's reductions alike (``how``: every test runs both)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from tests.runtime.conftest import tf

from tf2npu.artifacts import dump as dumpfile
from tf2npu.runtime.dump import measure, stats_op

pytestmark = pytest.mark.tf

OP = measure.Method(stats_op.load().op, stats_op.load().why_not)


@pytest.fixture(params=["op", "reductions"])
def how(request: pytest.FixtureRequest) -> measure.Method:
    """Each way of measuring; the op's tests skip, saying why, where it is not built."""
    if request.param == "reductions":
        return measure.REDUCTIONS
    if OP.op is None:
        pytest.skip(f"the statistics op is not loaded: {OP.why_not}")
    return OP


def _rows(arrays: list[Any], how: measure.Method) -> list[Any]:
    """Each array through a graph (an identity of a constant, so the tensor is computed) and
    :class:`measure.StatsPlan`, as the dump's hook does."""
    graph = tf.Graph()
    with graph.as_default():
        tensors = [tf.identity(tf.constant(a)) for a in arrays]
        plan = measure.StatsPlan.of(tensors, {}, how)
    with tf.compat.v1.Session(graph=graph) as sess:
        values = sess.run(list(plan.fetches))
    rows, shapes = plan.decode(values)
    assert shapes == [tuple(np.shape(a)) for a in arrays]
    return rows


def test_a_literal_float32_tensor_has_the_numpy_row_exactly(how: measure.Method) -> None:
    array = np.array([[1.0, -3.0], [0.0, 2.5]], dtype=np.float32)
    [row] = _rows([array], how)
    assert row.row() == [
        "Output", "0", "16", "DT_FLOAT", "ND", "2x2", "2.5", "-3.0", "0.125", "4", "0", "0",
        "0", "1", repr(math.sqrt(16.25)),
    ]  # fmt: skip
    assert row == dumpfile.tensor_stats("output", 0, array)


@pytest.mark.parametrize(
    "array",
    [
        np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -2.0, -0.0], dtype=np.float32),
        np.array([[1.0, -3.0], [np.nan, np.inf]], dtype=np.float16),
        np.array([np.inf, -np.inf, 1.5], dtype=np.float64),
        np.full(4, np.nan, dtype=np.float32),
        np.zeros((3, 0), dtype=np.float32),
        np.float32(-4.0),
        np.array([3e30, -4e30, 0.0], dtype=np.float32),  # squares overflow float32
    ],
    ids=["nan-inf-zeros", "float16", "float64", "all-nan", "empty", "scalar", "overflow"],
)
def test_non_finite_empty_and_overflowing_tensors_have_the_numpy_row_exactly(
    array: Any, how: measure.Method
) -> None:
    [row] = _rows([array], how)
    assert row.row() == dumpfile.tensor_stats("output", 0, array).row()


def _close(got: float, want: float, scale: float) -> bool:
    return got == want or abs(got - want) <= 1e-6 * scale


def _bert_like() -> list[Any]:
    rng = np.random.default_rng(0)
    hidden = rng.standard_normal((1024, 256)).astype(np.float32)
    normed = (hidden - hidden.mean(-1, keepdims=True)) / hidden.std(-1, keepdims=True)
    probs = np.exp(rng.standard_normal((2, 4, 128, 128))).astype(np.float32)
    probs /= probs.sum(-1, keepdims=True)
    relu = np.maximum(rng.standard_normal((512, 1024)).astype(np.float32), 0)
    grads = (rng.standard_normal((1024, 256)) * 1e-6).astype(np.float16)
    with_nan = hidden.copy()
    with_nan[100:103, 7] = [np.nan, np.inf, -np.inf]
    return [hidden, normed, probs, relu, grads, hidden.astype(np.float64), with_nan]


def test_bert_like_tensors_agree_within_float32_rounding_of_the_sums(
    how: measure.Method,
) -> None:
    arrays = _bert_like()
    for array, row in zip(arrays, _rows(arrays, how), strict=True):
        want = dumpfile.tensor_stats("output", 0, array)
        exact = ("kind", "index", "size", "dtype", "shape", "max", "min", "count", "nan")
        exact += ("neg_inf", "pos_inf", "zero")
        assert [getattr(row, f) for f in exact] == [getattr(want, f) for f in exact]
        mean_abs = float(np.abs(array.astype(np.float64))[np.isfinite(array)].mean())
        assert _close(row.mean, want.mean, mean_abs), (array.shape, row.mean, want.mean)
        assert _close(row.l2norm, want.l2norm, want.l2norm), (array.shape, row.l2norm)


def test_the_op_and_the_reductions_agree_within_float32_rounding_of_the_sums() -> None:
    if OP.op is None:
        pytest.skip(f"the statistics op is not loaded: {OP.why_not}")
    arrays = _bert_like()
    exact = ("max", "min", "count", "nan", "neg_inf", "pos_inf", "zero")
    for array, op, tf_row in zip(
        arrays, _rows(arrays, OP), _rows(arrays, measure.REDUCTIONS), strict=True
    ):
        assert [getattr(op, f) for f in exact] == [getattr(tf_row, f) for f in exact]
        scale = float(np.abs(array.astype(np.float64))[np.isfinite(array)].mean())
        assert _close(op.mean, tf_row.mean, 2 * scale), (array.shape, op.mean, tf_row.mean)
        assert _close(op.l2norm, tf_row.l2norm, 2 * tf_row.l2norm), (array.shape, op.l2norm)


def test_a_subnormal_is_measured_exactly_by_the_op_only() -> None:
    """TensorFlow's threads treat denormal inputs as zero: its reductions count a subnormal as
    a zero and miss it as the minimum (the limit docs/dumps.md states for the fallback)."""
    tiny = np.float32(1e-45)
    array = np.array([1.0, -tiny, 0.0, tiny, 2.5], dtype=np.float32)
    [reduced] = _rows([array], measure.REDUCTIONS)
    assert (reduced.min, reduced.zero) == (0.0, 3)
    if OP.op is None:
        pytest.skip(f"the statistics op is not loaded: {OP.why_not}")
    [row] = _rows([array], OP)
    assert row == dumpfile.tensor_stats("output", 0, array)
    assert (row.min, row.zero) == (-float(tiny), 1)


def test_the_plan_says_what_measured() -> None:
    graph = tf.Graph()
    with graph.as_default():
        floats = measure.StatsPlan.of([tf.identity(tf.constant([1.0]))], {}, measure.REDUCTIONS)
        ints = measure.StatsPlan.of([tf.identity(tf.constant([1]))], {}, measure.REDUCTIONS)
    assert floats.statistics == "TensorFlow reductions (five passes): chosen by the caller"
    assert ints.statistics == ""  # nothing measured in the run
    assert measure.Method(print).label == "tensor_stats op (one pass)"


def test_integers_and_bools_are_fetched_whole_and_measured_by_numpy() -> None:
    arrays = [np.arange(6, dtype=np.int32).reshape(2, 3), np.array([True, False])]
    graph = tf.Graph()
    with graph.as_default():
        tensors = [tf.identity(tf.constant(a)) for a in arrays]
        plan = measure.StatsPlan.of(tensors, {})
    assert plan.fetches == tuple(tensors)
    with tf.compat.v1.Session(graph=graph) as sess:
        values = sess.run(list(plan.fetches))
    rows, _ = plan.decode(values)
    for array, value in zip(arrays, rows, strict=True):
        assert isinstance(value, np.ndarray) and (value == array).all()


def test_a_shape_the_graph_does_not_know_is_fetched(how: measure.Method) -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3])
        y = tf.nn.relu(x)
        plan = measure.StatsPlan.of([y], {}, how)
    assert len(plan.fetches) == 3  # figures, zero counts, the shape
    with tf.compat.v1.Session(graph=graph) as sess:
        values = sess.run(list(plan.fetches), {x: -np.ones((5, 3), np.float32)})
    [row], [shape] = plan.decode(values)
    assert shape == (5, 3) and row.shape == (5, 3) and row.count == 15 and row.zero == 15
    assert row.size == 60 and row.max == 0.0


def test_a_tensor_planned_twice_is_measured_by_the_same_ops(how: measure.Method) -> None:
    graph = tf.Graph()
    with graph.as_default():
        y = tf.identity(tf.constant([1.0, 2.0]), name="y")
        made: dict[str, Any] = {}
        measure.StatsPlan.of([y], made, how)
        count = len(graph.get_operations())
        measure.StatsPlan.of([y], made, how)
    assert list(made) == ["y:0"]
    assert len(graph.get_operations()) == count + 2  # a new pack of the same figures
    assert any(op.name == "y/_tf2npu_stats_0" for op in graph.get_operations())


def test_a_reshape_transpose_or_identity_of_a_dumped_tensor_is_measured_once(
    how: measure.Method,
) -> None:
    array = np.array([[1.0, -3.0, 0.0], [2.5, 0.0, 4.0]], dtype=np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.identity(tf.constant(array), name="x")
        moved = tf.transpose(tf.reshape(x, [3, 2]), name="moved")
        alone = tf.reshape(tf.constant(array), [6], name="alone")  # its source is not dumped
        made: dict[str, Any] = {}
        plan = measure.StatsPlan.of([x, moved, moved.op.inputs[0], alone], made, how)
    assert sorted(made) == ["alone:0", "x:0"]
    with tf.compat.v1.Session(graph=graph) as sess:
        rows, shapes = plan.decode(sess.run(list(plan.fetches)))
    assert shapes == [(2, 3), (2, 3), (3, 2), (6,)]
    for row, shape in zip(rows, shapes, strict=True):
        assert row == dumpfile.tensor_stats("output", 0, array.reshape(shape))

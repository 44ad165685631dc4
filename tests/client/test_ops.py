"""client.ops: an NPU op as a function call a stock session runs, with its encoding and gradient."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf2npu.client.ops import CLIENT_OPS, GRADIENT_ATTR, ClientOp, emit
from tf2npu.errors import InternalError
from tf2npu.graph.npu_ops import FUNCTION_SUFFIX, NPU_OPS
from tf2npu.graph.npu_ops.dropout import mask_bytes
from tf2npu.graph.npu_ops.nodes import NPU_ATTR_PREFIX, NPU_OP_ATTR

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

X = np.array([[-3.0, -1.0, -0.25, 0.0], [0.5, 1.0, 2.0, 5.0]], np.float32)
C = math.sqrt(2.0 / math.pi)


def _gelu_np(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + np.tanh(C * (x + 0.044715 * x**3)))


def _gelu_slope_np(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    t = np.tanh(C * (x + 0.044715 * x**3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * C * (1.0 + 3 * 0.044715 * x * x)


def test_gelu_is_a_marked_call_that_runs_in_a_stock_session() -> None:
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [2, 4], name="x")
        (y,) = emit("Gelu", [x])
        assert y.op.name == "Gelu" and y.shape.as_list() == [2, 4] and y.dtype == tf.float32
        assert y.op.type.startswith("Gelu_DT_FLOAT_") and y.op.type.endswith(FUNCTION_SUFFIX)
        attrs = dict(y.op.node_def.attr)
        assert set(attrs) == {NPU_OP_ATTR, NPU_ATTR_PREFIX + "T", GRADIENT_ATTR}
        assert attrs[NPU_OP_ATTR].s == b"Gelu"
        assert attrs[NPU_ATTR_PREFIX + "T"].type == tf.float32.as_datatype_enum
        assert attrs[GRADIENT_ATTR].s == b"tf2npu:Gelu"
        with tf.compat.v1.Session(graph=graph) as session:
            value = session.run(y, {x: X})
    np.testing.assert_allclose(value, _gelu_np(X), rtol=1e-6, atol=1e-6)


def test_one_library_function_per_op_dtype_and_attrs() -> None:
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [3])
        a, b = emit("Gelu", [x])[0], emit("Gelu", [x], name="second")[0]
        c = emit("Gelu", [tf.cast(x, tf.float16)])[0]
        library = [f.signature.name for f in graph.as_graph_def().library.function]
    assert a.op.type == b.op.type != c.op.type
    assert sorted(library) == sorted({a.op.type, c.op.type})
    assert b.op.name == "second" and c.dtype == tf.float16


def test_gelu_gradient_is_gelu_grad_with_the_closed_form_value() -> None:
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [2, 4])
        (y,) = emit("Gelu", [x])
        (dx,) = tf.gradients(y * 3.0, x)
        assert dx.op.get_attr(NPU_OP_ATTR) == b"GeluGrad"
        assert [t.name for t in dx.op.inputs[1:]] == [x.name, y.name]
        with tf.compat.v1.Session(graph=graph) as session:
            value = session.run(dx, {x: X})
    np.testing.assert_allclose(value, 3.0 * _gelu_slope_np(X), rtol=1e-5, atol=1e-6)


@tf.RegisterGradient("test_client_gelu_passes_the_gradient")
def _pass_through(op, grad):  # type: ignore[no-untyped-def]
    return grad


def test_a_gradient_override_map_keyed_by_the_npu_op_type_applies() -> None:
    # Model-parallel scripts (Megatron style) override HcomAllReduce's gradient this way.
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [2, 4])
        with graph.gradient_override_map({"Gelu": "test_client_gelu_passes_the_gradient"}):
            (y,) = emit("Gelu", [x])
        (z,) = emit("Gelu", [x])  # outside the map: tf2npu's GeluGrad
        assert y.op.get_attr(GRADIENT_ATTR) == b"test_client_gelu_passes_the_gradient"
        assert z.op.get_attr(GRADIENT_ATTR) == b"tf2npu:Gelu"
        (dx,) = tf.gradients(y * 3.0, x)
        with tf.compat.v1.Session(graph=graph) as session:
            value = session.run(dx, {x: X})
    np.testing.assert_array_equal(value, np.full_like(X, 3.0))


def test_do_mask_gradient_reuses_the_mask_and_the_mask_has_none() -> None:
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [64, 64])
        (mask,) = emit("DropOutGenMask", [tf.shape(x), 0.5])
        (y,) = emit("DropOutDoMask", [x, mask, 0.5])
        assert mask.dtype == tf.uint8 and mask.shape.as_list() == [mask_bytes(64 * 64)]
        dx, dmask = tf.gradients(y, [x, mask])
        assert dmask is None
        assert dx.op.get_attr(NPU_OP_ATTR) == b"DropOutDoMask" and dx.op.inputs[1] is mask
        with tf.compat.v1.Session(graph=graph) as session:
            out, grad = session.run([y, dx], {x: np.ones((64, 64), np.float32)})
    assert set(np.unique(out)) == {0.0, 2.0}
    np.testing.assert_array_equal(grad, out)  # d(sum y)/dx = bit / keep_prob = y at x = 1


def test_ops_inside_a_while_loop_body_run_and_differentiate() -> None:
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [2, 4])
        _, y = tf.compat.v1.while_loop(
            lambda i, v: i < 2, lambda i, v: (i + 1, emit("Gelu", [v])[0]), [0, x]
        )
        (dx,) = tf.gradients(y, x)
        with tf.compat.v1.Session(graph=graph) as session:
            value, grad = session.run([y, dx], {x: X})
    once = _gelu_np(X)
    np.testing.assert_allclose(value, _gelu_np(once), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad, _gelu_slope_np(once) * _gelu_slope_np(X), rtol=1e-5, atol=1e-6)


def test_gelu_grad_has_no_gradient() -> None:
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4])
        (y,) = emit("Gelu", [x])
        (dx,) = tf.gradients(y, x)
        with pytest.raises(LookupError, match=r"NPU op GeluGrad .* has no gradient"):
            tf.gradients(dx, x)


def test_python_inputs_take_the_dtype_of_the_tensor_sharing_their_type_attr() -> None:
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float16, [8])
        (mask,) = emit("DropOutGenMask", [[8], 0.9], {"seed": 1, "seed2": 2})
        (y,) = emit("DropOutDoMask", [x, mask, 0.9])
    gen, do = mask.op, y.op
    assert gen.get_attr(NPU_ATTR_PREFIX + "T") == tf.float32  # a lone Python float: float32
    assert gen.get_attr(NPU_ATTR_PREFIX + "Tshape") == tf.int32
    assert (gen.get_attr(NPU_ATTR_PREFIX + "seed"), gen.get_attr(NPU_ATTR_PREFIX + "seed2")) == (
        1,
        2,
    )
    assert do.inputs[2].dtype == tf.float16 and do.get_attr(NPU_ATTR_PREFIX + "T") == tf.float16


def test_wrong_dtypes_are_type_errors_naming_the_input() -> None:
    with tf.Graph().as_default():
        x64 = tf.compat.v1.placeholder(tf.float64, [3])
        with pytest.raises(
            TypeError, match=r"Gelu: input 'x' is float64; it takes float32, float16"
        ):
            emit("Gelu", [x64])
        x = tf.compat.v1.placeholder(tf.float16, [3])
        prob = tf.constant(0.5, tf.float32)
        (mask,) = emit("DropOutGenMask", [[3], prob])
        with pytest.raises(TypeError, match=r"'keep_prob' is float32 but input 'x' is float16"):
            emit("DropOutDoMask", [x, mask, prob])
        with pytest.raises(TypeError, match=r"input 'mask' is int32, it must be uint8"):
            emit("DropOutDoMask", [x, tf.constant([1]), 0.5])


def test_caller_mistakes_are_internal_errors() -> None:
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3])
        with pytest.raises(InternalError, match=r"'Relu' is not an NPU op"):
            emit("Relu", [x])
        with pytest.raises(InternalError, match=r"got 2 inputs, expected 1 \(x\)"):
            emit("Gelu", [x, x])
        with pytest.raises(InternalError, match=r"unknown attr 'sed'"):
            emit("DropOutGenMask", [[3], 0.5], {"sed": 1})


def test_eager_execution_is_refused() -> None:
    from tensorflow.python.eager import context

    with (
        context.eager_mode(),
        pytest.raises(RuntimeError, match=r"Gelu can only be built in a graph"),
    ):
        emit("Gelu", [tf.constant([1.0])])


def test_every_catalogue_op_is_a_client_op_carrying_its_gradient() -> None:
    assert list(CLIENT_OPS) == list(NPU_OPS)
    assert all(CLIENT_OPS[name].definition is NPU_OPS[name] for name in NPU_OPS)
    assert CLIENT_OPS["Gelu"].gradient_key == "tf2npu:Gelu"
    constants = sorted(name for name, op in CLIENT_OPS.items() if op.gradient is None)
    assert constants == ["DropOutGenMask", "DropOutGenMaskV3"]
    none_as_on_the_device = ClientOp(NPU_OPS["GeluGrad"]).gradient
    differentiated = {
        name for name, op in CLIENT_OPS.items() if op.gradient not in (None, none_as_on_the_device)
    }
    assert differentiated == {
        "Gelu", "FastGelu", "DropOutDoMask", "DropOutDoMaskV3", "BasicLSTMCell", "DynamicRnn",
        "DynamicGruV2", "DynamicAUGRU", "HcomAllReduce",
    }  # fmt: skip


def test_the_first_emit_registers_every_gradient_with_tensorflow() -> None:
    from tensorflow.python.framework import ops

    with tf.Graph().as_default():
        emit("Gelu", [tf.constant([1.0])])
    registered = set(ops.gradient_registry.list())
    assert {op.gradient_key for op in CLIENT_OPS.values()} <= registered
    # a gradient without a function is TensorFlow's "not differentiable" (None), not a lookup
    assert ops.gradient_registry.lookup("tf2npu:DropOutGenMask") is None
    assert ops.gradient_registry.lookup("tf2npu:Gelu") is CLIENT_OPS["Gelu"].gradient

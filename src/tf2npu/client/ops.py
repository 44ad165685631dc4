"""Emit NPU ops into a user's TensorFlow graph, runnable by a stock session and differentiable.

``npu_bridge``'s op wrappers (``npu_ops.dropout``, ``npu_unary_ops.gelu``) and the collectives
(:mod:`tf2npu.client.hcom`) call :func:`emit`. Stock TensorFlow has no ``Gelu`` or
``DropOutDoMask`` op, so the node :func:`emit` adds is a call of the same monomorphic library
function :func:`~tf2npu.graph.npu_ops.materialize` would produce (``<Op>_<DT>_<digest>__tf2npu``,
traced from the op's CPU body, added to the graph's library once). A plain
``tf.compat.v1.Session`` therefore runs the script unchanged.

The call node says which NPU op it stands for in private attrs (TensorFlow ignores
``_``-prefixed attrs on a call), so the graph engine can turn it back into the NPU op
(:func:`~tf2npu.graph.npu_ops.recognize`):

* ``NPU_OP_ATTR`` (``_npu_op``, :mod:`tf2npu.graph.npu_ops.nodes`): the NPU op type, e.g.
  ``b"Gelu"``;
* ``NPU_ATTR_PREFIX`` + name (``_npu_attr_T``, ``_npu_attr_seed`` ...): every attr of the
  NPU op, ``T`` and the declared ones with defaults filled, as the op's own ``AttrValue``;
* ``_gradient_op_type`` = :data:`GRADIENT_PREFIX` + op type: TensorFlow's gradient lookup reads
  this attr before the op type, so the gradients registered here apply.

Each op's gradient is a field of the op as the client knows it (:class:`ClientOp`, in
:data:`CLIENT_OPS`): ``Gelu`` → ``GeluGrad``; ``DropOutDoMask`` → ``DropOutDoMask`` with the
same mask; the mask has none; ``BasicLSTMCell`` and the fused RNN ops → the derivative of their
CPU body; ``HcomAllReduce`` → the all-reduce of the gradient. The catalogue's definitions
(:mod:`tf2npu.graph.npu_ops`) do not carry it: they are the graph engine's, which imports no
TensorFlow client, and a gradient builds client nodes (:func:`emit`) and, for a collective,
reads the job's cluster.

TensorFlow is imported lazily: importing this module does not import it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from tf2npu.client.body_gradient import body_gradient
from tf2npu.client.groups import instance_key, require_cluster
from tf2npu.client.library import add_functions
from tf2npu.config.cluster import cpu_device
from tf2npu.errors import InternalError
from tf2npu.graph.npu_ops.catalogue import NPU_OPS
from tf2npu.graph.npu_ops.dropout import DROPOUT_DO_MASK, DROPOUT_GEN_MASK
from tf2npu.graph.npu_ops.dropout_v3 import DROPOUT_DO_MASK_V3, DROPOUT_GEN_MASK_V3
from tf2npu.graph.npu_ops.fast_gelu import FAST_GELU
from tf2npu.graph.npu_ops.gelu import GELU
from tf2npu.graph.npu_ops.gru import DYNAMIC_AUGRU, DYNAMIC_GRU_V2
from tf2npu.graph.npu_ops.hcom import HCOM_ALL_REDUCE
from tf2npu.graph.npu_ops.lstm import BASIC_LSTM_CELL, DYNAMIC_RNN
from tf2npu.graph.npu_ops.materialize import (
    function_name,
    traced_dependencies,
    traced_function_def,
)
from tf2npu.graph.npu_ops.nodes import NPU_ATTR_PREFIX, NPU_OP_ATTR
from tf2npu.graph.npu_ops.opdef import TYPE_ATTR, NpuOpDef, build_attrs

__all__ = [
    "CLIENT_OPS",
    "GRADIENT_ATTR",
    "GRADIENT_PREFIX",
    "ClientOp",
    "emit",
]

#: TensorFlow's private attr that overrides the op type when looking up a gradient function.
GRADIENT_ATTR = "_gradient_op_type"
#: Gradient registry keys are ``tf2npu:<Op>``: never the bare op type, which another library
#: (or the real adapter, if both are installed) may have registered.
GRADIENT_PREFIX = "tf2npu:"

Gradient = Callable[..., Any]
"""TensorFlow's gradient function: ``(op, *grads) -> one gradient per input``."""


def _no_gradient_defined(op: Any, *grads: Any) -> Any:
    """The gradient of an op the device has none for: asking for it is a ``LookupError``."""
    npu_op = op.get_attr(NPU_OP_ATTR).decode()
    raise LookupError(
        f"NPU op {npu_op} (node {op.name!r}) has no gradient, as on the device (e.g. GeluGrad: "
        "no second derivative of gelu); stop the gradient before it (tf.stop_gradient) or "
        "compute this part with TensorFlow ops"
    )


@dataclass(frozen=True)
class ClientOp:
    """An NPU op as the TF client emits it: the catalogue's definition and its gradient.

    ``gradient`` builds the gradient of one emitted node (TensorFlow's gradient function, under
    :attr:`gradient_key`); ``None`` says the op's outputs carry no gradient at all
    (``tf.no_gradient``: TensorFlow treats them as constants). The default raises
    ``LookupError``, as the device has no gradient for the op either.
    """

    definition: NpuOpDef
    gradient: Gradient | None = _no_gradient_defined

    @property
    def gradient_key(self) -> str:
        """The key of the gradient in TensorFlow's registry (``tf2npu:<Op>``)."""
        return GRADIENT_PREFIX + self.definition.name


def emit(
    op_name: str,
    inputs: Sequence[Any],
    attrs: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> list[Any]:
    """Add one NPU op to the default graph; returns its output tensors.

    ``inputs`` are tensors or values convertible to them; the type attrs (``T``, ``Tshape``) are
    inferred from them as TensorFlow's generated op wrappers do, Python values taking the dtype
    of a tensor input sharing their type attr. ``attrs`` are the other attrs as Python values
    (missing ones get their defaults). ``name`` defaults to the op type and is made unique in
    the current name scope, as for any op.

    Raises:
        RuntimeError: eager execution is on (these ops exist only in graphs).
        TypeError: an input's dtype does not fit the op (names the input and the fix).
        InternalError: ``op_name`` is not an NPU op, or a wrong input count or attr.
    """
    import tensorflow as tf
    from tensorflow.core.framework.attr_value_pb2 import AttrValue

    client_op = CLIENT_OPS.get(op_name)
    if client_op is None:
        raise InternalError(
            f"{op_name!r} is not an NPU op; the catalogue has: {', '.join(sorted(NPU_OPS))}"
        )
    definition = client_op.definition
    if tf.executing_eagerly():
        raise RuntimeError(
            f"NPU op {op_name} can only be built in a graph; call it inside "
            "`with tf.Graph().as_default():` (or after tf.compat.v1.disable_eager_execution())"
        )
    tensors, types = _convert_inputs(definition, inputs)
    _check_types(definition, types)
    given = {**(attrs or {}), **{k: v for k, v in types.items() if k != TYPE_ATTR}}
    built = build_attrs(definition, len(tensors), types[TYPE_ATTR], given)
    graph = tf.compat.v1.get_default_graph()
    function = _ensure_function(graph, definition, built)
    _register_gradients()
    node_attrs = {NPU_ATTR_PREFIX + key: value for key, value in built.items()}
    node_attrs[NPU_OP_ATTR] = AttrValue(s=op_name.encode())
    node_attrs[GRADIENT_ATTR] = AttrValue(s=_gradient_name(graph, client_op).encode())
    dtypes = [tf.dtypes.as_dtype(d) for d in definition.output_dtypes(built)]
    op = graph.create_op(function, tensors, dtypes, name=name or op_name, attrs=node_attrs)
    return list(op.outputs)


def _gradient_name(graph: Any, op: ClientOp) -> str:
    """The gradient function of a new node of ``op``: the one a script's
    ``graph.gradient_override_map({"HcomAllReduce": "MyGrad"})`` names (as for the device's
    op type, which the map is keyed by), else tf2npu's."""
    overrides: Mapping[str, str] = getattr(graph, "_gradient_override_map", {})
    return overrides.get(op.definition.name) or op.gradient_key


def _convert_inputs(op: NpuOpDef, inputs: Sequence[Any]) -> tuple[list[Any], dict[str, int]]:
    """Tensors for ``inputs`` and the type attrs they fix (tensor inputs decide first)."""
    import tensorflow as tf

    if len(inputs) != len(op.inputs):
        names = ", ".join(a.name for a in op.inputs)
        raise InternalError(
            f"NPU op {op.name}: got {len(inputs)} inputs, expected {len(op.inputs)} ({names})"
        )
    converted: list[Any] = [None] * len(inputs)
    types: dict[str, int] = {}
    owner: dict[str, str] = {}  # type attr -> the input that fixed it (for error messages)
    is_tensor = [tf.is_tensor(v) or isinstance(v, tf.Variable) for v in inputs]
    for i in sorted(range(len(inputs)), key=lambda i: not is_tensor[i]):
        arg, value = op.inputs[i], inputs[i]
        # A tensor keeps its dtype (checked below); a Python value takes the one required.
        want = None if is_tensor[i] else types.get(arg.type_attr) if arg.type_attr else arg.dtype
        tensor = _to_tensor(op, arg.name, value, want)
        dtype = tensor.dtype.as_datatype_enum
        if arg.type_attr:
            if arg.type_attr in types and types[arg.type_attr] != dtype:
                raise TypeError(
                    f"NPU op {op.name}: input {arg.name!r} is {_dtype(dtype)} but input "
                    f"{owner[arg.type_attr]!r} is {_dtype(types[arg.type_attr])}; both take "
                    f"{arg.type_attr}, cast {arg.name!r} with tf.cast"
                )
            types.setdefault(arg.type_attr, dtype)
            owner.setdefault(arg.type_attr, arg.name)
        elif dtype != arg.dtype:
            raise TypeError(
                f"NPU op {op.name}: input {arg.name!r} is {_dtype(dtype)}, it must be "
                f"{_dtype(arg.dtype)}"
            )
        converted[i] = tensor
    return converted, types


def _check_types(op: NpuOpDef, types: Mapping[str, int]) -> None:
    """The inferred type attrs are ones the op takes (a user error: the inputs' dtypes)."""
    allowed = {TYPE_ATTR: op.dtypes, **{s.name: s.allowed for s in op.attrs if s.kind == "type"}}
    for attr, dtype in types.items():
        if dtype not in allowed[attr]:
            names = ", ".join(_dtype(d) for d in allowed[attr])
            inputs = ", ".join(repr(a.name) for a in op.inputs if a.type_attr == attr)
            raise TypeError(
                f"NPU op {op.name}: input {inputs} is {_dtype(dtype)}; it takes {names} "
                "(cast it with tf.cast)"
            )


def _to_tensor(op: NpuOpDef, arg: str, value: Any, dtype: int | None) -> Any:
    import tensorflow as tf

    try:
        return tf.convert_to_tensor(value, dtype=dtype, name=arg)
    except (TypeError, ValueError) as err:
        want = _dtype(dtype) if dtype is not None else "a tensor"
        raise TypeError(
            f"NPU op {op.name}: input {arg!r} = {value!r} cannot be converted to {want} ({err})"
        ) from None


def _dtype(enum: int) -> str:
    """A DataType enum as users write it (``float32``)."""
    import tensorflow as tf

    return str(tf.dtypes.as_dtype(enum).name)


def _ensure_function(graph: Any, op: NpuOpDef, attrs: Mapping[str, Any]) -> str:
    """Add the op's monomorphic CPU function to ``graph``'s library (once); returns its name."""
    name = function_name(op, attrs)
    if not graph._is_function(name):
        dependencies = traced_dependencies(op, attrs, name)
        add_functions(graph, (*dependencies, traced_function_def(op, attrs, name)))
    return name


def _gelu_gradient(op: Any, grad: Any) -> Any:
    """``GeluGrad(dy, x, y)``, as the real adapter's registered ``Gelu`` gradient."""
    return emit("GeluGrad", [grad, op.inputs[0], op.outputs[0]])[0]


def _fast_gelu_gradient(op: Any, grad: Any) -> Any:
    """``FastGeluGrad(dy, x)``, as the real adapter's registered ``FastGelu`` gradient."""
    return emit("FastGeluGrad", [grad, op.inputs[0]])[0]


def _do_mask_gradient(op: Any, grad: Any) -> list[Any]:
    """The same mask and keep probability applied to the incoming gradient; none for those."""
    return [emit("DropOutDoMask", [grad, op.inputs[1], op.inputs[2]])[0], None, None]


def _do_mask_v3_gradient(op: Any, grad: Any) -> list[Any]:
    """The same byte mask and keep probability applied to the incoming gradient."""
    return [emit("DropOutDoMaskV3", [grad, op.inputs[1], op.inputs[2]])[0], None, None]


def _body_gradient(op: Any, *grads: Any) -> list[Any]:
    """The derivative of the op's CPU body (:mod:`tf2npu.client.body_gradient`)."""
    return body_gradient(op, grads)


def _all_reduce_gradient(op: Any, grad: Any) -> Any:
    """The all-reduce-sum of the incoming gradient over the same group (Horovod's rule: every
    rank's ``y`` is the sum of every ``x``); other reductions have none (LookupError)."""
    import tensorflow as tf

    reduction = op.get_attr(NPU_ATTR_PREFIX + "reduction")
    if reduction != b"sum":
        raise LookupError(
            f"HcomAllReduce {op.name!r} with reduction={reduction.decode()!r} has no gradient "
            "(only sum has one); stop the gradient before it (tf.stop_gradient)"
        )
    cluster = require_cluster("the gradient of HcomAllReduce")
    grad = tf.convert_to_tensor(grad)
    size = op.get_attr(NPU_ATTR_PREFIX + "group_size")
    group = op.get_attr(NPU_ATTR_PREFIX + "group_key")
    key = instance_key(grad.graph, "grad", op.name, str(grad.shape), grad.dtype.name, group)
    attrs = {"reduction": "sum", "group_size": size, "group_key": group, "instance_key": key,
             "dynamic": not grad.shape.is_fully_defined()}  # fmt: skip
    with tf.device(cpu_device(cluster.rank)):
        return emit("HcomAllReduce", [grad], attrs, name="HcomAllReduce")[0]


_DIFFERENTIATED = (
    ClientOp(GELU, _gelu_gradient),
    ClientOp(FAST_GELU, _fast_gelu_gradient),
    ClientOp(DROPOUT_GEN_MASK, None),
    ClientOp(DROPOUT_DO_MASK, _do_mask_gradient),
    ClientOp(DROPOUT_GEN_MASK_V3, None),
    ClientOp(DROPOUT_DO_MASK_V3, _do_mask_v3_gradient),
    ClientOp(BASIC_LSTM_CELL, _body_gradient),
    ClientOp(DYNAMIC_RNN, _body_gradient),
    ClientOp(DYNAMIC_GRU_V2, _body_gradient),
    ClientOp(DYNAMIC_AUGRU, _body_gradient),
    ClientOp(HCOM_ALL_REDUCE, _all_reduce_gradient),
)

CLIENT_OPS: Mapping[str, ClientOp] = MappingProxyType(
    {name: ClientOp(definition) for name, definition in NPU_OPS.items()}
    | {op.definition.name: op for op in _DIFFERENTIATED}
)
"""Op type -> the op as the client emits it: every catalogue op, with its gradient (the ops not
in ``_DIFFERENTIATED`` have none, as on the device)."""


@functools.cache
def _register_gradients() -> None:
    """Register every op's gradient under ``tf2npu:<Op>`` with TensorFlow (once per process)."""
    import tensorflow as tf
    from tensorflow.python.framework import ops

    known = set(ops.gradient_registry.list())
    for op in CLIENT_OPS.values():
        if op.gradient_key in known:  # a module reload must not register twice (KeyError)
            continue
        if op.gradient is None:
            tf.no_gradient(op.gradient_key)
        else:
            tf.RegisterGradient(op.gradient_key)(op.gradient)

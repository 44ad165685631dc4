"""The gradient of an NPU op whose device gradient kernel tf2npu does not model as an op.

``BasicLSTMCell`` and the fused RNN ops (``DynamicRnn``, ``DynamicGruV2``, ``DynamicAUGRU``)
are differentiated through their CPU body: one library function per (op, dtype, attrs),
``<Op>BodyGrad_<DT>_<digest>__tf2npu``, traced once per process, takes the op's inputs and the
gradients of all its outputs, builds the body again and returns ``tf.gradients`` of it for
every float input. The gradient is one call node of that function, so it works wherever the op
is: at the top level, in a ``tf.function``, in TF 1.15's ``tf.while_loop`` (where a nested
``tf.gradients`` in the user's graph would not see the loop's saved forward values). It costs
about one forward pass more than a gradient kernel that reuses the forward's gate outputs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from tf2npu.client.library import add_functions
from tf2npu.graph.npu_ops.catalogue import NPU_OPS
from tf2npu.graph.npu_ops.materialize import FUNCTION_SUFFIX, rename_dependencies
from tf2npu.graph.npu_ops.nodes import NPU_ATTR_PREFIX, NPU_OP_ATTR
from tf2npu.graph.npu_ops.opdef import TYPE_ATTR, NpuOpDef, dtype_name

__all__ = ["body_gradient"]

_TRACED: dict[str, tuple[bytes, ...]] = {}  # function name -> its callees, then itself


def body_gradient(op: Any, grads: Sequence[Any]) -> list[Any]:
    """Gradients for ``op``'s inputs (``None`` for integer inputs) given its outputs' ``grads``
    (``None`` where an output receives none)."""
    import tensorflow as tf

    definition = NPU_OPS[op.get_attr(NPU_OP_ATTR).decode()]
    names = [TYPE_ATTR, *(spec.name for spec in definition.attrs)]
    attrs = {key: op.node_def.attr[NPU_ATTR_PREFIX + key] for key in names}
    name = _name(definition, attrs)
    graph = tf.compat.v1.get_default_graph()
    if not graph._is_function(name):
        add_functions(graph, _traced(definition, attrs, name))
    dys = [_dense(y, g) for y, g in zip(op.outputs, grads, strict=True)]
    floats = _float_inputs(definition, attrs)
    dtypes = [op.inputs[i].dtype for i in floats]
    call = graph.create_op(name, [*op.inputs, *dys], dtypes, name=f"{definition.name}BodyGrad")
    result: list[Any] = [None] * len(op.inputs)
    for i, grad in zip(floats, call.outputs, strict=True):
        result[i] = grad
    return result


def _dense(output: Any, grad: Any) -> Any:
    """``grad`` as a tensor: zeros for no gradient; an ``IndexedSlices`` (the gradient of a
    ``tf.gather`` of the output, e.g. the last time step of ``DynamicRNN``) made dense, since a
    function call takes tensors only."""
    import tensorflow as tf

    if grad is None:
        return tf.zeros_like(output)
    if isinstance(grad, tf.IndexedSlices):
        return tf.math.unsorted_segment_sum(grad.values, grad.indices, tf.shape(output)[0])
    return grad


def _name(op: NpuOpDef, attrs: Mapping[str, Any]) -> str:
    digest = hashlib.sha256(op.name.encode())
    for key in sorted(attrs):
        digest.update(key.encode() + b"=" + attrs[key].SerializeToString(deterministic=True))
    dtype = dtype_name(attrs[TYPE_ATTR].type)
    return f"{op.name}BodyGrad_{dtype}_{digest.hexdigest()[:12]}{FUNCTION_SUFFIX}"


def _float_inputs(op: NpuOpDef, attrs: Mapping[str, Any]) -> list[int]:
    import tensorflow as tf

    return [i for i, d in enumerate(op.input_dtypes(attrs)) if tf.as_dtype(d).is_floating]


def _traced(op: NpuOpDef, attrs: Mapping[str, Any], name: str) -> tuple[bytes, ...]:
    cached = _TRACED.get(name)
    if cached is None:
        fd, dependencies = _trace(op, attrs, name)
        cached = tuple(f.SerializeToString() for f in (*dependencies, fd))
        _TRACED[name] = cached
    return cached


def _trace(op: NpuOpDef, attrs: Mapping[str, Any], name: str) -> tuple[Any, list[Any]]:
    import tensorflow as tf

    count = len(op.inputs)
    kwargs = op.body_kwargs(attrs)
    floats = _float_inputs(op, attrs)
    specs = [tf.TensorSpec(None, tf.as_dtype(d)) for d in op.input_dtypes(attrs)]
    specs += [tf.TensorSpec(None, tf.as_dtype(d)) for d in op.output_dtypes(attrs)]

    def gradient(*args: Any) -> list[Any]:
        inputs, dys = list(args[:count]), list(args[count:])
        outputs = op.body(*inputs, **kwargs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        found = tf.gradients(outputs, [inputs[i] for i in floats], grad_ys=dys)
        # An input no output depends on gets zeros (a function must return a tensor).
        return [
            tf.zeros_like(inputs[i]) if g is None else g for i, g in zip(floats, found, strict=True)
        ]

    concrete = tf.function(gradient, autograph=False).get_concrete_function(*specs)
    fd = concrete.function_def
    fd.signature.name = name
    fd.ClearField("attr")
    fd.ClearField("arg_attr")
    return fd, rename_dependencies(fd, concrete.graph.as_graph_def().library.function, name)

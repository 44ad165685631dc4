"""Make NPU-op nodes runnable by stock TensorFlow on the CPU.

Each NPU-op node becomes a call of a library function computing the op with TF ops. TF's
``import_graph_def`` cannot import a polymorphic ``FunctionDef`` (one with a type attr), so
there is one monomorphic function per (op type, dtype, attrs), named
``<Op>_<DT_NAME>_<digest>__tf2npu``; nodes sharing all three share the function. The node keeps
its name, inputs, device and output indexing (each function's output args carry the op's
output names, so ``n:mean:0`` in a function body still resolves); it loses its op attrs, which
a function call must not carry, and they move to ``node.meta`` (:data:`NPU_ATTRS_META`).

A body with control flow (the recurrent ops' ``tf.scan``) traces into a function whose
``While`` node names further functions (its cond and body). Those travel with it, renamed
``<function stem>_<name>__tf2npu`` so that they are recognisably tf2npu's and never collide
with a user's functions (:func:`traced_dependencies`).

Tracing a body costs milliseconds, so traced ``FunctionDef``s are cached per process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from tf2npu.errors import GraphError, InternalError, Tf2NpuError
from tf2npu.graph._proto import function_from_proto
from tf2npu.graph.ir import Graph, Node
from tf2npu.graph.npu_ops.catalogue import NPU_OPS
from tf2npu.graph.npu_ops.nodes import NPU_ATTRS_META, NPU_OP_META
from tf2npu.graph.npu_ops.opdef import TYPE_ATTR, NpuOpDef, build_attrs, dtype_name

__all__ = [
    "FUNCTION_SUFFIX",
    "function_name",
    "materialize",
    "rename_dependencies",
    "traced_dependencies",
    "traced_function_def",
]

#: Suffix of every function :func:`materialize` adds to the library.
FUNCTION_SUFFIX = "__tf2npu"

_TRACED: dict[str, bytes] = {}  # function name -> serialized FunctionDef
_DEPENDENCIES: dict[str, tuple[bytes, ...]] = {}  # function name -> its nested functions


def materialize(graph: Graph) -> int:
    """Turn every NPU-op node (top level and function bodies) into a call of a CPU function.

    Returns how many nodes changed; a second call finds none (idempotent).

    Raises:
        GraphError: an NPU-op node with the wrong input count or attrs (names the node).
        Tf2NpuError: TensorFlow is not installed (it traces the CPU bodies).
    """
    changed = 0
    for body in list(graph.walk()):
        for node in body:
            definition = NPU_OPS.get(node.op)
            if definition is not None:
                _materialize_node(graph, node, definition)
                changed += 1
    return changed


def function_name(op: NpuOpDef, attrs: Mapping[str, Any]) -> str:
    """``<Op>_<DT_NAME>_<digest>__tf2npu`` for a complete attr set of ``op``."""
    digest = hashlib.sha256(op.name.encode())
    for key in sorted(attrs):
        digest.update(key.encode() + b"=" + attrs[key].SerializeToString(deterministic=True))
    dtype = dtype_name(attrs[TYPE_ATTR].type)
    return f"{op.name}_{dtype}_{digest.hexdigest()[:12]}{FUNCTION_SUFFIX}"


def _materialize_node(root: Graph, node: Node, op: NpuOpDef) -> None:
    attrs = _complete_attrs(node, op)
    name = function_name(op, attrs)
    if name not in root.functions:
        from tensorflow.core.framework import function_pb2

        for serialized in (
            *traced_dependencies(op, attrs, name),
            traced_function_def(op, attrs, name),
        ):
            fd = function_pb2.FunctionDef()
            fd.ParseFromString(serialized)
            root.functions[fd.signature.name] = function_from_proto(fd, root)
    node.meta[NPU_OP_META] = op.name
    node.meta[NPU_ATTRS_META] = attrs
    node.op = name
    node.attrs = {key: value for key, value in node.attrs.items() if key.startswith("_")}


def _complete_attrs(node: Node, op: NpuOpDef) -> dict[str, Any]:
    """The node's ``T`` and declared attrs, checked, defaults filled (nodes may come from files)."""
    where = f"{node.graph.label}, node {node.name!r}"
    dtype = node.attrs.get(TYPE_ATTR)
    if dtype is None:
        raise GraphError(f"{where}: NPU op {op.name} has no attr 'T'; set T to its float dtype")
    given = {spec.name: node.attrs[spec.name] for spec in op.attrs if spec.name in node.attrs}
    try:
        return build_attrs(op, len(node.inputs), dtype.type, given)
    except InternalError as err:
        raise GraphError(f"{where}: {err}") from None
    except ImportError:
        raise _needs_tf(node) from None


def traced_function_def(op: NpuOpDef, attrs: Mapping[str, Any], name: str) -> bytes:
    """The serialized FunctionDef ``name`` computing ``op`` with ``attrs`` (traced once per
    process; materialize and the client emission share the cache)."""
    cached = _TRACED.get(name)
    if cached is None:
        fd, dependencies = _trace(op, attrs, name)
        _DEPENDENCIES[name] = tuple(d.SerializeToString() for d in dependencies)
        cached = _TRACED[name] = fd.SerializeToString()
    return cached


def traced_dependencies(op: NpuOpDef, attrs: Mapping[str, Any], name: str) -> tuple[bytes, ...]:
    """The serialized functions the FunctionDef ``name`` calls (``While`` cond and body ...),
    renamed to end in :data:`FUNCTION_SUFFIX`; empty for a body without control flow."""
    traced_function_def(op, attrs, name)
    return _DEPENDENCIES[name]


def _trace(op: NpuOpDef, attrs: Mapping[str, Any], name: str) -> tuple[Any, list[Any]]:
    """Trace ``op.body`` into a FunctionDef named ``name`` with the op's argument names; with
    the functions it calls, renamed (see the module docstring)."""
    import tensorflow as tf

    specs = [
        tf.TensorSpec(None, tf.dtypes.as_dtype(dtype), name=arg.name)
        for arg, dtype in zip(op.inputs, op.input_dtypes(attrs), strict=True)
    ]
    kwargs = op.body_kwargs(attrs)

    def call(*tensors: Any) -> Any:
        result = op.body(*tensors, **kwargs)
        if not isinstance(result, (tuple, list)) or len(result) < 2:
            return result
        # One kernel on the device: no output exists before all are computed. An inlined body
        # would hand one output on (a gradient to ApplyAdam) while another part still reads an
        # input (the TF1 ref variable that update changes in place): gate them together, as
        # gate_gradients=GATE_OP does in TF's own gradients.
        with tf.control_dependencies(list(result)):
            return tuple(tf.identity(t) for t in result)

    concrete = tf.function(call, autograph=False).get_concrete_function(*specs)
    fd = concrete.function_def
    outputs = fd.signature.output_arg
    if len(outputs) != len(op.outputs):
        raise InternalError(
            f"NPU op {op.name}: its CPU body returned {len(outputs)} tensors, the definition "
            f"declares {len(op.outputs)}; make the body return one tensor per output"
        )
    rets = [fd.ret[arg.name] for arg in outputs]
    fd.ClearField("ret")
    for arg, spec, ret in zip(outputs, op.outputs, rets, strict=True):
        arg.name = spec.name
        fd.ret[spec.name] = ret
    fd.signature.name = name
    fd.ClearField("attr")
    fd.ClearField("arg_attr")
    return fd, rename_dependencies(fd, concrete.graph.as_graph_def().library.function, name)


def rename_dependencies(fd: Any, library: Any, name: str) -> list[Any]:
    """Copies of the functions of ``library`` that ``fd`` calls (at any depth; a traced
    gradient leaves the loops it rewrote unused) renamed ``<stem>_<old>__tf2npu``, and every
    ``func`` attr in them and in ``fd`` updated."""
    stem = name[: -len(FUNCTION_SUFFIX)]
    by_name = {dep.signature.name: dep for dep in library}
    called = _called(fd, by_name)
    renamed = {old: f"{stem}_{old}{FUNCTION_SUFFIX}" for old in called}
    dependencies = []
    for dep in (by_name[old] for old in called):
        copy = type(dep)()
        copy.CopyFrom(dep)
        copy.signature.name = renamed[dep.signature.name]
        dependencies.append(copy)
    for function in (fd, *dependencies):
        for node in function.node_def:
            node.op = renamed.get(node.op, node.op)  # a direct call of a library function
            for value in node.attr.values():
                _rename_func_attr(value, renamed)
    return dependencies


def _called(fd: Any, library: Mapping[str, Any]) -> list[str]:
    """Names of the ``library`` functions ``fd`` calls, directly or through them (in order)."""
    found: list[str] = []
    pending = [fd]
    while pending:
        for node in pending.pop().node_def:
            callees = [node.op, *(f for v in node.attr.values() for f in _func_names(v))]
            for callee in callees:
                if callee in library and callee not in found:
                    found.append(callee)
                    pending.append(library[callee])
    return found


def _func_names(value: Any) -> list[str]:
    kind = value.WhichOneof("value")
    if kind == "func":
        return [value.func.name]
    return [f.name for f in value.list.func] if kind == "list" else []


def _rename_func_attr(value: Any, renamed: Mapping[str, str]) -> None:
    kind = value.WhichOneof("value")
    funcs = [value.func] if kind == "func" else list(value.list.func) if kind == "list" else []
    for func in funcs:
        func.name = renamed.get(func.name, func.name)


def _needs_tf(node: Node) -> Tf2NpuError:
    return Tf2NpuError(
        f"node {node.name!r} is the NPU op {node.op}; running it on the CPU needs TensorFlow, "
        "which is not installed: pip install tensorflow-cpu"
    )

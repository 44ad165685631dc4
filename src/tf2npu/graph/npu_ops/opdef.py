"""How an NPU op is described: typed inputs, outputs and attrs, its math, its CPU body.

Definitions are data (STYLE habit 2): :class:`NpuOpDef` says what a node of the op must look
like, and :func:`build_attrs` checks a node against it before the node exists, so a pass that
builds a malformed NPU op fails at the line that built it, not later inside TensorFlow.

DataType enum values are spelled out here (``types.proto``) so that describing and checking
NPU ops never imports TensorFlow; only building ``AttrValue`` protos does, lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tf2npu.dtypes import DT_FLOAT, DT_HALF, DT_INT32, DT_INT64, DT_UINT8, DTYPES
from tf2npu.errors import InternalError

__all__ = [
    "DT_FLOAT",
    "DT_HALF",
    "DT_INT32",
    "DT_INT64",
    "DT_UINT8",
    "ArgDef",
    "AttrDef",
    "NpuOpDef",
    "attr_python_value",
    "build_attrs",
    "dtype_name",
]

_DTYPE_NAMES = {n: DTYPES[n].enum for n in (DT_FLOAT, DT_INT32, DT_UINT8, DT_INT64, DT_HALF)}
"""The dtypes NPU op definitions use, with their enum names."""

#: The one polymorphic type attr every NPU op has (``add_npu_node(dtype=...)`` sets it).
TYPE_ATTR = "T"

_KINDS = ("int", "float", "bool", "type", "string")
# AttrValue oneof field per kind.
_FIELD = {"int": "i", "float": "f", "bool": "b", "type": "type", "string": "s"}
_NOUN = {
    "int": "an int",
    "float": "a float",
    "bool": "a bool",
    "type": "a DataType enum int",
    "string": "a str",
}


def dtype_name(dtype: int) -> str:
    """``DT_FLOAT`` for 1; ``DataType(<n>)`` for an enum value this module does not name."""
    return _DTYPE_NAMES.get(dtype, f"DataType({dtype})")


@dataclass(frozen=True, slots=True)
class ArgDef:
    """One input or output: its name and either the type attr giving its dtype or a fixed one."""

    name: str
    doc: str
    type_attr: str = TYPE_ATTR
    dtype: int = 0

    def resolve(self, types: Mapping[str, int]) -> int:
        """The dtype of this argument given the node's type attrs."""
        return types[self.type_attr] if self.type_attr else self.dtype


@dataclass(frozen=True, slots=True)
class AttrDef:
    """A declared attr besides ``T``: name, kind (int, float, bool, type, string), default."""

    name: str
    kind: str
    default: int | float | bool | str
    doc: str
    allowed: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise InternalError(f"NPU attr {self.name!r}: kind {self.kind!r} not in {_KINDS}")


@dataclass(frozen=True)
class NpuOpDef:
    """An op that exists on Ascend but not in TensorFlow.

    ``body`` computes the op with TensorFlow ops; it takes the input tensors positionally and the
    non-type attrs as keywords and returns one tensor or a tuple (one per output). ``materialize``
    traces it into a ``FunctionDef`` so stock TensorFlow can run the op on the CPU.
    """

    name: str
    summary: str
    math: str
    inputs: tuple[ArgDef, ...]
    outputs: tuple[ArgDef, ...]
    dtypes: tuple[int, ...]
    body: Callable[..., Any]
    attrs: tuple[AttrDef, ...] = ()
    exactness: str = ""

    def type_attrs(self, attrs: Mapping[str, Any]) -> dict[str, int]:
        """``T`` and every type-kind attr, as enum values, from a node's ``AttrValue``s."""
        types = {TYPE_ATTR: attrs[TYPE_ATTR].type}
        for spec in self.attrs:
            if spec.kind == "type":
                types[spec.name] = attrs[spec.name].type
        return types

    def input_dtypes(self, attrs: Mapping[str, Any]) -> tuple[int, ...]:
        types = self.type_attrs(attrs)
        return tuple(arg.resolve(types) for arg in self.inputs)

    def output_dtypes(self, attrs: Mapping[str, Any]) -> tuple[int, ...]:
        types = self.type_attrs(attrs)
        return tuple(arg.resolve(types) for arg in self.outputs)

    def body_kwargs(self, attrs: Mapping[str, Any]) -> dict[str, int | float | bool | str]:
        """The non-type attrs as Python values (what ``body`` takes as keywords)."""
        return {
            spec.name: attr_python_value(spec, attrs[spec.name])
            for spec in self.attrs
            if spec.kind != "type"
        }


def attr_python_value(spec: AttrDef, value: Any) -> int | float | bool | str:
    field = _FIELD[spec.kind]
    result: int | float | bool | bytes = getattr(value, field)
    # A string attr is bytes in the proto; bodies and users compare it with str.
    return result.decode() if isinstance(result, bytes) else result


def build_attrs(
    op: NpuOpDef, n_inputs: int, dtype: int, given: Mapping[str, Any]
) -> dict[str, Any]:
    """The node's attrs (``AttrValue`` protos): ``T``, then every declared attr (default filled).

    ``given`` values may be Python values or ``AttrValue`` protos of the right kind.

    Raises:
        InternalError: wrong input count, a dtype the op does not take, an unknown attr or a
            value of the wrong kind; the message names the op and the fix.
    """
    from tensorflow.core.framework import attr_value_pb2

    if n_inputs != len(op.inputs):
        names = ", ".join(a.name for a in op.inputs)
        raise InternalError(
            f"NPU op {op.name}: got {n_inputs} inputs, expected {len(op.inputs)} ({names}); "
            "pass one TensorRef per input in that order"
        )
    _check_dtype(op, TYPE_ATTR, dtype, op.dtypes)
    declared = {spec.name: spec for spec in op.attrs}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        known = ", ".join(declared) or "none besides T (set by dtype=)"
        raise InternalError(
            f"NPU op {op.name}: unknown attr {unknown[0]!r}; its attrs are: {known}"
        )
    out: dict[str, Any] = {TYPE_ATTR: attr_value_pb2.AttrValue(type=dtype)}
    for spec in op.attrs:
        value = given.get(spec.name, spec.default)
        out[spec.name] = _to_proto(op, spec, value, attr_value_pb2.AttrValue)
    return out


def _to_proto(op: NpuOpDef, spec: AttrDef, value: Any, proto: Any) -> Any:
    field = _FIELD[spec.kind]
    if isinstance(value, proto):
        if value.WhichOneof("value") != field:
            raise InternalError(
                f"NPU op {op.name}: attr {spec.name!r} holds {value.WhichOneof('value')!r}, "
                f"expected an AttrValue with {field!r} set ({spec.kind})"
            )
        value = getattr(value, field)
    if not _python_kind_ok(spec.kind, value):
        raise InternalError(
            f"NPU op {op.name}: attr {spec.name!r} = {value!r} is not {_NOUN[spec.kind]}; "
            f"pass {_NOUN[spec.kind]} (default {spec.default!r})"
        )
    if spec.kind == "type":
        _check_dtype(op, spec.name, value, spec.allowed)
    if spec.kind == "string" and isinstance(value, str):
        value = value.encode()
    return proto(**{field: value})


def _python_kind_ok(kind: str, value: Any) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, (str, bytes))
    return isinstance(value, int) and not isinstance(value, bool)


def _check_dtype(op: NpuOpDef, attr: str, dtype: int, allowed: tuple[int, ...]) -> None:
    if dtype not in allowed:
        names = ", ".join(dtype_name(d) for d in allowed)
        raise InternalError(
            f"NPU op {op.name}: {attr} = {dtype_name(dtype)} is not supported; "
            f"use one of {names} (cast the inputs first)"
        )

"""Where a node carries float32 tensors, read from its ``OpDef``, and whether they can switch.

Lowering a node to float16 means setting every *type attr* that holds float32 (``T`` of
``MatMul``, ``SrcT``/``DstT`` of ``Cast``) to the lower dtype. That is only sound when each
float32 tensor of the node is typed by such a scalar attr; a float32 fixed by the op definition,
typed by a dtype list (function calls: ``Tin``/``Tout``), held by a reference or tied to a
resource variable cannot change without changing something outside the node. Those nodes are
left as they are, and :attr:`FloatSignature.blocker` says why.

The analysis reads only the op definition and the node's attrs, so it is O(args) per node;
the per-op part (:class:`_OpPlan`) is computed once per op type and cached.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tf2npu.dtypes import DT_BFLOAT16, DT_FLOAT, DT_HALF, DT_RESOURCE
from tf2npu.graph._opdef import op_def_for
from tf2npu.graph.ir import Node, TensorRef

__all__ = [
    "DT_BFLOAT16",
    "DT_FLOAT",
    "DT_HALF",
    "FloatSignature",
    "Output",
    "SignatureReader",
]

# ``DataType`` enum values of TensorFlow's types.proto (stable wire values).


@dataclass(frozen=True, slots=True)
class Output:
    """One output tensor: its output arg, its index inside the arg, its flat index."""

    arg: str
    index: int
    flat: int
    is_float: bool

    def ref(self, node: str, *, function_body: bool) -> TensorRef:
        """How a reader names this output of ``node`` (function bodies use the arg syntax)."""
        if function_body:
            return TensorRef(node, self.index, self.arg)
        return TensorRef(node, self.flat)


@dataclass(frozen=True, slots=True)
class FloatSignature:
    """The float32 part of one node's signature.

    Attributes:
        attrs: the scalar type attrs holding float32 that type an input or output.
        inputs: flat input positions (ascending) carrying float32 tensors typed by ``attrs``.
        outputs: every output tensor (``is_float`` marks the float32 ones).
        blocker: ``""`` when the node can be lowered, else ``"<slug>: <why>"``.
    """

    attrs: tuple[str, ...]
    inputs: tuple[int, ...]
    outputs: tuple[Output, ...]
    blocker: str = ""


@dataclass(frozen=True, slots=True)
class _Arg:
    name: str
    fixed: int  # a dtype fixed by the op definition, 0 when typed by an attr
    type_attr: str
    number_attr: str
    list_attr: str
    is_ref: bool


@dataclass(frozen=True, slots=True)
class _OpPlan:
    """The op-definition facts the analysis needs, as plain values."""

    inputs: tuple[_Arg, ...]
    outputs: tuple[_Arg, ...]
    defaults: Mapping[str, Any]  # attr name -> default AttrValue
    allowed: Mapping[str, frozenset[int]]  # type attr -> allowed dtypes (empty: any)
    keys: tuple[tuple[str, str], ...]  # (attr, kind) the analysis reads: the cache key


class SignatureReader:
    """Computes :class:`FloatSignature` of nodes; one reader per graph root (caches per op)."""

    def __init__(self, target: int) -> None:
        self.target = target
        self._plans: dict[str, _OpPlan | None] = {}
        # (op, the values of the attrs the plan reads) -> signature: nodes of one op type
        # mostly share their dtypes, so most nodes cost one key and one lookup.
        self._known: dict[tuple[object, ...], FloatSignature | None] = {}

    def read(self, node: Node) -> FloatSignature | None:
        """The node's float32 signature, or ``None`` when it carries no float32 tensor.

        A node whose op definition is unknown but which holds a float32 attr gets a signature
        with a blocker (it is judged, never lowered).
        """
        op = node.op
        plan = self._plans.get(op, _MISSING)
        if plan is _MISSING:
            plan = self._plans[op] = _plan(op_def_for(node))
        if plan is None:
            if any(getattr(v, "type", 0) == DT_FLOAT for v in node.attrs.values()):
                why = f"unknown_signature: no op definition for {op!r} is known"
                return FloatSignature((), (), (), why)
            return None
        attrs = node.attrs
        key = (op, *[_key_part(attrs.get(name), kind) for name, kind in plan.keys])
        known = self._known
        if key not in known:
            known[key] = _analyse(node, plan, self.target)
        return known[key]


_MISSING: Any = object()


def _key_part(value: Any, kind: str) -> object:
    if value is None:
        return None
    if kind == "type":
        return value.type
    if kind == "number":
        return value.i
    return tuple(value.list.type)


def _plan(op_def: Any) -> _OpPlan | None:
    if op_def is None:
        return None

    def args(protos: Any) -> tuple[_Arg, ...]:
        return tuple(
            _Arg(a.name, a.type, a.type_attr, a.number_attr, a.type_list_attr, a.is_ref)
            for a in protos
        )

    defaults = {a.name: a.default_value for a in op_def.attr if a.HasField("default_value")}
    allowed = {
        a.name: frozenset(a.allowed_values.list.type) for a in op_def.attr if a.type == "type"
    }
    inputs, outputs = args(op_def.input_arg), args(op_def.output_arg)
    keys: dict[tuple[str, str], None] = {}
    for arg in (*inputs, *outputs):
        for name, kind in (
            (arg.type_attr, "type"),
            (arg.number_attr, "number"),
            (arg.list_attr, "list"),
        ):
            if name:
                keys[name, kind] = None
    return _OpPlan(inputs, outputs, defaults, allowed, tuple(keys))


class _Walk:
    """Accumulates the float32 facts while walking a node's input and output args."""

    def __init__(self, node: Node, plan: _OpPlan) -> None:
        self.node = node
        self.plan = plan
        self.attrs: dict[str, None] = {}
        self.blockers: list[str] = []
        self.has_float = False
        self.has_resource = False

    def value(self, name: str) -> Any:
        found = self.node.attrs.get(name)
        return found if found is not None else self.plan.defaults.get(name)

    def arg(self, arg: _Arg) -> tuple[int, bool] | None:
        """(tensor count, carries float32) of one arg; ``None`` when a count is unknown."""
        if arg.list_attr:
            value = self.value(arg.list_attr)
            if value is None:
                return None
            types = list(value.list.type)
            if DT_FLOAT in types:
                self.has_float = True
                self.blockers.append(
                    f"list_dtype: arg {arg.name!r} takes a dtype list (attr {arg.list_attr!r})"
                )
            self.has_resource |= DT_RESOURCE in types
            return len(types), False
        dtype = arg.fixed
        if not dtype and arg.type_attr:
            value = self.value(arg.type_attr)
            dtype = value.type if value is not None else 0
        count = 1
        if arg.number_attr:
            value = self.value(arg.number_attr)
            if value is None:
                return None
            count = value.i
        self.has_resource |= dtype == DT_RESOURCE
        if dtype != DT_FLOAT:
            return count, False
        self.has_float = True
        if arg.fixed:
            self.blockers.append(f"fixed_dtype: arg {arg.name!r} is float32 by definition")
        elif arg.is_ref:
            self.blockers.append(f"variable_dtype: arg {arg.name!r} is a float32 reference")
        else:
            self.attrs[arg.type_attr] = None
        return count, True


def _analyse(node: Node, plan: _OpPlan, target: int) -> FloatSignature | None:
    walk = _Walk(node, plan)
    inputs: list[int] = []
    position = 0
    for arg in plan.inputs:
        found = walk.arg(arg)
        if found is None:
            return _unknown_count(node, arg)
        count, is_float = found
        if is_float and not arg.fixed and not arg.is_ref:
            inputs.extend(range(position, position + count))
        position += count
    outputs: list[Output] = []
    for arg in plan.outputs:
        found = walk.arg(arg)
        if found is None:
            return _unknown_count(node, arg)
        count, is_float = found
        start = len(outputs)
        outputs.extend(Output(arg.name, i, start + i, is_float) for i in range(count))
    if not walk.has_float:
        return None
    blockers = walk.blockers
    if walk.has_resource:
        blockers.append("variable_dtype: its float32 dtype is tied to a resource variable")
    for name in walk.attrs:
        allowed = plan.allowed.get(name, frozenset())
        if allowed and target not in allowed:
            blockers.append(f"dtype_not_allowed: attr {name!r} of {node.op} excludes it")
    if not outputs:
        blockers.append("no_outputs: a node without outputs has nothing to hand over")
    return FloatSignature(
        tuple(walk.attrs), tuple(inputs), tuple(outputs), blockers[0] if blockers else ""
    )


def _unknown_count(node: Node, arg: _Arg) -> FloatSignature | None:
    if not any(getattr(v, "type", 0) == DT_FLOAT for v in node.attrs.values()):
        return None
    why = f"unknown_signature: the tensor count of arg {arg.name!r} is not set"
    return FloatSignature((), (), (), why)

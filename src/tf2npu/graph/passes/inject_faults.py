"""The ``inject_faults`` pass: corrupt one fused node or one op on purpose, for drills.

Only runs when a fault is asked for (``TF2NPU_INJECT_FAULT`` or ``tf2npu run --inject-fault``,
parsed by :mod:`tf2npu.config.faults`); otherwise it changes nothing. It runs after ``fusion``,
so a spec can name the fused node of one rule (``fusion:RULE``) or of one instance
(``fusion:RULE@ROOT``), and before ``partition``, so the corrupting ops join the GeOp of the node
they corrupt, as a faulty kernel would be inside it.

Each float output tensor a spec hits gets one op inserted between it and its readers:
``Add(t, NaN)`` for ``nan``, ``Add(t, EPS)`` for ``bias:EPS``, ``Mul(t, F)`` for ``scale:F``,
named ``<client name>/_tf2npu_fault`` with the origin of the node it corrupts, so dumps and
compare map it to the same client op. Superseded originals whose value that tensor carried
(the fused root, a float16 node's original) now map to the corrupted tensor: fetching or
dumping the fused root shows the fault. For ``op:NODE`` on a node no pass replaced, the readers
of ``NODE`` see the fault; a fetch of ``NODE`` itself shows the value it computed.

What was hit is recorded under ``graph.meta[INJECTED_FAULTS]`` (spec, node names); the run
summary lists it as ``injected_faults`` and says loudly when a spec hit nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tf2npu.config.faults import FaultSpec
from tf2npu.graph._opdef import output_layout
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import (
    FUSION_INSTANCES,
    PLACEMENT,
    SUPERSEDED,
    FusionInstance,
    Superseded,
    replacement_of,
)
from tf2npu.graph.ir import FunctionGraph, Graph, Node, TensorRef
from tf2npu.graph.passes.infra import PassContext, PassInfo, PassResult, register_pass

__all__ = ["INJECTED_FAULTS", "InjectFaultsPass", "InjectedFault"]

#: ``graph.meta`` key → ``list[InjectedFault]``, one per spec, in the order given.
INJECTED_FAULTS = "injected_faults"

_FLOAT_DTYPES = frozenset({1, 2, 14, 19})  # DT_FLOAT, DT_DOUBLE, DT_BFLOAT16, DT_HALF


@dataclass(frozen=True, slots=True)
class InjectedFault:
    """A spec and the nodes whose outputs it corrupted (empty: it hit nothing in this graph)."""

    spec: str
    applied_to: tuple[str, ...]


@register_pass
class InjectFaultsPass:
    """Insert the corrupting ops the fault specs ask for (see the module docstring)."""

    info = PassInfo(
        "inject_faults",
        requires=("placement",),
        description="Corrupt the fused node(s) or op a fault spec names (drills only).",
    )

    def run(self, graph: Graph, ctx: PassContext[EngineConfig]) -> PassResult[Graph]:
        specs = ctx.config.overrides.faults
        if not specs:
            return PassResult(graph, changed=False, stats={})
        found = [InjectedFault(spec.text, _inject(graph, spec, ctx.config)) for spec in specs]
        graph.meta[INJECTED_FAULTS] = found
        corrupted = sum(len(f.applied_to) for f in found)
        return PassResult(graph, changed=corrupted > 0, stats={"tensors_corrupted": corrupted})


def _inject(graph: Graph, spec: FaultSpec, cfg: EngineConfig) -> tuple[str, ...]:
    """Corrupt what ``spec`` names; returns the names of the nodes whose outputs it hit."""
    if spec.target == "op":
        _explain_op(graph, spec, cfg)
    # Collected before any change: two instances of one chain (BiasAdd into MatMul, then Relu
    # into that) end in the same fused tensor, which must be corrupted once.
    targets: dict[tuple[str, TensorRef], Graph] = {}
    for body, refs in _targets(graph, spec):
        for ref in refs:
            targets.setdefault((body.label, ref), body)
    hit: dict[str, None] = {}
    for (_, ref), body in targets.items():
        if _corrupt(body, ref, spec):
            hit.setdefault(ref.node, None)
    return tuple(hit)


def _targets(graph: Graph, spec: FaultSpec) -> list[tuple[Graph, list[TensorRef]]]:
    """The tensors that now carry the value of what ``spec`` names, per graph body."""
    if spec.target == "fusion":
        instances: list[FusionInstance] = graph.meta.get(FUSION_INSTANCES, [])
        return [
            (body, _carried(body, body[i.root_node]))
            for i in instances
            if i.rule == spec.rule and (not spec.root or i.root == spec.root)
            for body in [_body(graph, i.function)]
        ]
    function, _, name = spec.node.rpartition(":")
    body = _body(graph, function) if function in graph.functions or not function else None
    node = body.get(name) if body is not None else None
    if body is None or node is None:
        return []
    if SUPERSEDED in node.meta:
        return [(body, _carried(body, node))]
    return [(body, _read_outputs(body, node))]


def _explain_op(graph: Graph, spec: FaultSpec, cfg: EngineConfig) -> None:
    """Say why ``op:NODE`` can hit nothing where the reason is known: NODE now lives inside a
    fused op, or nothing reads it (a fetched loss)."""
    function, _, name = spec.node.rpartition(":")
    body = graph.functions.get(function) if function else graph
    node = body.get(name) if body is not None else None
    if body is None or node is None:
        return
    sup: Superseded | None = node.meta.get(SUPERSEDED)
    if sup is not None and not sup.outputs:
        cfg.diagnostics.warning(
            "fault_target_fused",
            f"fault {spec.text!r}: {name} is computed inside a fused op ({sup.rule}); its own "
            "value no longer exists",
            node=name,
            fix=f"corrupt the fused op instead: fusion:{sup.rule}@ROOT=... with ROOT from "
            "fusion_instances.json",
        )
    elif sup is None and not _read_outputs(body, node):
        cfg.diagnostics.warning(
            "fault_target_unread",
            f"fault {spec.text!r}: nothing in the graph reads {name}, so corrupting what its "
            "readers receive changes nothing (a fetch of it shows its own value)",
            node=name,
            fix=f"corrupt the op that produces {name}'s input instead",
        )


def _body(graph: Graph, function: str) -> Graph:
    return graph.functions[function] if function else graph


def _carried(body: Graph, node: Node) -> list[TensorRef]:
    """The tensors now carrying a superseded node's outputs (after every later rewrite)."""
    sup: Superseded = node.meta[SUPERSEDED]
    refs = {replacement_of(body, old): None for old in sup.outputs}
    return list(refs)


def _read_outputs(body: Graph, node: Node) -> list[TensorRef]:
    """The outputs of ``node`` something reads (a reader, or a function ``ret``)."""
    refs: dict[TensorRef, None] = {}
    for user in body.consumers(node):
        for ref in user.inputs:
            if ref.node == node.name:
                refs.setdefault(ref, None)
    if isinstance(body, FunctionGraph):
        for ref in body.ret.values():
            if ref.node == node.name:
                refs.setdefault(ref, None)
    return list(refs)


def _corrupt(body: Graph, ref: TensorRef, spec: FaultSpec) -> bool:
    """Insert the corrupting op after ``ref``; False when ``ref`` is not a float tensor."""
    producer = body[ref.node]
    dtype = _dtype(producer, ref)
    if dtype not in _FLOAT_DTYPES:
        return False
    base = producer.origin[0] if producer.origin else producer.name
    origin = producer.origin or (producer.name,)
    const = body.add_node(
        body.new_name(base, "fault_value"),
        "Const",
        attrs=_const_attrs(dtype, spec.value),
        device=producer.device,
        origin=origin,
    )
    op = "Mul" if spec.kind == "scale" else "Add"
    fault = body.add_node(
        body.new_name(base, "fault"),
        op,
        [ref, _output(body, const.name, "output")],
        attrs={"T": _attr_value(type=dtype)},
        device=producer.device,
        origin=origin,
    )
    placement = producer.meta.get(PLACEMENT)
    if placement is not None:
        const.meta[PLACEMENT] = fault.meta[PLACEMENT] = placement
    new = _output(body, fault.name, "z")
    body.replace_all_uses(ref, new, exclude=[const])
    _repoint_superseded(body, ref, new)
    return True


def _repoint_superseded(body: Graph, old: TensorRef, new: TensorRef) -> None:
    """Originals whose value ``old`` carried now name ``new`` (fetches and dumps see the fault)."""
    for node in body:
        sup: Superseded | None = node.meta.get(SUPERSEDED)
        if sup is None or old not in sup.outputs.values():
            continue
        outputs = {k: (new if v == old else v) for k, v in sup.outputs.items()}
        node.meta[SUPERSEDED] = dataclasses.replace(sup, outputs=outputs)


def _dtype(node: Node, ref: TensorRef) -> int | None:
    layout = output_layout(node)
    if layout is None:
        return None
    if ref.output_arg is not None:
        for arg, dtypes in layout:
            if arg == ref.output_arg:
                return dtypes[ref.index] if ref.index < len(dtypes) else None
        return None
    flat = [d for _, dtypes in layout for d in dtypes]
    return flat[ref.index] if ref.index < len(flat) else None


def _output(body: Graph, node: str, arg: str) -> TensorRef:
    return TensorRef(node, 0, arg) if isinstance(body, FunctionGraph) else TensorRef(node)


def _const_attrs(dtype: int, value: float) -> dict[str, Any]:
    import tensorflow as tf

    tensor = tf.make_tensor_proto(value, dtype=tf.dtypes.as_dtype(dtype), shape=[])
    return {"dtype": _attr_value(type=dtype), "value": _attr_value(tensor=tensor)}


def _attr_value(**fields: Any) -> Any:
    from tensorflow.core.framework import attr_value_pb2

    return attr_value_pb2.AttrValue(**fields)

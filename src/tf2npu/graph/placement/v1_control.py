"""v1 control flow in a dynamic-shape device graph (seed 000 case 03).

The device executes a graph of unknown shapes without v1 control operators (``Switch``,
``Merge``, ``Enter``, ``Exit``, ``NextIteration``, ``LoopCond``): it stops with "node
<name>(<type>) is v1 control operator, which is not supported, please convert to v2 control
operator". A static-shape graph runs them, and the adapter converts them when
``ENABLE_FORCE_V2_CONTROL`` is set (control flow v2 builds ``If``/``While`` instead).

A device graph is dynamic-shape here when the graph says so for certain:

* the session asks for it: ``dynamic_input=True`` (or a node's ``_graph_dynamic_input``, from
  ``set_graph_exec_config``) with ``dynamic_graph_execute_mode`` ``dynamic_execute``;
* a v1 loop variable changes shape every iteration: the value its ``NextIteration`` takes is
  a concatenation of the whole variable with more (``tf.concat([acc, ...], 0)`` under
  ``shape_invariants``), so no static shape holds for the loop even with known inputs. A
  concatenation of a slice of it (a sliding window) keeps the shape and does not count.

Only v1 control nodes placed on the device count: on the host TF runs them. Under
``dynamic_input=True`` with ``lazy_recompile`` nothing is reported: each input shape gets its
own compiled graph, and ModelZoo's ProtoAttend (a v1 loop growing three tensors by
``tf.concat``, run in this mode) is recorded as working on the device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tf2npu.config.options import NpuOptions
from tf2npu.graph.decisions import Diagnostics, Placement
from tf2npu.graph.ir import Graph, Node

__all__ = ["V1_CONTROL", "V1ControlInDynamicGraph", "find_v1_control", "report"]

V1_CONTROL = frozenset(
    {
        "Switch",
        "RefSwitch",
        "Merge",
        "RefMerge",
        "Enter",
        "RefEnter",
        "Exit",
        "RefExit",
        "NextIteration",
        "RefNextIteration",
        "LoopCond",
    }
)
_CONCATS = frozenset({"ConcatV2", "Concat"})
_PASS_THROUGH = frozenset({"Identity", "Snapshot"})
_NEXT = frozenset({"NextIteration", "RefNextIteration"})
_MERGES = frozenset({"Merge", "RefMerge"})
_DYNAMIC_INPUT = "_graph_dynamic_input"
_EXECUTE_MODE = "_graph_dynamic_graph_execute_mode"
_LAZY = "lazy_recompile"
_FORWARD = frozenset({"Identity", "Snapshot", "Switch", "RefSwitch"})
"""Ops that hand the loop variable on unchanged (``Switch`` output 1 is the body's copy)."""
_MAX_HOPS = 16


@dataclass(frozen=True, slots=True)
class V1ControlInDynamicGraph:
    """A v1 control node on the device in a graph the device runs with dynamic shapes."""

    node: str
    op: str
    why: str
    count: int
    """v1 control nodes on the device in all."""


def find_v1_control(
    graph: Graph, options: NpuOptions, final: dict[str, Placement]
) -> V1ControlInDynamicGraph | None:
    """The v1 control node the device rejects first, or None when the device runs the graph."""
    if options.env.force_v2_control:
        return None
    on_device = [n for n in graph if n.op in V1_CONTROL and _on_device(final, n)]
    if not on_device:
        return None
    mode = _dynamic_mode(graph, options)
    if mode == _LAZY:
        return None  # each input shape is compiled and run on its own
    if mode is not None:
        why = "dynamic_input=True compiles it as a dynamic-shape graph"
        return V1ControlInDynamicGraph(on_device[0].name, on_device[0].op, why, len(on_device))
    for merge in on_device:
        grown = _grown_by(graph, merge) if merge.op in _MERGES else None
        if grown is not None:
            why = (
                f"loop variable {merge.name!r} grows every iteration ({grown.op} {grown.name!r} "
                "concatenates it with more), so the loop has no static shape"
            )
            return V1ControlInDynamicGraph(merge.name, merge.op, why, len(on_device))
    return None


def report(found: V1ControlInDynamicGraph | None, diagnostics: Diagnostics) -> None:
    """One ``v1_control_dynamic_shape`` error for the graph, naming the node the device rejects."""
    if found is None:
        return
    more = f" (one of {found.count} v1 control nodes on the device)" if found.count > 1 else ""
    diagnostics.error(
        "v1_control_dynamic_shape",
        f"{found.node!r} ({found.op}) is TF v1 control flow{more} in a dynamic-shape device "
        f"graph: {found.why}; the device runs dynamic-shape graphs without v1 control "
        f"operators and fails with 'node {found.node}({found.op}) is v1 control operator, "
        "which is not supported, please convert to v2 control operator'",
        node=found.node,
        fix=(
            "convert the graph to v2 control flow: add tf.enable_control_flow_v2() and "
            "tf.enable_resource_variables() right after `import tensorflow as tf`, or export "
            "ENABLE_FORCE_V2_CONTROL=1"
        ),
    )


def _dynamic_mode(graph: Graph, options: NpuOptions) -> str | None:
    """``dynamic_graph_execute_mode`` when a node's or the session's ``dynamic_input`` is set."""
    for node in graph:
        if _flag(node.attrs.get(_DYNAMIC_INPUT)):
            return _text(node.attrs.get(_EXECUTE_MODE)) or "dynamic_execute"
    if not options.dynamic_input:
        return None
    return options.dynamic_graph_execute_mode


def _grown_by(graph: Graph, merge: Node) -> Node | None:
    """The concat that feeds ``merge``'s ``NextIteration`` with ``merge``'s own value, if any."""
    for ref in merge.inputs:
        producer = graph.get(ref.node)
        if producer is None or producer.op not in _NEXT or not producer.inputs:
            continue
        value = graph.get(producer.inputs[0].node)
        while value is not None and value.op in _PASS_THROUGH and value.inputs:
            value = graph.get(value.inputs[0].node)
        if value is not None and value.op in _CONCATS and _reads(graph, value, merge):
            return value
    return None


def _reads(graph: Graph, concat: Node, merge: Node) -> bool:
    """Whether ``merge``'s whole value (through ``Switch`` and ``Identity``) is one of several
    concatenated parts: a slice of it (a sliding window) keeps the shape, so it does not count."""
    values = concat.inputs[:-1] if concat.op == "ConcatV2" else concat.inputs[1:]
    if len(values) < 2:
        return False
    for ref in values:
        node = graph.get(ref.node)
        for _ in range(_MAX_HOPS):
            if node is None or node.op not in _FORWARD or not node.inputs:
                break
            node = graph.get(node.inputs[0].node)
        if node is not None and node.name == merge.name:
            return True
    return False


def _on_device(final: dict[str, Placement], node: Node) -> bool:
    placement = final.get(node.name)
    return placement is not None and placement.device


def _flag(value: Any) -> bool:
    return value is not None and value.WhichOneof("value") == "b" and bool(value.b)


def _text(value: Any) -> str:
    if value is None or value.WhichOneof("value") != "s":
        return ""
    return bytes(value.s).decode(errors="replace")

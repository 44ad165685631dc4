"""Per-node support predicates (reference §3.3): each returns ``None`` or the reason it refuses.

``supported(op)``: the op type is in the device op library, not gray in mixed compute, not a
``*Dataset``/``*DatasetV2`` op and not ``Const``/``_Arg``/``_Retval``/``StringJoin``. A call of a
library function is supported iff every node of the body is (recursively, ``Const`` allowed);
so is a node whose function attrs (``While`` bodies, ``If`` branches, ``PartitionedCall``'s
``f``) all name supported functions. *NPU-supporting* adds: not marked ``_without_npu_compile``
(counted in mixed compute only, as the anchor adapter does). The node-level rules of step 3
(variables under ``variable_placement=Host``, the mixed-compute resource rule) complete it.

Function verdicts are memoised, so the whole library is judged in one pass over its bodies.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tf2npu.dtypes import DT_RESOURCE
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import Placement
from tf2npu.graph.ir import Graph, Node
from tf2npu.graph.placement.reasons import host
from tf2npu.graph.placement.tensors import EdgeTypes

__all__ = ["FunctionVerdict", "Support", "function_refs"]

#: Never compiled by themselves (Consts are pulled in later, reference §3.3 steps 3 and 6).
NOT_COMPILED = frozenset({"Const", "_Arg", "_Retval", "StringJoin"})
#: Feeds: by the time the adapter runs, a fed Placeholder is an ``_Arg`` of the step.
FEEDS = frozenset({"Placeholder", "PlaceholderV2"})
VARIABLES = frozenset({"VariableV2", "Variable", "VarHandleOp", "TemporaryVariable"})
WITHOUT_NPU_COMPILE = "_without_npu_compile"


@dataclass(frozen=True, slots=True)
class FunctionVerdict:
    """Why a function body cannot be compiled: its first host node and that node's message."""

    function: str
    node: str
    message: str


def function_refs(node: Node) -> Iterator[str]:
    """Names of the functions ``node``'s attrs reference (``func`` and ``list(func)`` attrs)."""
    for value in node.attrs.values():
        which = value.WhichOneof("value")
        if which == "func":
            yield value.func.name
        elif which == "list":
            for func in value.list.func:
                yield func.name


class Support:
    """The step-3 predicates for the graphs of one engine run (functions memoised)."""

    def __init__(self, root: Graph, cfg: EngineConfig) -> None:
        self.root = root
        self.ops = cfg.ops
        self.mixed = cfg.options.mix_compile_mode
        self.variables_on_host = cfg.options.variable_placement == "Host"
        self._functions: dict[str, FunctionVerdict | None] = {}

    def op(self, node: Node) -> Placement | None:
        """``None`` if ``node`` is NPU-supporting; else the host placement saying why."""
        refusal = self._op_type(node)
        if refusal is not None:
            return refusal
        for name in function_refs(node):
            verdict = self.function(name)
            if verdict is not None:
                return host(
                    "function_host_op",
                    f"references function {name!r} that contains host op "
                    f"{verdict.node!r} ({verdict.message})",
                )
        if self.mixed and _flag(node, WITHOUT_NPU_COMPILE):
            return host("without_npu_compile", "under without_npu_compile_scope")
        return None

    def _op_type(self, node: Node) -> Placement | None:
        op = node.op
        if op in self.root.functions:
            verdict = self.function(op)
            if verdict is None:
                return None
            return host(
                "function_host_op",
                f"calls function {op!r} that contains host op {verdict.node!r} ({verdict.message})",
            )
        if op in NOT_COMPILED:
            return host("not_compiled", f"{op}: not compiled on its own")
        if op in FEEDS:
            return host("feed", f"{op}: fed from the host each step")
        info = self.ops.get(op)
        if op.endswith(("Dataset", "DatasetV2")) or info.host_only == "dataset":
            return host("dataset_op", f"{op}: tf.data op, runs in the host input pipeline")
        if not info.device_supported:
            return host("not_in_library", f"{op}: not in the device op library")
        if self.mixed and info.gray:
            return host("gray_op", f"{op}: gray op, host in mixed compute")
        return None

    def function(self, name: str) -> FunctionVerdict | None:
        """``None`` if every node of function ``name`` is supported (recursively), else why not.

        A function missing from the library is judged supported here: the node that names it
        is refused by its own op type. A recursive call is optimistic (judged supported) while
        its body is being judged; the first real host op decides.
        """
        if name in self._functions:
            return self._functions[name]
        body = self.root.functions.get(name)
        self._functions[name] = None
        if body is None:
            return None
        verdict: FunctionVerdict | None = None
        for node in body:
            if node.op == "Const":
                continue
            refusal = self.op(node)
            if refusal is not None:
                verdict = _innermost(name, node, refusal, self)
                break
        self._functions[name] = verdict
        return verdict

    def node(self, node: Node, types: EdgeTypes) -> Placement | None:
        """:meth:`op` plus the node-level rules of step 3 (top-level graph only)."""
        refusal = self.op(node)
        if refusal is not None:
            return refusal
        if self.variables_on_host and node.op in VARIABLES:
            return host(
                "variable_placement",
                f"{node.op}: variable kept on the host (variable_placement=Host)",
            )
        if self.mixed:
            return self._resource(node, types)
        return None

    def _resource(self, node: Node, types: EdgeTypes) -> Placement | None:
        """The mixed-compute rule: only resource variables (``VarHandleOp``) may go down."""
        if node.op == "VarHandleOp":
            return None
        graph = node.graph
        for ref in node.inputs:
            producer = graph.get(ref.node)
            if producer is None or producer.op == "VarHandleOp":
                continue
            if types.may_output(producer, DT_RESOURCE) and types.dtype(ref) == DT_RESOURCE:
                return host(
                    "resource_op",
                    f"reads resource tensor {str(ref)!r} from {producer.op} "
                    f"{producer.name!r}, not a VarHandleOp",
                )
        if types.has_output(node, DT_RESOURCE):
            return host(
                "resource_op", f"{node.op}: produces a resource tensor and is not a VarHandleOp"
            )
        return None


def _innermost(function: str, node: Node, refusal: Placement, support: Support) -> FunctionVerdict:
    """The verdict naming the deepest host op when the first refusal is itself a call."""
    if refusal.reason == "function_host_op":
        for name in (node.op, *function_refs(node)):
            inner = support.function(name) if name in support.root.functions else None
            if inner is not None:
                return FunctionVerdict(function, inner.node, inner.message)
    return FunctionVerdict(function, node.name, refusal.message)


def _flag(node: Node, attr: str) -> bool:
    value = node.attrs.get(attr)
    return value is not None and value.WhichOneof("value") == "b" and bool(value.b)

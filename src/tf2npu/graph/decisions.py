"""What the passes decide, per node and per graph: the contract between passes and reports.

Passes write their decisions into ``node.meta`` and ``graph.meta`` under the keys below; later
passes, the reports (``tf2npu graph inspect``, ``check_result.tf.json``) and the runtime read
them. Decisions are plain frozen dataclasses so a report never depends on a pass's internals.

Rewrites never delete an original node (the lint contract keeps original names and output
signatures). A pass that replaces an original node's outputs — precision running it in float16
behind a cast back, fusion computing it inside a fused op — rewires the consumers to the
replacement and records a :class:`Superseded` under :data:`SUPERSEDED`. The old node is then
dead code (executors prune it), and a fetch of its name is served by the replacement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tf2npu.errors import InternalError
from tf2npu.graph.ir import FunctionGraph, is_reserved_name

if TYPE_CHECKING:
    from tf2npu.graph.ir import Graph, Node, TensorRef

__all__ = [
    "CLUSTER",
    "DEVICE_FORM",
    "FUSED_BY",
    "FUSIONS_OFF",
    "FUSION_INSTANCES",
    "PLACEMENT",
    "PRECISION",
    "SUPERSEDED",
    "Cluster",
    "DeviceForm",
    "Diagnostic",
    "Diagnostics",
    "FusionInstance",
    "Placement",
    "PrecisionDecision",
    "Superseded",
    "is_fetch_only",
    "live_nodes",
    "replacement_of",
    "supersede",
]

#: ``node.meta`` key → :class:`Placement` (written by the placement pass, for every node).
PLACEMENT = "placement"
#: ``node.meta`` key → :class:`PrecisionDecision` (precision pass; every float node it judged).
PRECISION = "precision"
#: ``node.meta`` key → the GeOp name (str) of the cluster holding the node (partition pass).
CLUSTER = "cluster"
#: ``node.meta`` key → :class:`Superseded` (any rewriting pass).
SUPERSEDED = "superseded"
#: ``graph.meta`` key → ``list[Cluster]`` in GeOp order (partition pass, top-level graph).
CLUSTERS = "clusters"
#: ``node.meta`` key → the name (str) of the fusion rule that created the node (fusion pass).
FUSED_BY = "fused_by"
#: ``node.meta`` key → :class:`DeviceForm` (lowering, on a node it gave a CPU form).
DEVICE_FORM = "device_form"
#: ``graph.meta`` key → ``list[FusionInstance]`` the fusion pass applied, in the order it applied
#: them (top-level graph; function bodies' instances included).
FUSION_INSTANCES = "fusion_instances"
#: ``graph.meta`` key → ``list[FusionInstance]`` a trial's override turned off (``fused`` empty).
FUSIONS_OFF = "fusions_off"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a node runs and why.

    ``code`` is the vendor's ``check_result.tf.json`` reason code for a host node (1 not defined
    on the device, 2 gray op, 3 scenario problem: propagation, frames, scopes, resources,
    4 not supported) and 0 for a device node. ``reason`` is a short stable slug
    (``not_in_library``, ``gray_op``, ``string_edge``, ``frame``, ``without_npu_compile``, ...);
    ``message`` is the sentence a user reads ("PyFunc: not in the device op library").
    """

    device: bool
    code: int = 0
    reason: str = "supported"
    message: str = ""


@dataclass(frozen=True, slots=True)
class PrecisionDecision:
    """The dtype a float node computes in, before and after the precision pass, and why."""

    before: str
    after: str
    reason: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True, slots=True)
class Superseded:
    """An original node whose outputs a pass replaced; it stays in the graph, unread.

    ``outputs`` maps each replaced output of the node (as the ``TensorRef`` readers used:
    ``a:1`` at top level, ``a:out:0`` in a function body) to the tensor that now carries that
    value (same dtype and shape); ``by`` names the pass, ``rule`` the fusion rule or reason.
    """

    by: str
    outputs: Mapping[TensorRef, TensorRef]
    rule: str = ""


@dataclass(frozen=True, slots=True)
class DeviceForm:
    """What the device runs under a node's name once lowering gave the node a CPU form.

    A CPU form keeps the node's name and outputs but not its op type or inputs (a float16
    ``MatMul`` becomes ``Cast(MatMul(Cast(a), Cast(b)))``, the ``Cast`` taking the name); reports
    of the device's graph read them here. The first form of a node records it: a form of a form
    keeps the record of the node the passes decided.
    """

    op: str
    inputs: tuple[TensorRef, ...]
    control_inputs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FusionInstance:
    """One application of a fusion rule, named as the user's graph names it.

    ``root`` is the client node the rule was rooted at (for a root a pass made, such as a
    float16 clone, the client node it stands for; in a function body ``<function>:<node>``).
    ``(rule, root)`` identifies the instance across runs of one script: it is what
    ``TF2NPU_FUSION_INSTANCES`` and ``TF2NPU_INJECT_FAULT`` name. ``nodes`` are the client nodes
    the fused op computes, root first; ``fused`` is the IR name of the fused node, ``root_node``
    the IR name of the root and ``function`` the function body holding them ("" at top level).
    """

    rule: str
    root: str
    nodes: tuple[str, ...]
    fused: str = ""
    root_node: str = ""
    function: str = ""

    def to_json(self) -> dict[str, object]:
        """``{rule, root, nodes}``: the form reports and ``fusion_instances.json`` use."""
        return {"rule": self.rule, "root": self.root, "nodes": list(self.nodes)}


@dataclass(frozen=True, slots=True)
class Cluster:
    """One GeOp: its member nodes and the tensors crossing its boundary."""

    name: str
    nodes: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """An error or warning found while running the engine, with the node it is about."""

    severity: str  # "error" | "warning" | "info"
    code: str  # stable slug: "table_split", "fused_batch_norm_mixed", ...
    message: str
    node: str = ""
    fix: str = ""

    def render(self) -> str:
        where = f"{self.node}: " if self.node else ""
        # a message that ends in a list gets its fix on a line of its own
        gap = "\n" if "\n" in self.message else " "
        fix = f"{gap}Fix: {self.fix}" if self.fix else ""
        return f"{where}{self.message}{fix}"


@dataclass
class Diagnostics:
    """Collects diagnostics of one engine run, in order, without duplicates."""

    items: list[Diagnostic] = field(default_factory=list)
    # a set beside the list: a membership test on the list made one diagnostic per node of a
    # 100k-node fan-in quadratic (issue 9)
    _seen: set[Diagnostic] = field(default_factory=set, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._seen.update(self.items)

    def add(self, item: Diagnostic) -> None:
        if item not in self._seen:
            self._seen.add(item)
            self.items.append(item)

    def error(self, code: str, message: str, *, node: str = "", fix: str = "") -> None:
        self.add(Diagnostic("error", code, message, node, fix))

    def warning(self, code: str, message: str, *, node: str = "", fix: str = "") -> None:
        self.add(Diagnostic("warning", code, message, node, fix))

    def info(self, code: str, message: str, *, node: str = "", fix: str = "") -> None:
        self.add(Diagnostic("info", code, message, node, fix))

    def of(self, severity: str) -> list[Diagnostic]:
        return [d for d in self.items if d.severity == severity]


def is_fetch_only(graph: Graph, node: Node) -> bool:
    """A pass-created node no running node reads: it exists so a fetch of an original works.

    The precision pass's cast back of a float16 node whose readers all run in float16 (or were
    themselves superseded) is one: it computes only when a user fetches the original name.
    """
    if not is_reserved_name(node.name):
        return False
    if isinstance(graph, FunctionGraph) and graph.returns(node.name):
        return False
    readers = graph.consumers(node) + graph.consumers(node, control=True)
    return all(SUPERSEDED in reader.meta for reader in readers)


def live_nodes(graph: Graph) -> list[Node]:
    """The nodes of ``graph`` that run for the graph's own work (what reports count).

    Not superseded, and not fetch-only (:func:`is_fetch_only`).
    """
    return [n for n in graph if SUPERSEDED not in n.meta and not is_fetch_only(graph, n)]


def replacement_of(graph: Graph, ref: TensorRef) -> TensorRef:
    """The tensor that now carries ``ref``'s value, following supersessions transitively."""
    seen = set()
    while True:
        node = graph.get(ref.node)
        if node is None or SUPERSEDED not in node.meta or ref in seen:
            return ref
        seen.add(ref)
        sup: Superseded = node.meta[SUPERSEDED]
        nxt = sup.outputs.get(ref)
        if nxt is None:
            return ref
        ref = nxt


def supersede(
    graph: Graph,
    node: Node,
    outputs: Mapping[int, TensorRef] | Mapping[TensorRef, TensorRef],
    *,
    by: str,
    rule: str = "",
) -> int:
    """Hand ``node``'s outputs to their replacements and mark ``node`` superseded.

    Keys of ``outputs`` are the old tensors: an ``int`` ``i`` means ``node.output(i)`` (GraphDef
    syntax); in a function body pass the ``TensorRef`` readers use (``a:out:0``). Every data
    reader of an old tensor (and, in a function body, every ``ret`` entry) is rewired to its
    replacement; every control reader of ``node`` gets a control edge from each replacement node
    instead. Returns how many edges moved. ``node`` itself stays in the graph, unread.
    """
    refs: dict[TensorRef, TensorRef] = {}
    for key, new in outputs.items():
        old = node.output(key) if isinstance(key, int) else key
        if old.node != node.name:
            raise InternalError(f"supersede {node.name!r}: {old} is not one of its outputs")
        refs[old] = new
    moved = 0
    for old, new in refs.items():
        moved += graph.replace_all_uses(old, new)
    new_nodes = sorted({ref.node for ref in refs.values()})
    for reader in graph.consumers(node, control=True):
        graph.remove_control_input(reader, node.name)
        for name in new_nodes:
            if name != reader.name and name not in reader.control_inputs:
                graph.add_control_input(reader, name)
        moved += 1
    control_ret = getattr(graph, "control_ret", None)
    if control_ret is not None and new_nodes:
        for key, name in list(control_ret.items()):
            if name == node.name:
                control_ret[key] = new_nodes[0]
                moved += 1
    node.meta[SUPERSEDED] = Superseded(by, refs, rule)
    return moved

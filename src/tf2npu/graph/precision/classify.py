"""Decide, per device node that computes in float32, whether it runs in the lower dtype.

One walk over the nodes. A node's verdict depends on its own facts (op library, precision
class, signature, ``_keep_dtype``) and, under the mixed lists only, on the verdicts of its float
producers; walking in topological order makes those known first, so the rules stay linear:

* allow → lower; deny → float32 (``mixlist_allow`` / ``mixlist_deny`` when ``modify_mixlist``
  put the op type there), and the float32 spreads forward through gray and clear
  consumers (recorded as ``deny_from``, the deny node it came from);
* gray and clear → lower when a float input comes from a lowered node (a deny spread wins over
  that), else float32. A clear op between two lowered ops is thus lowered too: no cast
  ping-pong around a ``Reshape`` or ``Identity``.

Whatever a mode wants, a node is lowered only if its kernel has the lower dtype and its
signature can switch (:mod:`.signature`); otherwise it stays float32 and the verdict says why.
Producers reached over a loop back edge are not judged yet when their consumer is; they count
as float32.
"""

from __future__ import annotations

from dataclasses import dataclass

from tf2npu.config.env import KEEP_FP32_ENV
from tf2npu.config.precision import PrecisionClass
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import PLACEMENT, SUPERSEDED, Placement
from tf2npu.graph.ir import Graph, Node
from tf2npu.graph.precision.modes import Mode, Policy
from tf2npu.graph.precision.signature import FloatSignature, SignatureReader

__all__ = ["CONTROL_FLOW_OPS", "KEEP_DTYPE_ATTR", "Judged", "Verdict", "classify"]

#: The node attr ``npu_scope.keep_dtype_scope()`` sets (bool True in the anchor, int 1 later).
KEEP_DTYPE_ATTR = "_keep_dtype"

#: v1 control-flow primitives: they forward tensors of a frame, and lowering one would put a
#: cast on a loop back edge. They keep float32; a lowered producer feeding them is cast back.
_FRAME_OPS = ("Enter", "Exit", "Merge", "Switch", "NextIteration")
CONTROL_FLOW_OPS = frozenset({*_FRAME_OPS, *(f"Ref{op}" for op in _FRAME_OPS), "LoopCond"})


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a node is lowered, why (a stable slug and a sentence), and any deny spread."""

    lower: bool
    slug: str
    text: str
    deny_from: str = ""

    @property
    def reason(self) -> str:
        """``"<slug>: <text>"``, the form written into :class:`PrecisionDecision`."""
        return f"{self.slug}: {self.text}"


@dataclass(frozen=True, slots=True)
class Judged:
    verdict: Verdict
    signature: FloatSignature


def classify(graph: Graph, cfg: EngineConfig, mode: Mode) -> dict[str, Judged]:
    """Verdicts for the float32 device nodes of ``graph`` (one body, not its functions).

    The result is in topological order under the mixed policy, in node order otherwise.
    """
    reader = SignatureReader(mode.lower_enum)
    judged: dict[str, Judged] = {}
    # Only the mixed lists read producers' verdicts; other modes judge each node alone.
    order = graph.toposort() if mode.policy is Policy.MIXED else graph.nodes
    for node in order:
        if SUPERSEDED in node.meta:
            continue
        placement = node.meta.get(PLACEMENT)
        if not isinstance(placement, Placement) or not placement.device:
            continue
        signature = reader.read(node)
        if signature is None:
            continue
        verdict = _judge(node, signature, cfg, mode, judged)
        judged[node.name] = Judged(verdict, signature)
    return judged


def _judge(
    node: Node, sig: FloatSignature, cfg: EngineConfig, mode: Mode, judged: dict[str, Judged]
) -> Verdict:
    if _keeps_dtype(node):
        return Verdict(False, "keep_dtype_scope", f"under keep_dtype_scope ({KEEP_DTYPE_ATTR})")
    if cfg.keeps_fp32(node):
        # The same effect as keep_dtype_scope, named apart so a report says who asked.
        source = cfg.overrides.keep_fp32.source or KEEP_FP32_ENV
        return Verdict(False, "keep_fp32", f"kept in float32 by {source}")
    if node.op in CONTROL_FLOW_OPS:
        return Verdict(False, "control_flow", f"{node.op} forwards loop or branch tensors as is")
    want = _wanted(node, sig, cfg, mode, judged)
    if not want.lower:
        return want
    if mode.lower not in cfg.ops.get(node.op).float_dtypes:
        blocked = Verdict(False, f"no_{mode.tag}_kernel", f"{node.op} has no {mode.lower} kernel")
    elif sig.blocker:
        slug, _, text = sig.blocker.partition(": ")
        blocked = Verdict(False, slug, text)
    else:
        return want
    if want.slug == "no_fp32_kernel":
        cfg.diagnostics.warning(
            "precision_unrunnable",
            f"{node.op} has no float32 device kernel and cannot run in {mode.lower} "
            f"({blocked.text})",
            node=node.name,
            fix="keep the node on the host (npu_scope.without_npu_compile_scope) or feed it "
            f"{mode.lower} tensors in the model",
        )
    return blocked


def _wanted(
    node: Node, sig: FloatSignature, cfg: EngineConfig, mode: Mode, judged: dict[str, Judged]
) -> Verdict:
    """What the mode asks for this node, before kernel and signature checks."""
    if mode.policy is Policy.KEEP:
        note = f" ({mode.note})" if mode.note else ""
        return Verdict(False, "origin_dtype", f"precision_mode {mode.name} keeps float32{note}")
    if mode.policy is Policy.FORCE:
        return Verdict(True, "force_lower", f"precision_mode {mode.name} lowers every float op")
    if mode.policy is Policy.FALLBACK:
        fp32 = cfg.ops.get(node.op).has_fp32_kernel
        if fp32 is False:
            return Verdict(True, "no_fp32_kernel", f"{node.op} has no float32 kernel")
        known = "has a float32 kernel" if fp32 else "has no known float32 gap"
        return Verdict(False, "fp32_kernel", f"{node.op} {known}")
    cls = cfg.precision_class(node.op)
    by_mixlist = cls is not cfg.ops.get(node.op).precision
    return _mixed(node, sig, cls, mode.tag, judged, by_mixlist=by_mixlist)


def _mixed(
    node: Node,
    sig: FloatSignature,
    cls: PrecisionClass,
    tag: str,
    judged: dict[str, Judged],
    *,
    by_mixlist: bool = False,
) -> Verdict:
    # by_mixlist: modify_mixlist put the op type in this class (its own list says otherwise)
    edited = " by modify_mixlist" if by_mixlist else ""
    if cls is PrecisionClass.DENY:
        slug = "mixlist_deny" if by_mixlist else "deny_list"
        return Verdict(False, slug, f"{node.op} is in the deny list{edited}", node.name)
    if cls is PrecisionClass.ALLOW:
        slug = "mixlist_allow" if by_mixlist else "allow_list"
        return Verdict(True, slug, f"{node.op} is in the allow list{edited}")
    lowered_from = deny_from = ""
    inputs = node.inputs
    for position in sig.inputs:
        found = judged.get(inputs[position].node)
        if found is None:
            continue
        if found.verdict.deny_from and not deny_from:
            deny_from = found.verdict.deny_from
        if found.verdict.lower and not lowered_from:
            lowered_from = inputs[position].node
    if deny_from:
        return Verdict(False, "deny_spread", f"deny spreads from {deny_from!r}", deny_from)
    if lowered_from:
        return Verdict(True, "follows_lowered", f"follows {tag} input {lowered_from!r}")
    return Verdict(False, "no_lowered_input", f"{cls.value} op with no {tag} float input")


def _keeps_dtype(node: Node) -> bool:
    value = node.attrs.get(KEEP_DTYPE_ATTR)
    if value is None:
        return False
    return bool(getattr(value, "b", False) or getattr(value, "i", 0))

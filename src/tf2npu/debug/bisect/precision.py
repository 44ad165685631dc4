"""``tf2npu bisect precision``: the fewest op types, then nodes, that must stay float32.

Against the ``must_keep_origin_dtype`` run (the reference: every op in its own dtype):

1. run the reference, then the script under the mixed mode (``--mode``, default
   ``allow_mix_precision``); if the mode already matches the reference, or the reference
   itself fails, stop and say so;
2. the candidates are the op types the mode computed in float16 (the mode run records them),
   except those that only move data (:data:`MOVES_DATA`);
   one trial with all of them in the ``modify_mixlist`` black list must match the reference,
   else no list edit can restore the run;
3. :func:`~tf2npu.debug.bisect.search.minimal_set` over the op types: a smallest black list that
   restores the run (what seed 004's ``modify_mixlist`` fix writes). Several lists of one type
   often restore it: float32 spreads forward from a black-listed op through the gray ops after
   it, so black-listing the MatMul that feeds an overflowing Sum fixes the Sum too, at the cost
   of a whole float32 branch. The search prefers the types that appear *last* (it orders the
   candidates by their first node, latest first): the fix closest to the overflow, which moves
   the fewest ops to float32;
4. the same over the nodes of those types kept in float32 one by one (``TF2NPU_KEEP_FP32``,
   what ``npu_scope.keep_dtype_scope()`` does): the finer alternative. A black-listed type
   also makes float32 spread through the gray ops after it, a kept node does not, so the
   nodes alone may not be enough; the result says so then;
5. a re-run with the black list written: the fix is reported only when it restores the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tf2npu.debug.bisect.metric import LoweredNode, Metric
from tf2npu.debug.bisect.search import Bench, Config, Judge, Trial, minimal_set

__all__ = ["MOVES_DATA", "REFERENCE_MODE", "PrecisionResult", "bisect_precision"]

REFERENCE_MODE = "must_keep_origin_dtype"
MOVES_DATA = frozenset({
    "Identity", "IdentityN", "Snapshot", "StopGradient", "PreventGradient", "Cast",
    "Reshape", "Squeeze", "ExpandDims", "Transpose", "BroadcastTo", "Tile",
    "Pack", "Unpack", "ConcatV2", "Split", "SplitV", "Slice", "StridedSlice", "GatherV2",
})  # fmt: skip
"""TF op types that only move or reshape data: in float16 they lose nothing and cannot
overflow, so they are never candidates. Black-listing one is a fix by side effect only: a
variable's ``read`` is an ``Identity``, and float32 spreading from every read makes most of the
model float32 (measured on the overflow model: ``Identity`` was the black list found before)."""


@dataclass(frozen=True)
class PrecisionResult:
    """The outcome of a precision bisection (renderers in :mod:`~tf2npu.debug.bisect.report`)."""

    verdict: str
    """``found`` (a black list that restores the run, re-run checked), ``mode_matches``,
    ``reference_fails``, ``nothing_lowered``, ``not_restored``, ``rerun_fails``."""
    message: str
    mode: str
    types: tuple[str, ...] = ()
    """GE op types for ``{"black-list": {"to-add": [...]}}``."""
    nodes: tuple[LoweredNode, ...] = ()
    """The smallest set of nodes to keep in float32, empty when keeping nodes is not enough."""
    nodes_note: str = ""
    candidates: tuple[str, ...] = ()
    """Every GE op type the mode computed in float16, in search order (latest first)."""
    rerun: Trial | None = None

    @property
    def found(self) -> bool:
        return self.verdict == "found"


def bisect_precision(bench: Bench, metric: Metric, tolerance: float, mode: str) -> PrecisionResult:
    """Find the op types (then nodes) whose float16 makes the ``mode`` run differ.

    Raises:
        NoMetricError: the reference run recorded nothing to compare.
    """
    reference = bench.trial("reference", Config(precision_mode=REFERENCE_MODE))
    stop = _check_reference(reference, metric, mode)
    if stop is not None:
        return stop
    judge = Judge(metric, tolerance, reference.evidence)
    reference.judge(judge)
    base = bench.trial("mode", Config(precision_mode=mode))
    if base.judge(judge):
        return PrecisionResult(
            "mode_matches",
            f"the {mode} run matches the {REFERENCE_MODE} run (distance {base.distance:.3g} "
            f"<= tolerance {tolerance:g}): float16 does not change the {metric.value}",
            mode,
        )
    lowered = tuple(
        n
        for n in _unique(base.evidence.lowered)
        if n.type not in MOVES_DATA and "/_tf2npu_" not in n.node
    )
    # by first node, latest first: see the module docstring
    types = tuple(dict.fromkeys(n.ge_type for n in lowered))[::-1]
    lowered = lowered[::-1]
    if not types:
        return PrecisionResult(
            "nothing_lowered",
            f"no op computed in float16 under {mode}, yet the run differs from the "
            f"{REFERENCE_MODE} run (distance {base.distance:.3g}): the difference is not "
            "float16 (is the run reproducible? try --option deterministic=1)",
            mode,
        )

    def restores(part: Sequence[str]) -> bool:
        config = Config(precision_mode=mode, black_list=tuple(part))
        return bench.trial(f"types-fp32-{len(part)}", config).judge(judge)

    if not restores(types):
        return PrecisionResult(
            "not_restored",
            f"even with every op type that ran in float16 ({len(types)}) in the black list the "
            f"run does not match the {REFERENCE_MODE} run: no modify_mixlist fixes it",
            mode,
            candidates=types,
        )
    chosen = minimal_set(types, restores)[::-1]  # graph order
    nodes, note = _nodes(bench, judge, mode, [n for n in lowered if n.ge_type in chosen])
    nodes = nodes[::-1]  # back in graph order
    return _rerun(bench, judge, mode, chosen, nodes, note, types)


def _check_reference(reference: Trial, metric: Metric, mode: str) -> PrecisionResult | None:
    if reference.evidence.status != 0:
        return PrecisionResult(
            "reference_fails",
            f"the {REFERENCE_MODE} run failed (exit status {reference.evidence.status}; its "
            f"report is in {reference.folder}): there is no reference to restore",
            mode,
        )
    if metric is Metric.LOSS and not reference.evidence.finite:
        return PrecisionResult(
            "reference_fails",
            f"the loss is NaN or Inf in the {REFERENCE_MODE} run too: float16 is not the "
            "cause; try tf2npu bisect fusion",
            mode,
        )
    return None


def _nodes(
    bench: Bench, judge: Judge, mode: str, lowered: Sequence[LoweredNode]
) -> tuple[tuple[LoweredNode, ...], str]:
    """The fewest nodes of the chosen types to keep in float32, or () and why not."""

    def restores(part: Sequence[LoweredNode]) -> bool:
        keep = tuple(n.node for n in part)
        config = Config(precision_mode=mode, keep_fp32=keep)
        return bench.trial(f"nodes-fp32-{len(keep)}", config).judge(judge)

    if not restores(lowered):
        return (), (
            f"keeping all {len(lowered)} nodes of these types in float32 does not restore the "
            "run (the black list also makes the ops after them float32): use the mixlist"
        )
    return minimal_set(lowered, restores), ""


def _rerun(
    bench: Bench,
    judge: Judge,
    mode: str,
    chosen: tuple[str, ...],
    nodes: tuple[LoweredNode, ...],
    note: str,
    types: tuple[str, ...],
) -> PrecisionResult:
    rerun = bench.trial("rerun-mixlist", Config(precision_mode=mode, black_list=chosen, rerun=True))
    listed = ", ".join(chosen)
    if rerun.judge(judge):
        return PrecisionResult(
            "found",
            f"black-list {listed}: with them in float32 the {mode} run matches the "
            f"{REFERENCE_MODE} run (re-run distance {rerun.distance:.3g})",
            mode, chosen, nodes, note, types, rerun,
        )  # fmt: skip
    return PrecisionResult(
        "rerun_fails",
        f"black-list {listed} restored the run during the search but not when run again "
        f"(distance {rerun.distance:.3g}): the runs are not reproducible; try --option "
        "deterministic=1 or a larger --tolerance",
        mode, chosen, nodes, note, types, rerun,
    )  # fmt: skip


def _unique(lowered: Sequence[LoweredNode]) -> tuple[LoweredNode, ...]:
    seen: dict[str, LoweredNode] = {}
    for node in lowered:
        seen.setdefault(node.node, node)
    return tuple(seen.values())

"""``tf2npu bisect fusion``: the fusion rule, then the one instance of it, that breaks a run.

Seed 001's first step, automated and carried to the end:

1. run the script with every fusion on (``all-on``) and every fusion off (``all-off``); the
   all-off run is the reference. If all-on already matches it, or all-off fails too, fusions
   are not the cause: say so and stop;
2. :func:`~tf2npu.debug.bisect.search.halve` over the rules that fired in the all-on run (from its
   ``fusion_instances.json``), switching half of the rules off per trial;
3. ``halve`` over the instances of the guilty rule (named by their root node), switching half
   of the instances off per trial;
4. verify: one trial with only that instance off must match the reference.

Trials: 2 + ``ceil(log2(rules))`` + ``ceil(log2(instances))`` + 1, within the bound
``ceil(log2(rules)) + ceil(log2(instances)) + 3``. If the verification fails (two instances
are at fault, or they interact), one more trial checks the whole rule off, which is then the
answer (``verdict`` ``rule``); that trial is the only one past the bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tf2npu.artifacts.run_summary import read_summary
from tf2npu.debug.bisect.metric import FusionInstance, Metric
from tf2npu.debug.bisect.search import Bench, Config, Judge, Trial, halve, log2_runs
from tf2npu.debug.trials import LOG_FILE, TrialResult

__all__ = ["FOUND", "FusionResult", "bisect_fusion", "bound", "grown"]

FOUND = ("instance", "rule")
"""Verdicts that name a culprit whose fix was verified."""


@dataclass(frozen=True)
class FusionResult:
    """The outcome of a fusion bisection (renderers in :mod:`~tf2npu.debug.bisect.report`)."""

    verdict: str
    """``instance`` (found, verified), ``rule`` (the rule, not one instance), ``no_fusion``,
    ``script_failed`` (the all-on run failed, no rule fired),
    ``on_matches_off``, ``off_fails``, ``inconclusive``."""
    message: str
    rule: str | None = None
    instance: FusionInstance | None = None
    rules_fired: tuple[str, ...] = ()
    instances_of_rule: int = 0
    bound: int | None = None
    """The run bound for the rules and instances this run has, None before they are known."""
    roots: tuple[str, ...] = ()
    """Every root to switch off for the instance: its own, and those of the instances it grew
    from (see :func:`grown`)."""

    @property
    def found(self) -> bool:
        return self.verdict in FOUND


def bound(rules: int, instances: int) -> int:
    """The most trials a bisection over ``rules`` fired and ``instances`` of the guilty rule
    may use: ``ceil(log2(rules)) + ceil(log2(instances)) + 3``."""
    return log2_runs(rules) + log2_runs(instances) + 3


def bisect_fusion(
    bench: Bench, metric: Metric, tolerance: float, all_rules: Sequence[str]
) -> FusionResult:
    """Find the fusion instance that makes the run differ from the all-fusions-off run.

    ``all_rules`` are every rule the engine has (the all-off trial switches them all off).

    Raises:
        NoMetricError: the reference run recorded nothing to compare.
    """
    on = bench.trial("all-on", Config())
    instances = _unique(on.evidence.instances)
    if not instances and on.evidence.status != 0:  # it may have failed before any fusion
        return FusionResult(
            "script_failed",
            f"the run with every fusion on failed (exit status {on.evidence.status}: "
            f"{_failure(on)}) before any fusion rule fired; fix the script, or give --timeout "
            f"if it was stopped too early, then bisect again (its log: {on.folder / LOG_FILE})",
        )
    if not instances:
        return FusionResult(
            "no_fusion",
            "no fusion rule fired in the run with every fusion on: fusions cannot be the "
            f"cause (exit status {on.evidence.status}; its report is in {on.folder})",
        )
    off = bench.trial("all-off", Config(fusion_off=tuple((r, "") for r in all_rules)))
    rules = tuple(dict.fromkeys(i.rule for i in instances))
    stop = _check_reference(on, off, metric, tolerance, rules)
    if stop is not None:
        return stop
    judge = Judge(metric, tolerance, off.evidence)
    rule = halve(
        rules, lambda part: _fixed(bench, judge, f"rules-off-{len(part)}", [(r, "") for r in part])
    )
    members = grown(tuple(i for i in instances if i.rule == rule))
    culprit = halve(
        tuple(members),
        lambda part: _fixed(bench, judge, f"{rule}-off-{len(part)}", _off(rule, part, members)),
    )
    limit = bound(len(rules), len(members))
    if _fixed(bench, judge, "verify", _off(rule, [culprit], members)):
        return FusionResult(
            "instance",
            f"fusion rule {rule!r}, instance at {culprit.root!r}: with only it off the run "
            f"matches the all-off run",
            rule, culprit, rules, len(members), limit, members[culprit],
        )  # fmt: skip
    return _rule_only(bench, judge, rule, culprit, rules, len(members), limit)


def _failure(trial: Trial) -> str:
    """What a failed trial ended with: its run summary's error, else what its log says."""
    return TrialResult(
        trial.evidence.status,
        trial.folder,
        read_summary(trial.folder),
        0.0,
        trial.folder / LOG_FILE,
    ).failure()


def _check_reference(
    on: Trial, off: Trial, metric: Metric, tolerance: float, rules: tuple[str, ...]
) -> FusionResult | None:
    """A verdict that stops the bisection after the all-on and all-off runs, or None."""
    if off.evidence.status != 0:
        return FusionResult(
            "off_fails",
            f"the run with every fusion off failed too (exit status {off.evidence.status}; its "
            f"report is in {off.folder}): fusions are not the cause",
            rules_fired=rules,
        )
    if metric is Metric.LOSS and not off.evidence.finite:
        return FusionResult(
            "off_fails",
            "the loss is NaN or Inf with every fusion off too: fusions are not (only) the "
            "cause; try tf2npu bisect precision or tf2npu overflow",
            rules_fired=rules,
        )
    judge = Judge(metric, tolerance, off.evidence)
    off.judge(judge)
    if on.judge(judge):
        return FusionResult(
            "on_matches_off",
            f"the run with every fusion on matches the run with every fusion off (distance "
            f"{on.distance:.3g} <= tolerance {tolerance:g}): fusions do not change the "
            f"{metric.value}; if accuracy is still wrong the cause is elsewhere (try tf2npu "
            "bisect precision)",
            rules_fired=rules,
        )
    return None


def _rule_only(
    bench: Bench,
    judge: Judge,
    rule: str,
    culprit: FusionInstance,
    rules: tuple[str, ...],
    members: int,
    limit: int,
) -> FusionResult:
    """The single-instance answer failed its check: is the whole rule the answer?"""
    if _fixed(bench, judge, "verify-rule", [(rule, "")]):
        return FusionResult(
            "rule",
            f"fusion rule {rule!r}: with it off the run matches the all-off run, but no single "
            f"instance of it does (instance {culprit.root!r} alone is not enough: several "
            "instances are at fault, or they interact); switch the rule off",
            rule, None, rules, members, limit,
        )  # fmt: skip
    return FusionResult(
        "inconclusive",
        f"no single rule explains the difference: switching off rule {rule!r} alone does not "
        "make the run match the all-off run (several rules are at fault, or the runs are not "
        "reproducible: see the distances of the trials)",
        None, None, rules, members, limit,
    )  # fmt: skip


def _fixed(bench: Bench, judge: Judge, label: str, off: Sequence[tuple[str, str]]) -> bool:
    trial = bench.trial(label, Config(fusion_off=tuple(off)))
    return trial.judge(judge)


def grown(instances: Sequence[FusionInstance]) -> dict[FusionInstance, tuple[str, ...]]:
    """The instances of one rule a graph ends with -> the roots to switch off for each.

    The fusion pass runs to a fixpoint, so an instance can grow out of another: the dense
    layer's ``MatMul`` + ``BiasAdd`` fuse (root ``BiasAdd``), then the ``Relu`` joins them (root
    ``Relu``, whose nodes include the first's). Only the grown instance is a node of the
    final graph, and switching it off alone would leave the first fused; so an instance whose
    nodes are a strict subset of another's is not a candidate of its own, and its root is
    switched off with the other's.
    """
    nodes = {i: set(i.nodes) for i in instances}
    roots: dict[FusionInstance, list[str]] = {}
    for instance in instances:
        if not any(nodes[instance] < nodes[other] for other in instances):
            roots[instance] = [instance.root]
    for instance in instances:
        if instance in roots:
            continue
        owner = next(i for i in roots if nodes[instance] < nodes[i])
        roots[owner].append(instance.root)
    return {instance: tuple(found) for instance, found in roots.items()}


def _off(
    rule: str, part: Sequence[FusionInstance], members: dict[FusionInstance, tuple[str, ...]]
) -> list[tuple[str, str]]:
    return [(rule, root) for instance in part for root in members[instance]]


def _unique(instances: Sequence[FusionInstance]) -> tuple[FusionInstance, ...]:
    """One instance per (rule, root): a graph compiled twice lists its instances twice, and
    the instance switch names a root in every graph."""
    seen: dict[tuple[str, str], FusionInstance] = {}
    for instance in instances:
        seen.setdefault((instance.rule, instance.root), instance)
    return tuple(seen.values())

"""A fake :class:`~tf2npu.debug.bisect.search.Lab` for the bisection tests: no process, no TF.

A "run" is bad (its loss drifts from 1.0 to 2.0) while any culprit fusion instance is on, or
while any culprit op type / node computes in float16; every trial is logged so tests can
count runs and see the configurations tried.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tf2npu.debug.bisect.metric import Evidence, FusionInstance, LoweredNode
from tf2npu.debug.bisect.search import Config

GOOD = (3.0, 1.0)
BAD = (3.0, 2.0)


@dataclass
class FakeLab:
    instances: Sequence[FusionInstance] = ()
    culprits: frozenset[tuple[str, str]] = frozenset()
    """(rule, root) pairs that break the run while on."""
    lowered: Sequence[LoweredNode] = ()
    bad_types: frozenset[str] = frozenset()
    """GE types that break the run while float16 (all of them must be fixed)."""
    bad_nodes: frozenset[str] = frozenset()
    off_status: int = 0
    fail_status: int = 0
    """When not 0: every run fails with it before any fusion (a broken script), and its
    ``trial.log`` says ``fail_log``."""
    fail_log: str = ""
    noise: float = 1e-5
    runs: list[Config] = field(default_factory=list)
    loads: int = 0

    def run(self, config: Config, folder: Path) -> Evidence:
        assert folder.is_dir() and not any(folder.iterdir())
        self.runs.append(config)
        (folder / "config.json").write_text(config.key())
        if self.fail_status:
            (folder / "trial.log").write_text(self.fail_log)
            return Evidence(status=self.fail_status, seconds=0.5)
        return self.evidence(config, seconds=0.5)

    def load(self, folder: Path, status: int, seconds: float) -> Evidence:
        self.loads += 1
        config = Config.from_json(json.loads((folder / "config.json").read_text()))
        return self.evidence(config, seconds=seconds)

    def evidence(self, config: Config, seconds: float) -> Evidence:
        if config.precision_mode:
            return self._precision(config, seconds)
        off_rules = {rule for rule, root in config.fusion_off if not root}
        off = set(config.fusion_off)
        on = [i for i in self.instances if i.rule not in off_rules and (i.rule, i.root) not in off]
        # an instance grown out of another (its nodes a superset) needs that one fused first
        on = [
            i for i in on
            if all(j in on for j in self.instances if set(j.nodes) < set(i.nodes))
        ]  # fmt: skip
        bad = any((i.rule, i.root) in self.culprits for i in on)
        status = self.off_status if off_rules and not on else 0
        loss = BAD if bad else (GOOD[0], GOOD[1] + self.noise * len(config.fusion_off))
        return Evidence(status=status, loss=loss, instances=tuple(on), seconds=seconds)

    def _precision(self, config: Config, seconds: float) -> Evidence:
        if config.precision_mode == "must_keep_origin_dtype":
            return Evidence(loss=GOOD, seconds=seconds)
        bad_types = self.bad_types - set(config.black_list)
        bad_nodes = self.bad_nodes - set(config.keep_fp32)
        if self.bad_nodes and not self.bad_types:
            # node-level culprits: a type in the black list fixes its nodes too
            fixed = {n.node for n in self.lowered if n.ge_type in config.black_list}
            bad_nodes -= fixed
        elif self.bad_types and config.keep_fp32:
            kept = {n.ge_type for n in self.lowered if n.node in config.keep_fp32}
            users = [n for n in self.lowered if "/_tf2npu_" not in n.node]  # not pass-made
            nodes_of = {t: {n.node for n in users if n.ge_type == t} for t in kept}
            bad_types -= {t for t, nodes in nodes_of.items() if nodes <= set(config.keep_fp32)}
        loss = BAD if bad_types or bad_nodes else (GOOD[0], GOOD[1] * (1 + self.noise))
        return Evidence(loss=loss, lowered=tuple(self.lowered), seconds=seconds)

"""What ``tf2npu bisect`` writes and prints: the fix files, the ``--json`` object, the text.

Files (into ``--out``):

* ``fusion_switch.json``: the vendor's switch file with the guilty rule off, under every Ascend
  pass name it answers to (``{"Switch": {"GraphFusion": {"MatMulBiasAddFusionPass": "off"},
  "UBFusion": {}}}``): give it as ``fusion_switch_file`` on the device or here;
* ``fusion_instances_off.json``: only the guilty instance off (``{"off": [{"rule": ...,
  "root": ...}]}``), for ``TF2NPU_FUSION_INSTANCES`` / ``tf2npu run --fusion-instances``;
* ``modify_mixlist.json``: seed 004's ``{"black-list": {"to-add": [GE op types]}}``;
* ``bisect.html``: the trials drawn (:mod:`tf2npu.debug.bisect.page`);
* ``keep_fp32.json``: the nodes alternative (``{"nodes": [...]}``, ``TF2NPU_KEEP_FP32``), whose
  source fix is ``npu_scope.keep_dtype_scope()`` around the lines that create them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tf2npu.atomic import write_text_atomic
from tf2npu.debug.bisect.fusion import FusionResult
from tf2npu.debug.bisect.metric import LoweredNode, Metric, headline
from tf2npu.debug.bisect.precision import PrecisionResult
from tf2npu.debug.bisect.search import Bench, Trial

__all__ = [
    "INSTANCES_FILE",
    "KEEP_FILE",
    "MIXLIST_FILE",
    "SWITCH_FILE",
    "Files",
    "keep_dtype_snippet",
    "text_lines",
    "to_json",
    "write_fusion_files",
    "write_precision_files",
]

SWITCH_FILE = "fusion_switch.json"
INSTANCES_FILE = "fusion_instances_off.json"
MIXLIST_FILE = "modify_mixlist.json"
KEEP_FILE = "keep_fp32.json"
KEEP_DTYPE = "with npu_scope.keep_dtype_scope():"

KnownRules = Mapping[str, tuple[str, tuple[str, ...]]]
"""Rule name -> (category, Ascend aliases), as :func:`tf2npu.graph.fusion.known_rules`."""


@dataclass(frozen=True)
class Files:
    """The fix files written (None: not written)."""

    switch_file: Path | None = None
    instances_file: Path | None = None
    mixlist_file: Path | None = None
    keep_file: Path | None = None


def aliases(rule: str, known: KnownRules) -> tuple[str, ...]:
    """The Ascend pass names of ``rule`` (its own name when it has none)."""
    return known.get(rule, ("GraphFusion", ()))[1] or (rule,)


def write_fusion_files(result: FusionResult, out: Path, known: KnownRules) -> Files:
    """The switch file (rule off) and the instance switch file, when a culprit was found."""
    if not result.found or result.rule is None:
        return Files()
    category = known.get(result.rule, ("GraphFusion", ()))[0]
    switch: dict[str, dict[str, dict[str, str]]] = {"Switch": {"GraphFusion": {}, "UBFusion": {}}}
    switch["Switch"][category] = dict.fromkeys(aliases(result.rule, known), "off")
    roots = result.roots or ((result.instance.root,) if result.instance else ())
    off = [{"rule": result.rule, "root": root} for root in roots] or [{"rule": result.rule}]
    return Files(
        switch_file=_write(out / SWITCH_FILE, switch),
        instances_file=_write(out / INSTANCES_FILE, {"off": off}),
    )


def write_precision_files(result: PrecisionResult, out: Path) -> Files:
    """The mixlist and the keep-float32 node list, when a black list was found."""
    if not result.types:
        return Files()
    mixlist = _write(out / MIXLIST_FILE, {"black-list": {"to-add": list(result.types)}})
    keep = None
    if result.nodes:
        keep = _write(out / KEEP_FILE, {"nodes": [n.node for n in result.nodes]})
    return Files(mixlist_file=mixlist, keep_file=keep)


def _write(path: Path, data: object) -> Path:
    write_text_atomic(path, json.dumps(data, indent=1) + "\n")
    return path


def keep_dtype_snippet(nodes: Sequence[LoweredNode]) -> str:
    """The source alternative to the node list: each node's line under ``keep_dtype_scope``."""
    lines = ["from npu_bridge.estimator.npu import npu_scope", ""]
    for node in nodes:
        where = f"  # {node.where}" if node.where else ""
        lines += [
            KEEP_DTYPE,
            f"    ...  # the line that creates {node.node!r} ({node.type}){where}",
        ]
    return "\n".join(lines)


def to_json(
    result: FusionResult | PrecisionResult,
    bench: Bench,
    files: Files,
    metric: Metric,
    tolerance: float,
    known: KnownRules,
) -> dict[str, Any]:
    """The ``--json`` object (keys listed in docs/debugging.md#bisect)."""
    data: dict[str, Any] = {
        "kind": "fusion" if isinstance(result, FusionResult) else "precision",
        "verdict": result.verdict,
        "found": result.found,
        "message": result.message,
        "rule": None,
        "aliases": [],
        "instance": None,
        "where": None,
        "nodes": [],
        "types": [],
        "runs": bench.runs,
        "bound": None,
        "metric": metric.value,
        "tolerance": tolerance,
        "switch_file": _path(files.switch_file),
        "instances_file": _path(files.instances_file),
        "mixlist_file": _path(files.mixlist_file),
        "keep_file": _path(files.keep_file),
        "metric_by_run": {
            t.folder.name: _number(headline(t.evidence, metric)) for t in bench.trials
        },
        "trials": [t.to_json(metric) for t in bench.trials],
    }
    if isinstance(result, FusionResult):
        data.update(_fusion_keys(result, known))
    else:
        data.update(_precision_keys(result))
    return data


def _fusion_keys(result: FusionResult, known: KnownRules) -> dict[str, Any]:
    instance = result.instance
    return {
        "rule": result.rule,
        "aliases": list(aliases(result.rule, known)) if result.rule else [],
        "instance": instance.root if instance else None,
        "where": instance.where if instance else None,
        "nodes": list(instance.nodes) if instance else [],
        "roots": list(result.roots),
        "bound": result.bound,
        "rules_fired": list(result.rules_fired),
        "instances_of_rule": result.instances_of_rule,
    }


def _precision_keys(result: PrecisionResult) -> dict[str, Any]:
    return {
        "mode": result.mode,
        "types": list(result.types),
        "candidates": list(result.candidates),
        "nodes": [n.node for n in result.nodes],
        "nodes_note": result.nodes_note,
        "keep_dtype_scope": keep_dtype_snippet(result.nodes) if result.nodes else None,
        "rerun": _rerun(result.rerun),
    }


def _rerun(trial: Trial | None) -> dict[str, Any] | None:
    if trial is None:
        return None
    return {
        "folder": str(trial.folder),
        "distance": _number(trial.distance),
        "matches": trial.matches,
    }


def _path(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _number(value: float | None) -> float | str | None:
    if value is None or math.isfinite(value):
        return value
    return "inf" if value > 0 else "-inf"


def text_lines(data: Mapping[str, Any]) -> list[str]:
    """The report for the terminal, from the ``--json`` object."""
    lines = [f"tf2npu bisect {data['kind']}: {data['verdict']}", f"  {data['message']}"]
    if data["rule"]:
        lines.append(f"  rule      {data['rule']} (Ascend: {', '.join(data['aliases'])})")
    if data["instance"]:
        where = f"  created at {data['where']}" if data["where"] else ""
        lines.append(f"  instance  root {data['instance']}{where}")
        lines.append(f"  nodes     {', '.join(data['nodes'])}")
    if data["kind"] == "precision" and data["types"]:
        lines.append(f"  black-list  {', '.join(data['types'])}")
        if data["nodes"]:
            lines.append(f"  or keep in float32  {', '.join(data['nodes'])}")
        elif data["nodes_note"]:
            lines.append(f"  nodes: {data['nodes_note']}")
    lines += _trial_lines(data)
    for key, label in (
        ("switch_file", "fusion_switch_file (rule off)"),
        ("instances_file", "instance switch (TF2NPU_FUSION_INSTANCES)"),
        ("mixlist_file", "modify_mixlist"),
        ("keep_file", "keep float32 (TF2NPU_KEEP_FP32)"),
    ):
        if data[key]:
            lines.append(f"  wrote {data[key]}  {label}")
    if data.get("page"):
        lines.append(f"  wrote {data['page']}  the trials drawn")
    if data.get("keep_dtype_scope"):
        lines += [
            "  or in the script:",
            *("    " + s for s in data["keep_dtype_scope"].split("\n")),
        ]
    return lines


def _trial_lines(data: Mapping[str, Any]) -> list[str]:
    bound = f" (bound {data['bound']})" if data.get("bound") is not None else ""
    lines = [f"  runs {data['runs']}{bound}; {data['metric']} tolerance {data['tolerance']:g}"]
    for trial in data["trials"]:
        distance = trial["distance"]
        shown = (
            "-"
            if distance is None
            else distance
            if isinstance(distance, str)
            else f"{distance:.3g}"
        )
        verdict = {True: "matches", False: "differs", None: ""}[trial["matches"]]
        metric = "-" if trial["metric"] is None else f"{trial['metric']:.6g}"
        resumed = " (resumed)" if trial["resumed"] else ""
        name = Path(trial["folder"]).name
        lines.append(
            f"    {name:<28} exit {trial['status']}  {data['metric']} {metric}"
            f"  distance {shown} {verdict}  {trial['seconds']:.1f}s{resumed}"
        )
    return lines

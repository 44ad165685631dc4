"""The real :class:`~.search.Lab`: each trial is a recorded run in a fresh process
(:func:`tf2npu.debug.trials.run_trial`), its evidence read from its report folder.

A trial's :class:`~tf2npu.debug.bisect.search.Config` becomes its run spec
(:class:`~tf2npu.runtime.job.RunSpec`, written as the trial's ``run_spec.json``;
docs/debugging.md#bisect):

* fusions off → the spec's engine overrides (``engine.fusion``: whole rules, and single
  instances by their root), on top of the user's ``fusion_switch_file``;
* op types to float32 → ``modify_mixlist.json`` (the user's own ``--option modify_mixlist``
  file, if any, with the types added to its black list), given as ``--option modify_mixlist``:
  a mixlist is an option, which the device reads from a file too;
* nodes to float32 → ``engine.keep_fp32``;
* the precision mode → ``--option precision_mode``;
* the drill's faults (``bisect --inject-fault``) → ``engine.faults``.

Every trial runs with ``deterministic=1`` (unless the user's ``--option`` says otherwise), so
two runs of one configuration give the same numbers. The lowered nodes a trial's precision mode
chose are read from ``precision`` in its ``run_summary.json`` (every run records them).
"""

from __future__ import annotations

import functools
import json
import math
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tf2npu.artifacts.run_summary import SUMMARY_FILE, RunSummary
from tf2npu.config.faults import FaultSpec
from tf2npu.config.overrides import EngineOverrides, FusionOverride, KeepFp32
from tf2npu.debug.bisect.metric import Evidence, FusionInstance, LoweredNode, Metric
from tf2npu.debug.bisect.search import Config

__all__ = [
    "MIXLIST",
    "OVERRIDE_SOURCE",
    "ScriptLab",
    "overrides",
    "read_instances",
    "read_lowered",
]

MIXLIST = "modify_mixlist.json"
OVERRIDE_SOURCE = "the bisect trial's run_spec.json"
"""How the run names the engine overrides a trial made (diagnostics, the run summary)."""
FUSION_INSTANCES = "fusion_instances.json"
"""What ``tf2npu run --record`` writes: the fusion instances the engine applied."""
SUMMARY = SUMMARY_FILE


@dataclass(frozen=True)
class ScriptLab:
    """Runs ``script args`` with the user's ``options`` plus each trial's overrides."""

    script: Path
    args: tuple[str, ...]
    options: tuple[str, ...]
    """The user's ``--option K=V`` items."""
    metric: Metric
    timeout: float | None = None
    """``--timeout``; None: derived from the reference trial's time (``TrialTimeout``)."""
    runner: Callable[[Any, float | None], Any] | None = None
    """``run_trial(trial, timeout)``; default :func:`tf2npu.debug.trials.run_trial`."""
    clean: tuple[Path, ...] = ()
    """Folders removed before each trial (the script's checkpoint folder: a trial must not
    resume from the previous trial's checkpoint)."""
    faults: tuple[FaultSpec, ...] = ()
    """The drill's faults (``bisect --inject-fault``, or the inherited
    ``TF2NPU_INJECT_FAULT``), in every trial's engine overrides."""

    def run(self, config: Config, folder: Path) -> Evidence:
        from tf2npu.debug import trials

        for path in self.clean:
            shutil.rmtree(path, ignore_errors=True)
        options, engine = overrides(config, folder, self.options)
        spec = trials.trial_spec(
            self.script,
            self.args,
            report_dir=folder,
            options=options,
            engine=EngineOverrides(engine.fusion, engine.keep_fp32, self.faults),
        )
        trial = trials.Trial(spec)
        result = (self.runner or trials.run_trial)(trial, self.timeouts.seconds())
        return self.load(folder, int(result.status), float(result.seconds))

    @functools.cached_property
    def timeouts(self) -> Any:
        """The per-trial timeout (a ``TrialTimeout``: the reference run sets it)."""
        from tf2npu.debug.trials import TrialTimeout

        return TrialTimeout(self.timeout)

    def load(self, folder: Path, status: int, seconds: float) -> Evidence:
        from tf2npu.debug import records

        self.timeouts.note(status, seconds)
        steps = records.read_steps(folder) if (folder / "steps.jsonl").exists() else []
        variables = None
        if self.metric is Metric.VARIABLES and (folder / "variables.npz").exists():
            variables = records.read_variables(folder)
        summary = _summary(folder / SUMMARY)  # read once: the lowered nodes and the extras
        return Evidence(
            status=status,
            loss=tuple(_finite(v) for v in _losses(records, steps)),
            variables=variables,
            instances=read_instances(folder / FUSION_INSTANCES),
            lowered=_lowered(summary),
            seconds=seconds,
            extras=_summary_extras(summary),
        )


def _losses(records: Any, steps: Sequence[Any]) -> list[float]:
    """The loss per training step, then the loss of the script's last evaluation (if any): a
    fusion that only fires in the evaluation graph changes only the latter."""
    series: list[float] = list(records.loss_series(steps))
    if any(step.train and step.scalars for step in steps):
        series += records.loss_series([step for step in steps if not step.train])
    return series


def overrides(
    config: Config, folder: Path, user_options: Sequence[str]
) -> tuple[tuple[str, ...], EngineOverrides]:
    """The ``--option`` items and engine overrides of one trial; writes its mixlist file."""
    user = _option_map(user_options)
    options = list(user_options)
    if "deterministic" not in user:
        options.append("deterministic=1")
    if config.precision_mode:
        options = [o for o in options if not o.startswith("precision_mode=")]
        options.append(f"precision_mode={config.precision_mode}")
    if config.black_list:
        mixlist = _with_black_list(user.get("modify_mixlist", ""), config.black_list)
        options = [o for o in options if not o.startswith("modify_mixlist=")]
        options.append(f"modify_mixlist={_write(folder / MIXLIST, mixlist)}")
    fusion = FusionOverride(
        rules_off=frozenset(rule for rule, root in config.fusion_off if not root),
        instances_off=frozenset((rule, root) for rule, root in config.fusion_off if root),
        source=OVERRIDE_SOURCE if config.fusion_off else "",
    )
    keep = KeepFp32(frozenset(config.keep_fp32), OVERRIDE_SOURCE if config.keep_fp32 else "")
    return tuple(options), EngineOverrides(fusion, keep)


def _option_map(items: Sequence[str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in items if "=" in item)


def _with_black_list(user_file: str, types: Sequence[str]) -> dict[str, Any]:
    """The user's mixlist (if any) with ``types`` in ``black-list.to-add``, and out of the
    edits that would contradict that (``black-list.to-remove``, other lists' ``to-add``)."""
    data: dict[str, Any] = {}
    if user_file:
        data = json.loads(Path(user_file).read_text(encoding="utf-8"))
    added = set(types)
    for name, edits in data.items():
        if not isinstance(edits, dict):
            continue
        key = "to-remove" if name == "black-list" else "to-add"
        if key in edits:
            edits[key] = [op for op in edits[key] if op not in added]
    black = data.setdefault("black-list", {})
    black["to-add"] = list(dict.fromkeys([*black.get("to-add", []), *types]))
    return data


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path.absolute()


def _finite(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def read_instances(path: Path) -> tuple[FusionInstance, ...]:
    """The instances of ``fusion_instances.json`` (none when the file is missing)."""
    rows = _rows(path)
    return tuple(
        FusionInstance(
            str(row["rule"]),
            str(row["root"]),
            tuple(str(n) for n in row.get("nodes") or ()),
            row.get("where") or None,
        )
        for row in rows
    )


def read_lowered(path: Path) -> tuple[LoweredNode, ...]:
    """The lowered nodes of ``precision`` in ``run_summary.json`` (none when the file is
    missing), in the order the run compiled them."""
    return _lowered(_summary(path))


def _summary(path: Path) -> RunSummary | None:
    """The trial's run summary (None when it wrote none; not JSON is a ValueError)."""
    if not path.exists():
        return None
    return RunSummary.from_json(json.loads(path.read_text(encoding="utf-8")))


def _lowered(summary: RunSummary | None) -> tuple[LoweredNode, ...]:
    if summary is None:
        return ()
    return tuple(
        LoweredNode(row.op, row.tf_type or row.op_type, row.op_type, row.where or None)
        for row in summary.lowered
    )


def _rows(path: Path) -> list[Mapping[str, Any]]:
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list, got {type(data).__name__}")
    return [row for row in data if isinstance(row, Mapping)]


def _summary_extras(summary: RunSummary | None) -> dict[str, Any]:
    if summary is None:
        return {}
    return {"injected_faults": [fault.to_json() for fault in summary.injected_faults]}

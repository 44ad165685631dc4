"""The profile advisor: rules as a data table, findings that name the node, the line and the fix.

Each :class:`Rule` row holds its id, severity, the condition in words, the threshold, the
message and fix templates and where the rule comes from; only the condition's evaluation is
code (one small ``check`` function per row). Thresholds are the msprof-analyze advisor's where
it has one (20 µs for AI CPU tasks, reference debug-tools.md §6.4), TensorFlow profiler's for
input-bound steps (5 % / 20 %), and ours where neither has one (said in ``source``). TF-free.

Findings use the warm runs when there are any: the first run of each signature builds
TensorFlow's executor and would dominate every share.

>>> [rule.id for rule in RULES][:3]
['reduce_sum_fp16', 'aicpu_ops', 'aicpu_dtype']
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tf2npu.artifacts.profile_raw import RawProfile
from tf2npu.debug.profile.tables import AI_CORE, AI_CPU, OpRow, StepRow
from tf2npu.findings import Finding, Severity, Where

__all__ = [
    "RULES",
    "Evidence",
    "Rule",
    "advise",
    "figures",
    "source_line",
    "to_json",
    "to_markdown",
]

TOP = 10
"""Ops named per finding (msprof-analyze's ``OPERATOR_OUT_TOPK``)."""
REDUCE_SUM_TYPES = frozenset({"ReduceSumD", "ReduceSum", "Sum"})
MIXLIST_FIX = '{"black-list": {"to-add": ["ReduceSumD"]}}'
QUIET_HOST_TYPES = frozenset(
    {"NoOp", "Const", "Identity", "VariableV2", "VarHandleOp", "Placeholder", "_Arg", "_Retval"}
)
"""Host ops that only hand over a value: never "hot"."""


@dataclass(frozen=True)
class Evidence:
    """What the rules read: the warm op rows and steps, the raw profile."""

    profile: RawProfile
    rows: Sequence[OpRow]
    steps: Sequence[StepRow]

    @property
    def op_rows(self) -> list[OpRow]:
        return [row for row in self.rows if not row.is_memcpy]

    @property
    def total_us(self) -> float:
        return sum(row.duration_us for row in self.op_rows) or 1.0

    @property
    def iterations(self) -> int:
        return len({(row.model, row.iteration) for row in self.rows}) or 1


@dataclass(frozen=True)
class Hit:
    """A rule matched: the node, its source line, the values its templates use."""

    node: str
    where: str
    values: Mapping[str, Any]
    variant: str = "default"


Check = Callable[["Evidence", "Rule"], Iterable[Hit]]


@dataclass(frozen=True)
class Rule:
    """One advisor rule (a row of :data:`RULES`)."""

    id: str
    severity: str
    condition: str
    threshold: float
    unit: str
    message: str
    fix: Mapping[str, str]
    """Fix templates by variant (``default`` always there)."""
    source: str
    check: Check

    def finding(self, hit: Hit) -> Finding:
        """The shared :class:`~tf2npu.findings.Finding`; its ``evidence`` is the figures the
        rule measured, as a JSON object (:func:`figures` reads it back)."""
        values = {"threshold": _number(self.threshold), "node": hit.node, **hit.values}
        measured = {k: v for k, v in hit.values.items() if isinstance(v, int | float)}
        file, line = source_line(hit.where)
        return Finding(
            id=self.id,
            severity=Severity(str(hit.values.get("severity", self.severity))),
            cause=self.message.format(**values),
            fix=self.fix.get(hit.variant, self.fix["default"]).format(**values),
            where=Where(hit.node, str(hit.values.get("type", "")), file, line),
            source=self.source,
            evidence=json.dumps(measured, sort_keys=True),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity,
            "condition": self.condition,
            "threshold": self.threshold,
            "unit": self.unit,
            "message": self.message,
            "fix": dict(self.fix),
            "source": self.source,
        }


# -- the checks ---------------------------------------------------------------------------------


def _by_op(rows: Iterable[OpRow]) -> dict[str, list[OpRow]]:
    found: dict[str, list[OpRow]] = defaultdict(list)
    for row in rows:
        found[row.name].append(row)
    return found


def _slow(
    evidence: Evidence, rule: Rule, keep: Callable[[OpRow], bool]
) -> list[tuple[str, list[OpRow]]]:
    """Ops whose rows pass ``keep`` and whose longest run reaches the rule's threshold, by
    total time, the top :data:`TOP`."""
    groups = _by_op(row for row in evidence.op_rows if keep(row))
    slow = [(n, rs) for n, rs in groups.items() if max(r.duration_us for r in rs) >= rule.threshold]
    slow.sort(key=lambda item: -sum(r.duration_us for r in item[1]))
    return slow[:TOP]


def _times(evidence: Evidence, rows: Sequence[OpRow]) -> dict[str, Any]:
    total = sum(r.duration_us for r in rows)
    return {
        "max_us": round(max(r.duration_us for r in rows), 1),
        "avg_us": round(total / len(rows), 1),
        "share": round(100 * total / evidence.total_us, 1),
        "runs": len(rows),
    }


def _reduce_sum_fp16(evidence: Evidence, rule: Rule) -> Iterable[Hit]:
    def keep(row: OpRow) -> bool:
        return (
            row.op_type in REDUCE_SUM_TYPES
            and row.task_type == AI_CORE
            and row.input_dtypes.split(";")[0] == "DT_FLOAT16"
        )

    mixlist = str(evidence.profile.options.get("modify_mixlist", ""))
    mode = str(evidence.profile.options.get("precision_mode", ""))
    for name, rows in _slow(evidence, rule, keep):
        facts = rows[0].facts
        lowered = facts is not None and facts.precision.endswith("float16")
        variant = ("mixlist_file" if mixlist else "mixlist") if lowered else "cast"
        origin = rows[0].origin or name
        values = {**_times(evidence, rows), "type": rows[0].op_type, "origin": origin,
                  "shape": rows[0].input_shapes.split(";")[0], "mode": mode,
                  "mixlist": mixlist, "json": MIXLIST_FIX}  # fmt: skip
        yield Hit(name, rows[0].where, values, variant)


def _aicpu_ops(evidence: Evidence, rule: Rule) -> Iterable[Hit]:
    def keep(row: OpRow) -> bool:
        return row.task_type == AI_CPU and row.op_type not in QUIET_HOST_TYPES

    for name, rows in _slow(evidence, rule, keep):
        facts = rows[0].facts
        on_host = not rows[0].geop
        why = ""
        if facts is not None and on_host:
            why = facts.host_message or facts.host_reason
        elif not on_host:
            why = f"the device has no AI Core kernel for {rows[0].op_type} in these dtypes"
        values = {**_times(evidence, rows), "type": rows[0].op_type,
                  "side": "on the host" if on_host else f"on the device's AI CPU ({rows[0].geop})",
                  "why": why or "placement", "origin": rows[0].origin or name}  # fmt: skip
        yield Hit(name, rows[0].where, values, "host" if on_host else "default")


def _aicpu_dtype(evidence: Evidence, rule: Rule) -> Iterable[Hit]:
    def keep(row: OpRow) -> bool:
        dtypes = set(row.input_dtypes.split(";")) | set(row.output_dtypes.split(";"))
        return bool(row.geop) and bool(dtypes & {"DT_DOUBLE", "DT_INT64"})

    for name, rows in _slow(evidence, rule, keep):
        dtypes = set(rows[0].input_dtypes.split(";")) | set(rows[0].output_dtypes.split(";"))
        wide = "DT_DOUBLE" if "DT_DOUBLE" in dtypes else "DT_INT64"
        narrow = "float32" if wide == "DT_DOUBLE" else "int32"
        if rows[0].task_type != AI_CPU and wide == "DT_INT64":
            continue  # an AI Core kernel takes it
        values = {**_times(evidence, rows), "type": rows[0].op_type, "dtype": wide,
                  "narrow": narrow, "origin": rows[0].origin or name}  # fmt: skip
        yield Hit(name, rows[0].where, values)


def _cast_share(evidence: Evidence, rule: Rule) -> Iterable[Hit]:
    casts = [row for row in evidence.op_rows if row.op_type == "Cast"]
    if not casts:
        return
    share = 100 * sum(r.duration_us for r in casts) / evidence.total_us
    if share < rule.threshold:
        return
    groups = _by_op(casts)
    top = sorted(groups.items(), key=lambda item: -sum(r.duration_us for r in item[1]))
    name, rows = top[0]
    names = ", ".join(n for n, _ in top[:3])
    inserted = sum(1 for n in groups if "_to_" in n or (groups[n][0].origin not in ("", n)))
    values = {"share": round(share, 1), "casts": len(groups), "inserted": inserted,
              "top": names, "mode": evidence.profile.options.get("precision_mode", "")}  # fmt: skip
    yield Hit(name, rows[0].where, values)


def _copies(evidence: Evidence, rule: Rule) -> Iterable[Hit]:
    copies = [row for row in evidence.rows if row.is_memcpy and not row.session_io]
    if not copies:
        return
    steps = len({(r.model, r.iteration) for r in copies})
    per_step = len(copies) / steps
    if per_step < rule.threshold:
        return
    tensors: dict[str, list[OpRow]] = defaultdict(list)
    for row in copies:
        tensors[row.origin].append(row)
    top = sorted(tensors.items(), key=lambda item: -sum(r.nbytes for r in item[1]))[:TOP]
    tensor, rows = top[0]
    node = tensor.rpartition(":")[0] or tensor
    facts = evidence.profile.facts_of(rows[0].model).get(node)
    values = {"per_step": round(per_step, 1), "bytes": round(sum(r.nbytes for r in copies) / steps),
              "tensors": ", ".join(t for t, _ in top[:3]), "tensor": tensor}  # fmt: skip
    yield Hit(node, facts.where if facts is not None else "", values)


def _recompiles(evidence: Evidence, rule: Rule) -> Iterable[Hit]:
    for model in sorted(evidence.profile.models.values(), key=lambda m: m.number):
        compiles = model.plans - 1
        if compiles < rule.threshold:
            continue
        values = {"model": model.number, "compiles": compiles, "runs": model.runs,
                  "fetches": ", ".join(model.fetches[:3]) or "(targets only)"}  # fmt: skip
        yield Hit("", "", values)


def _input_bound(evidence: Evidence, rule: Rule) -> Iterable[Hit]:
    steps = [s for s in evidence.steps if s.train and s.data_aug_us is not None]
    if not steps:
        return
    step_us = sum(s.iteration_us for s in steps) or 1.0
    share = 100 * sum(s.input_us for s in steps) / step_us
    if share < rule.threshold:
        return
    high = share >= INPUT_HIGH
    values = {"share": round(share, 1), "steps": len(steps),
              "level": "HIGHLY" if high else "MODERATELY",
              "severity": "warning" if high else "info"}  # fmt: skip
    yield Hit("", "", values)


def _fusion_off(evidence: Evidence, rule: Rule) -> Iterable[Hit]:
    seen = set()
    for record in evidence.profile.compiles:
        for d in record.diagnostics:
            if d.get("code") != "fusion_rule_switched_off" or d.get("node") in seen:
                continue
            seen.add(d.get("node"))
            values = {"message": d.get("message", ""), "diagnostic_fix": d.get("fix", "")}
            yield Hit(str(d.get("node", "")), str(d.get("where", "")), values)


INPUT_HIGH = 20.0
"""TensorFlow profiler: a step more than 20 % waiting for input is *highly* input-bound."""
AICPU_MIN_US = 20.0
"""msprof-analyze ``_MIN_TASK_DURATION``: AI CPU tasks shorter than this are not reported."""
_MSPROF = "msprof-analyze advisor AICPU Issues (debug-tools.md §6.4)"

RULES: tuple[Rule, ...] = (
    Rule(
        "reduce_sum_fp16", "warning",
        "a device ReduceSum whose input is float16 runs at least the threshold",
        AICPU_MIN_US, "µs",
        "{node} ({type}, stands for {origin}) reduces a float16 input ({shape}) on the device: "
        "float16 ReduceSum cannot use several AI Cores (block_dim 1), up to {max_us} µs here, "
        "{share}% of op time",
        {
            "mixlist": "precision_mode {mode} casts it to float16: put ReduceSumD on the "
            "mixed-precision black list: write {json} to a JSON file and pass its path as "
            "modify_mixlist (NPURunConfig(modify_mixlist=PATH) or "
            'custom_op.parameter_map["modify_mixlist"].s = tf.compat.as_bytes(PATH))',
            "mixlist_file": "precision_mode {mode} casts it to float16: add \"ReduceSumD\" to "
            'the "black-list" "to-add" list of your modify_mixlist file {mixlist} '
            "(the result reads like {json})",
            "cast": "the model feeds it float16 itself: cast its input to float32 first, e.g. "
            "tf.reduce_sum(tf.cast(x, tf.float32), ...), and cast the result back if needed",
            "default": "cast its input to float32, or black-list ReduceSumD via modify_mixlist "
            "{json}",
        },
        "seed 000 case 04; Ascend TF FAQ networktest_reducesum_low_performance "
        "(debug-tools.md §7 #17)",
        _reduce_sum_fp16,
    ),
    Rule(
        "aicpu_ops", "warning",
        "an op runs as an AI CPU task (a host op, or a device op without an AI Core kernel) "
        "for at least the threshold",
        AICPU_MIN_US, "µs",
        "{node} ({type}) runs {side}, inside the run, up to {max_us} µs ({share}% of op time, "
        "{runs} runs): {why}",
        {
            "host": "keep it out of the training step (compute it in the input pipeline or "
            "once before the loop), or make it a device op ({why}); see docs/placement.md",
            "default": "avoid the AI CPU operator: change its dtype to one the AI Core kernel "
            "takes, or replace it",
        },
        _MSPROF + "; host ops count as AI CPU here",
        _aicpu_ops,
    ),
    Rule(
        "aicpu_dtype", "warning",
        "a device op computes in float64 or int64 (AI CPU on the device) for at least the "
        "threshold",
        AICPU_MIN_US, "µs",
        "{node} ({type}) computes in {dtype} on the device, which the AI Core cannot: it runs "
        "on the AI CPU, up to {max_us} µs here",
        {"default": "convert it to {narrow}: build {origin} from {narrow} tensors "
                    "(tf.cast(x, tf.{narrow})) or give its constants dtype={narrow}"},
        _MSPROF + " (DOUBLE: convert double type operator to float)",
        _aicpu_dtype,
    ),
    Rule(
        "cast_share", "warning",
        "Cast ops take more than the threshold of all op time (precision churn)",
        10.0, "%",
        "Cast ops take {share}% of op time ({casts} casts, {inserted} inserted by the "
        "precision pass; slowest: {top}): tensors go back and forth between dtypes",
        {"default": "keep each region in one dtype: under precision_mode {mode}, add the gray "
                    "ops between two casts to the white list (modify_mixlist "
                    '{{"white-list": {{"to-add": ["<op type>"]}}}}) or keep a region in float32 '
                    "with npu_scope.keep_dtype_scope(); check docs/precision.md"},
        "ours (no msprof rule); the threshold is a judgement",
        _cast_share,
    ),
    Rule(
        "host_device_copy", "warning",
        "tensors cross between a GeOp and host ops (not the session's feeds and fetches) at "
        "least the threshold times per step",
        1.0, "copies/step",
        "{per_step} host-device copies per step ({bytes} bytes per step) between GeOps and "
        "host ops; largest: {tensors}",
        {"default": "move the host op reading or producing {tensor} onto the device (or out "
                    "of the step), so the step stays in one GeOp; tf2npu graph inspect --html "
                    "shows the host ops and why"},
        "ours: each copy is a host-device transfer and a device sync on the NPU",
        _copies,
    ),
    Rule(
        "recompile", "warning",
        "a run signature's graph was compiled again while it ran, at least the threshold times",
        1.0, "compiles",
        "the graph of run signature {model} (fetching {fetches}) was compiled {compiles} more "
        "time(s) during {runs} runs: ops are being added to the graph while it trains",
        {"default": "create every op before the training loop (no tf.assign, tf.train.Saver, "
                    "tf.constant or optimizer.minimize inside it); call "
                    "tf.get_default_graph().finalize() after building to find the line"},
        "ours: the adapter compiles a GE graph per graph change (graphs_compiled in the run "
        "summary)",
        _recompiles,
    ),
    Rule(
        "input_bound", "warning",
        "training steps wait for input (gap before FP start plus GetNext) at least the "
        "threshold of step time",
        5.0, "%",
        "training steps are {level} input-bound: {share}% of step time waits for input "
        "({steps} steps)",
        {"default": "speed up the input pipeline: dataset.prefetch(), "
                    "num_parallel_calls in map(), larger shuffle/cache, or feed with "
                    "enable_data_pre_proc (GetNext on the device) instead of feed_dict"},
        "TensorFlow profiler input-bound classes: > 20% highly, > 5% moderately",
        _input_bound,
    ),
    Rule(
        "fusion_switched_off", "info",
        "a fusion rule switched off by fusion_switch_file would have fused here",
        1.0, "matches",
        "{message}",
        {"default": "{diagnostic_fix}"},
        "graph engine diagnostic fusion_rule_switched_off (docs/fusion.md)",
        _fusion_off,
    ),
)  # fmt: skip
"""The advisor's rules, in the order findings are listed."""


def advise(evidence: Evidence, rules: Sequence[Rule] = RULES) -> list[Finding]:
    """Every finding of every rule, errors and warnings first (stable within a severity)."""
    findings = [rule.finding(hit) for rule in rules for hit in rule.check(evidence, rule)]
    return sorted(findings, key=lambda f: -f.severity.rank)


def figures(finding: Finding) -> dict[str, Any]:
    """The figures a profile rule measured (its finding's ``evidence``)."""
    value = json.loads(finding.evidence) if finding.evidence else {}
    return value if isinstance(value, dict) else {}


def source_line(where: str) -> tuple[str, int]:
    """``("train.py", 9)`` from ``"train.py:9 in <module>"`` (``("", 0)`` when empty).

    >>> source_line("/a/train.py:9 in main")
    ('/a/train.py', 9)
    """
    location = where.split(" in ", 1)[0]
    file, _, line = location.rpartition(":")
    if not file or not line.isdigit():
        return location, 0
    return file, int(line)


def to_json(findings: Sequence[Finding], rules: Sequence[Rule] = RULES) -> str:
    data = {
        "schema_version": 1,
        "findings": [f.to_json() for f in findings],
        "rules": [rule.to_json() for rule in rules],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def to_markdown(findings: Sequence[Finding], title: str) -> str:
    lines = [f"# {title}", ""]
    if not findings:
        lines += ["No rule matched: nothing to advise.", ""]
    for f in findings:
        node = f.where.node
        lines.append(f"## {f.severity.value}: {f.id}" + (f" — `{node}`" if node else ""))
        lines.append("")
        lines.append(f"- **Cause**: {f.cause}")
        if f.where.file:
            line = f":{f.where.line}" if f.where.line else ""
            lines.append(f"- **Where**: `{f.where.file}{line}`")
        lines.append(f"- **Fix**: {f.fix}")
        lines.append(f"- **Rule source**: {f.source}")
        lines.append("")
    lines += [
        "## Rules",
        "",
        "| id | condition | threshold | source |",
        "| --- | --- | --- | --- |",
    ]
    for rule in RULES:
        threshold = f"{_number(rule.threshold)} {rule.unit}"
        lines.append(f"| {rule.id} | {rule.condition} | {threshold} | {rule.source} |")
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    return f"{value:g}"

"""Views of an :class:`~.analysis.OverflowReport`: text lines, the summary file,
the proposed mixlist and JSON (TF-free).

The text follows the vendor tools: precision_tool's ``ac`` panel (title ``[OpType][TaskId]
op_name``, lines `` - [AI Core][Status:32][TaskId:3] ['floating-point compute overflow']``,
`` - First overflow file timestamp [<ts>] -``, then ``[Shape][Dtype][Max][Min][Mean]`` per
tensor) and msaccucmp's ``overflow_summary_<YYYYmmddHHMMSS>.txt`` (blocks separated by a
``=====[i]=====`` line, each opening with `` [<unit>][TaskId:<t>][StreamId:<s>][Status:<st>]``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tf2npu.atomic import write_first_free

if TYPE_CHECKING:  # numpy is imported only when a dump is read, not by the CLI's start-up
    from tf2npu.debug.overflow.analysis import GraphNode, Overflow, OverflowReport, TensorSummary

__all__ = [
    "MIXLIST_NAME",
    "SUMMARY_PREFIX",
    "Outputs",
    "detail_lines",
    "mixlist_json",
    "status_lines",
    "summary_text",
    "tensor_line",
    "title",
    "to_json",
    "write_outputs",
]

MIXLIST_NAME = "overflow_mixlist.json"
SUMMARY_PREFIX = "overflow_summary_"
SUMMARY_TIME = "%Y%m%d%H%M%S"
KEEP_DTYPE = "with npu_scope.keep_dtype_scope():"
_KINDS = {
    "saturation": "saturation (a float16 result reached ±65504)",
    "inf_nan": "inf_nan (Inf or NaN from finite inputs)",
}


def title(overflow: Overflow) -> str:
    """``[OpType][TaskId] op_name``."""
    return f"[{overflow.op_type}][{overflow.record.task_id}] {overflow.op_name}"


def status_lines(overflow: Overflow) -> list[str]:
    """`` - [AI Core][Status:32][TaskId:3] ['floating-point compute overflow']`` per unit that
    overflowed."""
    return [
        f" - [{e.unit}][Status:{e.status}][TaskId:{overflow.record.task_id}] {list(e.meanings)}"
        for e in overflow.record.overflowed
    ]


def _number(value: float) -> str:
    return format(value, ".6g")


def tensor_line(tensor: TensorSummary) -> str:
    """``Output 0 [Shape: (2, 3)] [Dtype: float16] [Max: inf] [Min: -1] [Mean: inf]``, then the
    counts of NaN, Inf and ±65504 elements when there are any."""
    shape = "(" + ", ".join(map(str, tensor.shape)) + ("," if len(tensor.shape) == 1 else "") + ")"
    parts = [
        f"{tensor.kind.capitalize()} {tensor.index}",
        f"[Shape: {shape}]",
        f"[Dtype: {tensor.dtype}]",
        f"[Max: {_number(tensor.max)}]",
        f"[Min: {_number(tensor.min)}]",
        f"[Mean: {_number(tensor.mean)}]",
    ]
    for label, count in (
        ("NaN", tensor.nan),
        ("+Inf", tensor.pos_inf),
        ("-Inf", tensor.neg_inf),
        ("±65504", tensor.saturated),
    ):
        if count:
            parts.append(f"[{label}: {count}]")
    return " ".join(parts)


def detail_lines(overflow: Overflow, root: Path, mixlist: Path | None) -> list[str]:
    """Everything after the status lines: when, where, the tensors, the user's op, the fix."""
    record = overflow.record
    lines = [f" - First overflow file timestamp [{record.name.timestamp}] -"]
    lines.append(f" - Record: {_relative(record.path, root)}{_where(overflow)}")
    if record.kind:
        lines.append(f" - Kind: {_KINDS.get(record.kind, record.kind)}")
    lines.extend(f" {tensor_line(t)}" for t in overflow.tensors)
    lines.extend(f" Note: {note}" for note in overflow.notes)
    lines.append(f" Your graph: {_user_graph(overflow)}")
    lines.append(f" Created at: {overflow.created_at or 'not recorded'}")
    lines.extend(_fix_lines(overflow, mixlist))
    return lines


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _where(overflow: Overflow) -> str:
    record, node = overflow.record, overflow.node
    parts = []
    if node is not None:
        parts.append(f"model {node.model}")
    if record.step is not None:
        parts.append(f"step {record.step}")
    elif record.path.parent.name.isdigit():
        parts.append(f"step {record.path.parent.name}")
    return f" ({', '.join(parts)})" if parts else ""


def _user_graph(overflow: Overflow) -> str:
    node = overflow.node
    ops = ", ".join(overflow.user_ops) or "unknown (no graph JSON and no origin in the record)"
    if node is None:
        return ops
    op = node.op
    facts = [f"node {op.name} ({op.type})"]
    if op.pass_name:
        facts.append(f"made by {op.pass_name}")
    if node.output_origins:
        facts.append(f"outputs carry {', '.join(node.output_origins)}")
    return f"{ops} [{'; '.join(facts)}]"


def _fix_lines(overflow: Overflow, mixlist: Path | None) -> list[str]:
    fix = overflow.fix
    lines = []
    if fix.black_list:
        where = f" ({mixlist})" if mixlist is not None else ""
        types = ", ".join(fix.black_list)
        edit = json.dumps({"black-list": {"to-add": list(fix.black_list)}})
        lines.append(f" Fix: move {types} to float32 with modify_mixlist {edit}{where}")
    if fix.keep_dtype_ops:
        at = f" at {fix.created_at}" if fix.created_at else ""
        lead = "  or:" if fix.black_list else " Fix:"
        lines.append(f"{lead} create {', '.join(fix.keep_dtype_ops)}{at} under `{KEEP_DTYPE}`")
    if not lines:
        lines.append(" Fix: none proposed (see why)")
    if fix.reason:
        lines.append(f"  why: {fix.reason}")
    return lines


def summary_header(overflow: Overflow) -> list[str]:
    """`` [<unit>][TaskId:<t>][StreamId:<s>][Status:<st>]`` per unit that overflowed."""
    record = overflow.record
    stream = "" if record.stream_id is None else record.stream_id
    return [
        f" [{e.unit}][TaskId:{record.task_id}][StreamId:{stream}][Status:{e.status}]"
        for e in record.overflowed
    ]


def summary_text(report: OverflowReport, mixlist: Path | None = None) -> str:
    """The ``overflow_summary_*.txt`` text: one block per overflow, in execution order."""
    blocks = []
    for i, overflow in enumerate(report.overflows, start=1):
        lines = ["=" * 30 + f"[{i}]" + "=" * 30, *summary_header(overflow)]
        lines.append(f" {title(overflow)}")
        lines.extend(f" Status: {'; '.join(e.meanings)}" for e in overflow.record.overflowed)
        lines.extend(detail_lines(overflow, report.root, mixlist))
        blocks.append("\n".join(lines))
    return "\n".join(blocks) + "\n"


def mixlist_json(report: OverflowReport) -> dict[str, Any] | None:
    """``{"black-list": {"to-add": [...]}}`` with every proposed type, or None if none."""
    types = report.black_list
    return {"black-list": {"to-add": list(types)}} if types else None


@dataclass(frozen=True, slots=True)
class Outputs:
    """The files :func:`write_outputs` wrote (None: not written)."""

    summary: Path | None
    mixlist: Path | None


def write_outputs(report: OverflowReport, out_dir: Path, now: datetime) -> Outputs:
    """Write ``overflow_summary_<now>.txt`` and, when a type is proposed, ``overflow_mixlist.json``
    into ``out_dir`` (nothing when the report lists no overflow)."""
    if not report.overflows:
        return Outputs(None, None)
    data = mixlist_json(report)
    mixlist = None
    if data is not None:
        mixlist = _write_new(out_dir / MIXLIST_NAME, json.dumps(data, indent=1) + "\n")
    summary = out_dir / f"{SUMMARY_PREFIX}{now.strftime(SUMMARY_TIME)}.txt"
    summary = _write_new(summary, summary_text(report, mixlist))
    return Outputs(summary, mixlist)


def _write_new(path: Path, text: str) -> Path:
    """Write ``text`` at ``path``, or beside it (``<stem>_1<suffix>`` ...) when a different
    file is there: a user's hand-merged mixlist, an earlier summary, is never replaced. A file
    that already holds ``text`` (the same run analysed again) is reused."""
    try:
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    names = [path, *(path.with_name(f"{path.stem}_{n}{path.suffix}") for n in range(1, 1000))]
    for name in names[1:]:
        try:
            if name.is_file() and name.read_text(encoding="utf-8") == text:
                return name
        except (OSError, UnicodeDecodeError):
            continue
    return write_first_free(names, lambda temp: temp.write_text(text, encoding="utf-8"))


def _float(value: float) -> float | str:
    """JSON has no Inf or NaN: they are written as the strings ``"inf"``, ``"-inf"``, ``"nan"``."""
    return value if math.isfinite(value) else str(value)


def _tensor_json(t: TensorSummary) -> dict[str, Any]:
    return {
        "kind": t.kind, "index": t.index, "file": t.filename, "shape": list(t.shape),
        "dtype": t.dtype, "max": _float(t.max), "min": _float(t.min), "mean": _float(t.mean),
        "nan": t.nan, "pos_inf": t.pos_inf, "neg_inf": t.neg_inf, "saturated": t.saturated,
    }  # fmt: skip


def _overflow_json(overflow: Overflow, root: Path) -> dict[str, Any]:
    record, node, fix = overflow.record, overflow.node, overflow.fix
    return {
        "op_type": overflow.op_type,
        "op_name": overflow.op_name,
        "task_id": record.task_id,
        "stream_id": record.stream_id,
        "timestamp": record.name.timestamp,
        "record": _relative(record.path, root),
        "format": record.format,
        "status": [
            {"unit": e.unit, "status": e.status, "meanings": list(e.meanings)}
            for e in record.overflowed
        ],
        "kind": record.kind or None,
        "dtype": overflow.dtype or None,
        "model_id": record.model_id,
        "step": record.step,
        "tensors": [_tensor_json(t) for t in overflow.tensors],
        "node": None if node is None else _node_json(node),
        "user_ops": list(overflow.user_ops),
        "created_at": overflow.created_at or None,
        "fix": {
            "black_list": list(fix.black_list),
            "keep_dtype_ops": list(fix.keep_dtype_ops),
            "created_at": fix.created_at or None,
            "reason": fix.reason or None,
        },
        "notes": list(overflow.notes),
    }


def _node_json(node: GraphNode) -> dict[str, Any]:
    return {
        "model": node.model,
        "name": node.op.name,
        "type": node.op.type,
        "id": node.op.id,
        "original_op_names": list(node.op.original_op_names),
        "pass_name": node.op.pass_name or None,
        "output_origins": list(node.output_origins),
        "graph_json": str(node.graph_json),
    }


def to_json(report: OverflowReport, outputs: Outputs) -> dict[str, Any]:
    """The report as one JSON object (see docs/overflow.md for the fields)."""
    return {
        "dump_dir": str(report.root),
        "records": report.records,
        "skipped": report.skipped,
        "overflows": [_overflow_json(o, report.root) for o in report.overflows],
        "mixlist": mixlist_json(report),
        "files": {
            "summary": None if outputs.summary is None else str(outputs.summary),
            "mixlist": None if outputs.mixlist is None else str(outputs.mixlist),
        },
    }

"""Structured checks of a log: rows of a profile table, a series of values, several ranks' logs.

A regex over one line cannot say "the loss scale kept dropping" or "rank 1 compiled fewer
graphs than rank 0"; these checks read the values and report rows of
:mod:`tf2npu.debug.doctor.symptoms` (``checks=...``).
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from collections.abc import Iterator, Mapping, Sequence

from tf2npu.debug.doctor.logtext import Log
from tf2npu.debug.doctor.symptoms import BY_ID
from tf2npu.findings import Finding, Where

__all__ = ["loss_scale_findings", "op_summary_findings", "rank_findings"]

_BLOCK_DIM = ("Block Dim", "Block Num", "block_dim")
"""The column's names across CANN versions (debug-tools.md §6.2) and the seed's table."""
_OP_TYPE = ("OP Type", "op_type", "Type")
_OP_NAME = ("Op Name", "op_name", "Name")
_INPUT_TYPES = ("Input Data Types", "input_data_type")
_PRECISION = ("Precision",)
"""tf2npu's op_summary column: ``float32->float16`` when the precision pass lowered the op."""
_NOT_MEASURED = frozenset({"", "N/A", "NA", "NOT MEASURED"})
_LOSS_SCALE = re.compile(r"loss scale value\s*=\s*(?P<value>[0-9.eE+-]+)")
_MIN_SERIES = 3
_GRAPH_ID = re.compile(
    r"The model has been compiled on the Ascend AI processor, current graph id is (?P<id>\d+)"
)


def op_summary_findings(text: str, name: str) -> list[Finding]:
    """``reduce_sum_fp16`` for each float16 ReduceSum on one core in an ``op_summary`` CSV.

    A device's table measures the block dim: a float16 ReduceSum at ``1`` is the symptom. A
    table that did not measure it (``N/A`` or empty, as a profile off the device writes) is
    judged by what it does know, the op's dtypes: a ReduceSum the device runs in float16 is
    the kernel that takes one core (seed 000 case 04), so it is reported with that said in the
    evidence; one finding per op. ``text`` that is not such a table (no op type or block dim
    column) gives nothing.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines[:50]) if _is_header(line)), None)
    if start is None:
        return []
    found = []
    seen: set[tuple[str, str]] = set()
    rows = csv.DictReader(io.StringIO("\n".join(lines[start:])))
    for number, row in enumerate(rows, start + 2):
        op_type = _cell(row, _OP_TYPE)
        inputs = _cell(row, _INPUT_TYPES)
        if not op_type.startswith("ReduceSum") or "FLOAT16" not in inputs.upper():
            continue
        block = _cell(row, _BLOCK_DIM)
        if block == "1":
            evidence = f"{name}:{number}: {op_type} block dim 1, inputs {inputs}"
        elif block.upper() in _NOT_MEASURED:
            precision = _cell(row, _PRECISION)
            lowered = f", lowered {precision}" if precision else ""
            evidence = (
                f"{name}:{number}: {op_type} inputs {inputs}{lowered}; block dim not measured "
                f"({block or 'empty'}): the float16 ReduceSum kernel runs on one core"
            )
        else:
            continue
        op_name = _cell(row, _OP_NAME)
        if (op_name, op_type) in seen:
            continue
        seen.add((op_name, op_type))
        where = Where(node=op_name, op_type=op_type)
        found.append(BY_ID["reduce_sum_fp16"].finding(where, evidence))
    return found


def _is_header(line: str) -> bool:
    cells = {c.strip() for c in line.split(",")}
    return bool(cells & set(_OP_TYPE)) and bool(cells & set(_BLOCK_DIM))


def _cell(row: Mapping[str | None, object], names: Sequence[str]) -> str:
    for key in names:
        value = row.get(key)
        if isinstance(value, str):
            return value.strip()
    return ""


def loss_scale_findings(log: Log) -> Iterator[Finding]:
    """``loss_scale_keeps_dropping`` when the ``loss scale value=N`` lines (the adapter docs'
    hook) never rise and end at the floor of 1, or fall at least ``_MIN_SERIES`` times;
    ``loss_scale_warmup`` instead when the scale then held above 1 for longer than it ever held
    while coming down (the warm-up of a dynamic scale that started too high)."""
    series = [
        (i, float(m["value"]))
        for i, line in enumerate(log.lines)
        if (m := _LOSS_SCALE.search(line)) and _is_number(m["value"])
    ]
    if len(series) < _MIN_SERIES:
        return
    values = [v for _, v in series]
    never_rises = all(b <= a for a, b in itertools.pairwise(values))
    drops = sum(b < a for a, b in itertools.pairwise(values))
    if not never_rises or not (values[-1] <= 1 or drops >= _MIN_SERIES):
        return
    last = series[-1][0]
    evidence = f"{log.name}:{last + 1}: loss scale {values[0]:g} -> {values[-1]:g}"
    held = _held_at_the_end(values)
    if drops and values[-1] > 1 and held is not None:
        evidence += f", then held for the last {held} values"
        yield BY_ID["loss_scale_warmup"].finding(Where(), evidence)
    else:
        yield BY_ID["loss_scale_keeps_dropping"].finding(Where(), evidence)


def _held_at_the_end(values: Sequence[float]) -> int | None:
    """How long the scale held at its last value, when that is the end of a warm-up: at least
    ``_MIN_SERIES`` values, and longer than it ever held while it was coming down (a manager
    that lowers it every N overflows holds it N values at a time while overflows go on)."""
    runs = [len(list(group)) for _, group in itertools.groupby(values)]
    tail, descent = runs[-1], runs[:-1]
    if tail < _MIN_SERIES or not descent or tail <= max(descent):
        return None
    return tail


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def rank_findings(logs: Sequence[Log]) -> list[Finding]:
    """``graphs_differ_across_ranks`` when the logs of several ranks end at different graph ids
    ("current graph id is N"); the finding names the log that compiled fewest."""
    last: dict[str, int] = {}
    for log in logs:
        ids = [int(m["id"]) for line in log.lines if (m := _GRAPH_ID.search(line))]
        if ids:
            last[log.name] = max(ids)
    if len(last) < 2 or len(set(last.values())) == 1:
        return []
    behind = min(last, key=lambda name: last[name])
    counts = ", ".join(f"{name}: {n}" for name, n in last.items())
    return [
        BY_ID["graphs_differ_across_ranks"].finding(Where(file=behind), f"last graph id {counts}")
    ]

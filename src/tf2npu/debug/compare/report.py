"""Views of a :class:`~.trees.CompareReport`: msaccucmp's CSV, and JSON (TF-free).

The CSV has msaccucmp's columns in its order (reference debug-tools.md §3.2) — ``Index,
OpType, NPUDump, DataType, Address, GroundTruth, DataType, TensorIndex, Shape, [OverFlow]``,
the chosen algorithms, ``CompareFailReason`` — then three of ours at the end, so a reader of
the vendor's columns is not disturbed: ``Verdict, Reason, RequiredTolerance``. One ``Address``
column (the NPU side's; dumps read here carry no address, so it is ``NaN``), as msaccucmp
writes when the ground truth is ``.npy`` data. One comparison unit (model and step) is written
as ``result_<YYYYmmddHHMMSS>.csv``; several as ``<device>_<model>_<step>_result_<...>.csv``,
msaccucmp's batch names.

JSON (``tf2npu compare --json``, ``schema: "tf2npu.compare/1"``)::

    {"schema", "mode", "npu_dump", "golden_dump", "algorithms": [names],
     "overflow_detection": bool, "seconds", "bytes_compared",
     "totals": {"pass", "fail", "unmatched", "error", "compared"},
     "csv": [paths], "advisor": null | {"detection_type", "operator_index", "advice", "file"},
     "first_divergence": null | DIVERGENCE, "divergences": [DIVERGENCE],
     "units": [{"label", "step", "device_id", "model_name", "model_id", "folder",
                "graph_json", "csv", "tensors": [TENSOR]}]}
    DIVERGENCE = {"unit", "index", "op", "op_type", "user_ops", "pass_name",
                  "counterpart_pass_name", "inputs_agree",
                  "inputs_unknown", "failed": [TENSOR]}
    TENSOR = {"index", "op_type", "npu_dump": [names] | null, "ground_truth": [names] | null,
              "tensor_index", "kind", "slot", "shape", "npu_dtype", "golden_dtype",
              "overflow", "metrics": {name: number | string | null},
              "compare_fail_reason": [messages], "verdict", "reason", "judged_as",
              "tolerance": null | {"atol", "rtol", "source"}, "required_tolerance",
              "npu_file", "golden_file"}

Numbers that are NaN are ``null``; an infinite required tolerance is the string ``"inf"``.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tf2npu.atomic import write_first_free
from tf2npu.debug.compare.advisor import Advice, AdvisorRow
from tf2npu.debug.compare.matching import INPUT_OP_TYPES, TensorFile
from tf2npu.debug.compare.trees import CompareReport, Divergence, TensorDiff, UnitResult

__all__ = [
    "EXTRA_COLUMNS",
    "SCHEMA",
    "advisor_rows",
    "csv_header",
    "csv_name",
    "csv_row",
    "dumps",
    "input_nodes",
    "tensor_json",
    "to_json",
    "write_csvs",
]

SCHEMA = "tf2npu.compare/1"
LEADING = (
    "Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType",
    "TensorIndex", "Shape",
)  # fmt: skip
EXTRA_COLUMNS = ("Verdict", "Reason", "RequiredTolerance")
NAN = "NaN"


def csv_header(algorithms: Sequence[str], overflow_detection: bool) -> list[str]:
    """The header row."""
    overflow = ["OverFlow"] if overflow_detection else []
    return [*LEADING, *overflow, *algorithms, "CompareFailReason", *EXTRA_COLUMNS]


def _names(side: TensorFile | None) -> str:
    return "*" if side is None else ",".join(side.names)


def csv_row(diff: TensorDiff, overflow_detection: bool) -> list[str]:
    """One row; the metric cells follow ``diff.metrics`` (the report's algorithms)."""
    pair = diff.pair
    shape = NAN if diff.shape is None else "[" + ",".join(map(str, diff.shape)) + "]"
    overflow = [diff.overflow or NAN] if overflow_detection else []
    return [
        str(pair.index), pair.op_type, _names(pair.left), diff.left_dtype, NAN,
        _names(pair.right), diff.right_dtype, pair.tensor_index, shape, *overflow,
        *(m.text for m in diff.metrics), ",".join(diff.messages),
        diff.verdict, diff.reason, _required(diff.required),
    ]  # fmt: skip


def _required(value: float) -> str:
    if math.isnan(value):
        return NAN
    return "inf" if math.isinf(value) else f"{value:.3e}"


CSV_SUFFIXES = 1000
"""How many ``_<n>`` names are tried after ``result_<stamp>.csv`` is taken."""


def csv_name(unit: UnitResult, stamp: str, single: bool, unique: bool = True) -> str:
    """``result_<stamp>.csv``, or msaccucmp's batch name when several units are written.

    Several run signatures of one process run the same GeOp as different models (same
    ``model_name``, other ``model_id``); when their batch names would collide (``unique``
    False), the model id follows the model name.
    """
    if single:
        return f"result_{stamp}.csv"
    return f"{unit.unit.batch_label(with_model_id=not unique)}_result_{stamp}.csv"


def write_csvs(report: CompareReport, folder: Path, stamp: str) -> list[Path]:
    """Write one CSV per unit into ``folder`` (atomically); their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    header = csv_header(report.algorithms, report.overflow_detection)
    paths = []
    labels = Counter(unit.unit.label for unit in report.units)
    for unit in report.units:
        unique = labels[unit.unit.label] == 1
        name = csv_name(unit, stamp, len(report.units) == 1, unique)

        def write(temp: Path, unit: UnitResult = unit) -> None:
            with open(temp, "w", newline="", encoding="utf-8") as stream:
                writer = csv.writer(stream)
                writer.writerow(header)
                writer.writerows(csv_row(d, report.overflow_detection) for d in unit.diffs)

        paths.append(write_first_free(_free_names(folder, name), write))
    return paths


def _free_names(folder: Path, name: str) -> Iterator[Path]:
    """``name``, then ``<stem>_1.csv`` ... : two compares into one folder in the same second
    (the stamp's resolution) keep both CSVs."""
    yield folder / name
    stem = name.removesuffix(".csv")
    for n in range(1, CSV_SUFFIXES):
        yield folder / f"{stem}_{n}.csv"


def advisor_rows(report: CompareReport) -> list[AdvisorRow]:
    """The rows as the advisor reads them, in CSV order (units one after the other)."""
    rows = []
    for diff in report.diffs():
        cosine = diff.metric("CosineSimilarity")
        rows.append(
            AdvisorRow(
                str(diff.pair.index),
                _names(diff.pair.left),
                diff.overflow,
                math.nan if cosine is None else cosine.value,
            )
        )
    return rows


def input_nodes(report: CompareReport) -> list[str]:
    """Names of the graph-input ops (type Data or Placeholder) of every unit, in order."""
    names = [op.name for u in report.units for op in u.unit.ops if op.type in INPUT_OP_TYPES]
    return list(dict.fromkeys(names))


# -- JSON ----------------------------------------------------------------------------------


def to_json(
    report: CompareReport,
    csvs: Sequence[Path] = (),
    advice: Advice | None = None,
    advice_file: Path | None = None,
) -> dict[str, Any]:
    """The report as JSON-ready data (schema in the module docstring)."""
    first = report.first_divergence()
    return {
        "schema": SCHEMA,
        "mode": report.plan.mode,
        "npu_dump": str(report.plan.left),
        "golden_dump": str(report.plan.right),
        "algorithms": list(report.algorithms),
        "overflow_detection": report.overflow_detection,
        "seconds": round(report.seconds, 3),
        "bytes_compared": report.bytes_read,
        "totals": report.counts(),
        "csv": [str(p) for p in csvs],
        "advisor": _advice(advice, advice_file),
        "first_divergence": None if first is None else _divergence(first),
        "divergences": [_divergence(d) for d in report.divergences()],
        "units": [_unit(u, csvs[i] if i < len(csvs) else None) for i, u in enumerate(report.units)],
    }


def dumps(data: dict[str, Any]) -> str:
    """``data`` as indented JSON text with a final newline."""
    return json.dumps(data, indent=1, allow_nan=False) + "\n"


def _advice(advice: Advice | None, path: Path | None) -> dict[str, Any] | None:
    if advice is None:
        return None
    return {
        "detection_type": advice.detection_type,
        "operator_index": advice.operator_index,
        "advice": advice.advice,
        "file": None if path is None else str(path),
    }


def _unit(result: UnitResult, csv_path: Path | None) -> dict[str, Any]:
    unit = result.unit
    return {
        "label": unit.label,
        "step": unit.step,
        "device_id": unit.device_id,
        "model_name": unit.model_name,
        "model_id": unit.model_id,
        "folder": str(unit.folder),
        "graph_json": None if unit.graph_json is None else str(unit.graph_json),
        "csv": None if csv_path is None else str(csv_path),
        "tensors": [tensor_json(d) for d in result.diffs],
    }


def _divergence(found: Divergence) -> dict[str, Any]:
    return {
        "unit": found.unit.label,
        "index": found.op.index,
        "op": found.op.name,
        "op_type": found.op.type,
        "user_ops": list(found.op.user_names),
        "pass_name": found.op.pass_name or None,
        "counterpart_pass_name": found.counterpart_pass_name or None,
        "inputs_agree": found.inputs_agree,
        "inputs_unknown": found.inputs_unknown,
        "failed": [tensor_json(d) for d in found.failed],
    }


def tensor_json(diff: TensorDiff) -> dict[str, Any]:
    """One tensor's entry."""
    pair = diff.pair
    tolerance = diff.tolerance
    return {
        "index": pair.index,
        "op_type": pair.op_type,
        "npu_dump": None if pair.left is None else list(pair.left.names),
        "ground_truth": None if pair.right is None else list(pair.right.names),
        "tensor_index": pair.tensor_index,
        "kind": pair.kind,
        "slot": pair.slot,
        "shape": None if diff.shape is None else list(diff.shape),
        "npu_dtype": diff.left_dtype,
        "golden_dtype": diff.right_dtype,
        "overflow": diff.overflow or None,
        "metrics": {m.name: _metric(m.value, m.text) for m in diff.metrics},
        "compare_fail_reason": list(diff.messages),
        "verdict": diff.verdict,
        "reason": diff.reason,
        "judged_as": diff.judged_as,
        "tolerance": None
        if tolerance is None
        else {"atol": tolerance.atol, "rtol": tolerance.rtol, "source": tolerance.source},
        "required_tolerance": _number(diff.required),
        "npu_file": None if pair.left is None else str(pair.left.path),
        "golden_file": None if pair.right is None else str(pair.right.path),
    }


def _metric(value: float, text: str) -> float | str | None:
    if text not in (NAN, "inf", "-inf") and math.isnan(value):
        return text  # StandardDeviation's "(mean;std),(mean;std)"
    return _number(value)


def _number(value: float) -> float | str | None:
    if math.isnan(value):
        return None
    return str(value) if math.isinf(value) else value

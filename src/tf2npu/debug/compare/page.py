"""``tf2npu compare --html FILE``: the comparison of two dump trees as one page (TF-free).

In the look of :mod:`tf2npu.graph.report.page`, from the :class:`CompareReport` the CSV and
JSON views read: the totals; the **first divergent op** (the first op whose outputs fail while
its inputs agree), with the fusion pass that made it and its inputs and outputs side by side;
per compared unit, the metrics of its tensors in execution order drawn (cosine similarity, and
the error measures on a log scale) with the first divergent op marked; then every tensor in
execution order, the first divergent op's rows highlighted and failing rows in red.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from pathlib import Path

from tf2npu.atomic import write_text_atomic
from tf2npu.debug.compare.trees import FAIL, CompareReport, Divergence, TensorDiff, UnitResult
from tf2npu.graph.report.chart import Marker, Series, line_chart
from tf2npu.graph.report.names import breakable, name_table
from tf2npu.graph.report.page import document

__all__ = ["SHORT_NAMES", "TABLE_METRICS", "render_page", "write_page"]

SHORT_NAMES = {
    "CosineSimilarity": "Cosine",
    "MaxAbsoluteError": "MaxAbsErr",
    "AccumulatedRelativeError": "AccRelErr",
    "RelativeEuclideanDistance": "RelEuclid",
    "KullbackLeiblerDivergence": "KLD",
    "StandardDeviation": "StdDev",
    "MeanAbsoluteError": "MeanAbsErr",
    "RootMeanSquareError": "RMSE",
    "MaxRelativeError": "MaxRelErr",
    "MeanRelativeError": "MeanRelErr",
}
"""Column headers of msaccucmp's algorithms (the CSV has the full names)."""
_PREFERRED = ("CosineSimilarity", "MaxAbsoluteError", "MaxRelativeError", "RootMeanSquareError")
TABLE_METRICS = 2
"""Metric columns of the tensor table (the page fits a 1000-pixel window; the CSV has all)."""
_ERRORS = ("MaxAbsoluteError", "MaxRelativeError", "RootMeanSquareError", "MeanAbsoluteError")
"""The error measures drawn on the log-scale chart, when computed."""
_ERROR_FLOOR = 1e-12
"""Errors below this (0 included) are drawn at it: a log scale has no 0."""


def write_page(report: CompareReport, path: Path, csvs: Sequence[Path] = ()) -> Path:
    """Write the page to ``path`` (atomically); returns it."""
    write_text_atomic(path, render_page(report, csvs))
    return path


def render_page(report: CompareReport, csvs: Sequence[Path] = ()) -> str:
    """The whole page as text."""
    counts = report.counts()
    first = report.first_divergence()
    verdict = "agree" if report else f"{counts['fail']:,} fail"
    if counts["error"]:
        verdict += f", {counts['error']:,} unreadable"
    parts = [
        f"<p>{escape(report.plan.mode)}: NPU_DUMP <code>{breakable(str(report.plan.left))}"
        f"</code> against GOLDEN_DUMP <code>{breakable(str(report.plan.right))}</code></p>",
        f"<p>{_totals(report)}</p>",
        "<h2>First divergent op</h2>",
        _first(report, first),
    ]
    for unit in report.units:
        parts += _unit(unit, first, report.algorithms, len(report.units) > 1)
    if csvs:
        files = "".join(f"<li>{breakable(str(p))}</li>" for p in csvs)
        parts.append(f"<h2>Files</h2><ul>{files}</ul>")
    return document(f"tf2npu compare: {verdict}", parts)


def _totals(report: CompareReport) -> str:
    c = report.counts()
    text = (
        f"{c['compared']:,} tensors compared: {c['pass']:,} pass, "
        f'<b class="{"error" if c["fail"] else "info"}">{c["fail"]:,} fail</b>; '
        f"{c['unmatched']:,} unmatched, {c['error']:,} unreadable"
    )
    return text + f" ({report.bytes_read / 1e6:,.1f} MB in {report.seconds:.2f} s)"


def _first(report: CompareReport, first: Divergence | None) -> str:
    if first is None:
        why = "no tensor fails" if report else "no op fails while its inputs agree"
        if report.counts()["error"]:
            why += "; some tensors could not be read, so the dumps are not shown to agree"
        return f'<p class="note">none: {escape(why)}</p>'
    op = first.op
    users = [u for u in op.user_names if u != op.name]
    facts = [f'<b class="error">{breakable(op.name)}</b> ({escape(op.type)}), index {op.index}']
    if len(report.units) > 1:
        facts.append(f"in {escape(first.unit.label)}")
    if users:
        facts.append("user ops " + ", ".join(breakable(u) for u in users))
    text = ", ".join(facts)
    if op.pass_name:
        text += f'; made by fusion pass <b class="warning">{escape(op.pass_name)}</b>'
    else:
        text += "; made by no fusion pass"
    counterpart = first.counterpart_pass_name
    if counterpart and counterpart != op.pass_name:
        text += f"; its counterpart in GOLDEN_DUMP was made by {escape(counterpart)}"
    unit = next(u for u in report.units if u.unit is first.unit)
    key = _key_metrics(report.algorithms)
    inputs = [[slot, _source(diff), *_judged(diff, key)] for slot, diff in unit.input_diffs(op)]
    outputs = [[d.pair.slot, d.pair.tensor_index, *_judged(d, key)] for d in unit.output_diffs(op)]
    header = ["slot", "tensor", "verdict", *_short(key)]
    fails = ["fail" if d.verdict == FAIL else "" for d in unit.output_diffs(op)]
    reasons = "".join(
        f"<li>{breakable(d.pair.tensor_index)}: {escape(d.reason)}</li>" for d in first.failed
    )
    return (
        f"<p>{text}</p>"
        f'<div class="side"><div><h3>Inputs ({len(inputs)})</h3>'
        + name_table(header, inputs, names=(1,))
        + '<p class="note">judged by the op\'s own input dump, else by the output feeding it'
        + f"</p></div><div><h3>Outputs ({len(outputs)})</h3>"
        + name_table(header, outputs, names=(1,), row_class=fails)
        + f'</div></div><ul class="error">{reasons}</ul>'
    )


def _source(diff: TensorDiff | None) -> str:
    return "not dumped or not matched" if diff is None else diff.pair.tensor_index


def _key_metrics(algorithms: Sequence[str], most: int = 2) -> list[str]:
    """The metrics shown in a table (the CSV has them all): cosine, the absolute and the
    relative error, RMSE, when computed; else the first ones computed."""
    preferred = [a for a in _PREFERRED if a in algorithms]
    return (preferred + [a for a in algorithms if a not in preferred])[:most]


def _short(algorithms: Sequence[str]) -> list[str]:
    return [SHORT_NAMES.get(a, a) for a in algorithms]


def _judged(diff: TensorDiff | None, metrics: Sequence[str]) -> list[str]:
    if diff is None:
        return ["", *("" for _ in metrics)]
    return [diff.verdict, *(_metric_text(diff, a) for a in metrics)]


def _metric_text(diff: TensorDiff, name: str) -> str:
    metric = diff.metric(name)
    return "" if metric is None else metric.text


def _unit(
    unit: UnitResult, first: Divergence | None, algorithms: Sequence[str], several: bool
) -> list[str]:
    label = f" {unit.unit.label}" if several else ""
    marked = first is not None and first.unit is unit.unit
    parts = [f"<h2>Tensors in execution order{escape(label)} ({len(unit.diffs):,})</h2>"]
    parts += _charts(unit, first if marked else None, algorithms)
    shown = _key_metrics(algorithms, TABLE_METRICS)
    rows, classes = [], []
    for diff in unit.diffs:
        pair = diff.pair
        rows.append(
            [pair.index, pair.op_type, _tensor(pair.tensor_index, pair.op_name),
             _missing(_shape(diff) + " " + _dtypes(diff)), diff.verdict,
             *(_missing(_metric_text(diff, a)) for a in shown), _required(diff), diff.reason]
        )  # fmt: skip
        first_op = marked and first is not None and pair.op_name == first.op.name
        classes.append("first" if first_op else "fail" if diff.verdict == FAIL else "")
    header = ["Index", "OpType", "TensorIndex", "shape, dtype (NPU, golden)", "Verdict",
              *_short(shown), "Required vs ATOL", "Reason"]  # fmt: skip
    parts.append(name_table(header, rows, names=(1, 2), row_class=classes))
    if len(shown) < len(algorithms):
        rest = ", ".join(a for a in algorithms if a not in shown)
        parts.append(f'<p class="note">Also computed, in the CSV: {escape(rest)}.</p>')
    return parts


def _tensor(tensor_index: str, op_name: str) -> str:
    """The tensor's name; for an op with no dumped tensor (the CSV's ``NaN``), the op's."""
    return op_name if tensor_index in ("", "NaN") and op_name else tensor_index


def _missing(text: str) -> str:
    """A CSV's ``NaN`` (nothing dumped, nothing computed) shown as an empty cell."""
    return "" if text.strip() in ("NaN", "NaN NaN", "nan") else text


def _required(diff: TensorDiff) -> str:
    """The required tolerance against the ATOL it was judged with (it passes when <=)."""
    if math.isnan(diff.required):
        return ""
    need = "inf" if math.isinf(diff.required) else f"{diff.required:.3g}"
    if diff.tolerance is None:
        return need
    sign = "<=" if diff.required <= diff.tolerance.atol else ">"
    return f"{need} {sign} {diff.tolerance.atol:g}"


def _shape(diff: TensorDiff) -> str:
    return "" if diff.shape is None else "[" + ",".join(map(str, diff.shape)) + "]"


def _dtypes(diff: TensorDiff) -> str:
    if diff.left_dtype == diff.right_dtype:
        return diff.left_dtype
    return f"{diff.left_dtype}, {diff.right_dtype}"


def _charts(unit: UnitResult, first: Divergence | None, algorithms: Sequence[str]) -> list[str]:
    """Cosine similarity and the error measures of the compared outputs, by op index."""
    outputs = [d for d in unit.diffs if d.pair.kind != "input" and d.verdict in ("pass", FAIL)]
    if not outputs:
        return ['<p class="note">no output tensor was compared</p>']
    markers = []
    if first is not None:
        markers.append(Marker(float(first.op.index), f"first divergent op: {first.op.name}"))
    parts = []
    if "CosineSimilarity" in algorithms:
        points = [(float(d.pair.index), _value(d, "CosineSimilarity")) for d in outputs]
        parts.append(
            line_chart(
                [Series("CosineSimilarity", points)],
                title="Cosine similarity of each output tensor",
                x_label="op index (execution order)",
                y_label="cosine",
                markers=markers,
                log=False,
            )
        )
    errors = [a for a in _ERRORS if a in algorithms]
    if errors:
        lines = [
            Series(a, [(float(d.pair.index), _floored(_value(d, a))) for d in outputs])
            for a in errors
        ]
        parts.append(
            line_chart(
                lines,
                title="Error measures of each output tensor",
                x_label="op index (execution order)",
                y_label="error",
                markers=markers,
                log=True,
            )
            + f'<p class="note">Errors below {_ERROR_FLOOR:g} (0 included) are drawn at '
            f"{_ERROR_FLOOR:g}.</p>"
        )
    return parts


def _value(diff: TensorDiff, name: str) -> float | None:
    metric = diff.metric(name)
    return None if metric is None or math.isnan(metric.value) else metric.value


def _floored(value: float | None) -> float | None:
    return None if value is None else max(value, _ERROR_FLOOR)

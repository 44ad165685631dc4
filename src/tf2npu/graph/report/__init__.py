"""Views of one engine run: JSON summary, ``check_result.tf.json``, terminal text, HTML.

:func:`~tf2npu.graph.report.summary.summarize` turns an
:class:`~tf2npu.graph.engine.EngineRun` into a :class:`GraphSummary` value; every other module
here renders that value and nothing else, except :mod:`~tf2npu.graph.report.ge_graph`: the graph
JSON of a dump shows each GeOp op by op, so it reads the decided IR itself.
"""

from __future__ import annotations

import json
from pathlib import Path

from tf2npu.atomic import write_text_atomic
from tf2npu.graph.report.check_result import write_check_result
from tf2npu.graph.report.summary import GraphSummary, summarize
from tf2npu.graph.report.text import partition_report

__all__ = [
    "PARTITION_REPORT",
    "SUMMARY_JSON",
    "GraphSummary",
    "summarize",
    "to_json_text",
    "write_report_files",
]

SUMMARY_JSON = "summary.json"
PARTITION_REPORT = "partition_report.txt"


def to_json_text(summary: GraphSummary) -> str:
    """The ``--json`` text: one object, two-space indent, a final newline."""
    return json.dumps(summary.to_json(), indent=2, ensure_ascii=False) + "\n"


def write_report_files(summary: GraphSummary, directory: Path) -> list[Path]:
    """``summary.json``, ``partition_report.txt`` and (when an op is unsupported)
    ``check_result.tf.json`` in ``directory``; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / SUMMARY_JSON, directory / PARTITION_REPORT]
    write_text_atomic(written[0], to_json_text(summary))
    write_text_atomic(written[1], partition_report(summary))
    check = write_check_result(summary, directory)
    if check is not None:
        written.append(check)
    return written

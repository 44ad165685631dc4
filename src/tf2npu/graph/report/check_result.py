"""The vendor's ``check_result.tf.json``: every op the device does not support, and why.

Same content and layout as the adapter's ``GenerateReport::SaveUnsupportedInfo`` (reference
§3.3): ``{"op": [{"is_support": false, "name", "not_support_reason": {"code", "message"},
"type"}]}``, ops sorted by node name, keys sorted, two-space indent, no trailing newline. Only
unsupported ops are listed (codes 1 not defined on the device, 2 gray op, 3 scenario problem,
4 not supported); a node the device could run but that stays on the host for lack of a GeOp is
not. When every op is supported the adapter writes no file and removes a stale one; so does
:func:`write_check_result`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tf2npu.atomic import write_text_atomic
from tf2npu.graph.report.summary import GraphSummary

__all__ = ["FILE_NAME", "check_result", "render_check_result", "write_check_result"]

FILE_NAME = "check_result.tf.json"


def check_result(summary: GraphSummary) -> dict[str, Any] | None:
    """The report as a JSON value, or ``None`` when every op is supported."""
    unsupported = sorted((op for op in summary.host_ops if op.code > 0), key=lambda op: op.name)
    if not unsupported:
        return None
    return {
        "op": [
            {
                "is_support": False,
                "name": op.name,
                "not_support_reason": {"code": op.code, "message": op.message},
                "type": op.type,
            }
            for op in unsupported
        ]
    }


def render_check_result(summary: GraphSummary) -> str | None:
    """The file's text (``None``: nothing to report)."""
    data = check_result(summary)
    if data is None:
        return None
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)


def write_check_result(summary: GraphSummary, directory: Path) -> Path | None:
    """Write ``directory/check_result.tf.json``, or remove it when every op is supported."""
    path = Path(directory) / FILE_NAME
    text = render_check_result(summary)
    if text is None:
        path.unlink(missing_ok=True)
        return None
    write_text_atomic(path, text)
    return path

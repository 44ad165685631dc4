"""The ``precision`` rows of ``tf2npu run``'s terminal summary, from ``run_summary.json``.

One row per dtype and reason, the ops counted by GE type; the ops that a list edit or a scope
put in their dtype (``modify_mixlist``, ``keep_dtype_scope``, a trial's ``keep_fp32``) are
named, since those are the ones the user chose::

    precision  float16, allow list: 4 (MatMulV2 x3, BatchMatMulV2 x1)
               float32, black list by modify_mixlist: 1 (SoftmaxV2 x1): l0/sm
               float32, nothing lowered them: 37 (no lower-precision input 35, ...)
"""

from __future__ import annotations

from collections import Counter

from rich.text import Text

from tf2npu.artifacts.run_summary import (
    NAMED_REASONS,
    PrecisionRow,
    RunSummary,
    precision_groups,
)

__all__ = ["precision_summary_rows"]

_TYPES_SHOWN = 4
_OPS_SHOWN = 5


#: float32 reasons shown on a row of their own; the other float32 groups (nothing asked for a
#: lower dtype: no lower-precision input, a float32 kernel, the mode keeps float32, a float32
#: variable reference, ...) share one row, so a run's summary stays a few lines.
_OWN_ROW = NAMED_REASONS | {"deny_list", "deny_spread", "no_fp16_kernel", "no_bf16_kernel"}


def precision_summary_rows(summary: RunSummary) -> list[tuple[str, Text]]:
    """The summary's rows (none when no NPU session ran; "none judged" when no op was)."""
    if not summary.sessions:
        return []
    rows = summary.precision
    if not rows:
        return [("precision", Text("no float op judged"))]
    lines: list[Text] = []
    rest: list[tuple[str, int]] = []
    for dtype, reason, members in precision_groups(rows):
        if dtype == "float32" and reason not in _OWN_ROW:
            rest.append((members[0].reason_text, len(members)))
            continue
        style = "yellow" if reason in NAMED_REASONS else ""
        lines.append(Text(_group(dtype, members), style))
    if rest:
        total = sum(n for _, n in rest)
        reasons = ", ".join(f"{text} {n}" for text, n in rest)
        lines.append(Text(f"float32, nothing lowered them: {total} ({reasons})"))
    return [("precision" if index == 0 else "", line) for index, line in enumerate(lines)]


def _group(dtype: str, members: list[PrecisionRow]) -> str:
    types = Counter(row.op_type for row in members).most_common()
    shown = ", ".join(f"{name} x{count}" for name, count in types[:_TYPES_SHOWN])
    if len(types) > _TYPES_SHOWN:
        shown += f", {len(types) - _TYPES_SHOWN} more types"
    text = f"{dtype}, {members[0].reason_text}: {len(members)} ({shown})"
    if members[0].reason in NAMED_REASONS:
        names = [row.op for row in members[:_OPS_SHOWN]]
        more = len(members) - len(names)
        text += ": " + ", ".join(names) + (f" and {more} more" if more else "")
    return text

"""``steps.html``: the scalars a recorded run fetched, drawn per step (TF-free).

:class:`~tf2npu.runtime.record.RunRecorder` writes it beside ``steps.jsonl`` when the run ends,
from the same step records: whoever asked for ``--record`` opens the report folder and sees
the loss curve, with no other command to learn (and every verify and bisect trial, which
records, gets its own). One chart per float scalar of the training runs (the loss first), x the
training step; a script that fetched nothing while it trained gets its evaluation runs' scalars
by run instead. A value that was NaN or Inf is a gap, and the steps where it was are listed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from tf2npu.graph.report.chart import Series, line_chart
from tf2npu.graph.report.names import breakable, name_table
from tf2npu.graph.report.page import document

__all__ = ["MAX_CHARTS", "PAGE_FILE", "render_page"]

PAGE_FILE = "steps.html"
MAX_CHARTS = 12
"""Scalars drawn (the loss first); the others are named."""
_SHOWN_STEPS = 10


def render_page(records: Sequence[Mapping[str, Any]], title: str) -> str:
    """The page of ``records`` (``steps.jsonl``'s objects, in run order)."""
    train = [r for r in records if r.get("train")]
    chosen, x_key, x_label = (train, "step", "training step") if train else (
        [r for r in records if r.get("scalars")], "run", "session run (evaluation)"
    )  # fmt: skip
    names = list(dict.fromkeys(n for r in chosen for n in r.get("scalars", {})))
    names.sort(key=lambda n: "loss" not in n.lower())
    parts = [_summary(records, train)]
    if not names:
        parts.append('<p class="note">no run fetched a float scalar</p>')
    for name in names[:MAX_CHARTS]:
        points = [(float(r[x_key]), _value(r, name)) for r in chosen if name in r["scalars"]]
        parts.append(f"<h2>{breakable(name)}</h2>")
        parts.append(
            line_chart([Series(name, points)], title=f"{name} per {x_label}", x_label=x_label)
        )
        bad = [int(r[x_key]) for r in chosen if name in r["scalars"] and _value(r, name) is None]
        if bad:
            shown = ", ".join(map(str, bad[:_SHOWN_STEPS]))
            more = f" and {len(bad) - _SHOWN_STEPS} more" if len(bad) > _SHOWN_STEPS else ""
            parts.append(
                f'<p class="error">NaN or Inf at {len(bad)} {x_label}s ({shown}{more}): '
                "gaps in the line.</p>"
            )
    if len(names) > MAX_CHARTS:
        rest = ", ".join(names[MAX_CHARTS:])
        parts.append(f'<p class="note">not drawn ({len(names) - MAX_CHARTS}): {escape(rest)}</p>')
    return document(title, parts)


def _value(record: Mapping[str, Any], name: str) -> float | None:
    value = record["scalars"][name]
    return None if value is None else float(value)


def _summary(records: Sequence[Mapping[str, Any]], train: Sequence[Mapping[str, Any]]) -> str:
    """Runs recorded, training steps, NPU and stock runs, the scalars each fetched."""
    by_signature: dict[int, list[Mapping[str, Any]]] = {}
    for record in records:
        by_signature.setdefault(int(record.get("signature", 0)), []).append(record)
    rows = []
    for signature, group in by_signature.items():
        names = list(dict.fromkeys(n for r in group for n in r.get("scalars", {})))
        rows.append([
            signature, len(group), "training" if group[0].get("train") else "evaluation",
            "NPU" if group[0].get("npu") else "stock", ", ".join(names),
        ])  # fmt: skip
    steps = max((int(r.get("step", 0)) for r in train), default=0)
    head = (
        f"<p>{len(records):,} session runs fetched float scalars; {steps:,} training steps. "
        "The values are in <code>steps.jsonl</code> beside this page.</p>"
    )
    header = ["signature", "runs", "kind", "session", "scalars fetched"]
    return head + name_table(header, rows, names=(4,))

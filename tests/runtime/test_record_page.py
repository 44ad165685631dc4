"""steps.html from literal step records: a chart per scalar, the loss first, gaps named."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tf2npu.graph.report.chart import MAX_POINTS
from tf2npu.runtime.record_page import MAX_CHARTS, render_page


def _record(run: int, step: int, scalars: dict[str, float | None], *, train: bool = True,
            signature: int = 2, npu: bool = True) -> dict[str, Any]:  # fmt: skip
    nonfinite = [n for n, v in scalars.items() if v is None]
    return {"run": run, "signature": signature, "train": train, "step": step, "npu": npu,
            "scalars": scalars, "nonfinite": nonfinite}  # fmt: skip


def _titles(page: str) -> list[str]:
    return re.findall(r'<svg class="chart"[^>]*aria-label="([^"]*)"', page)


def test_one_chart_per_training_scalar_with_the_loss_first() -> None:
    records = [_record(i, i, {"lr:0": 0.1 / i, "total_loss:0": 2.0 / i}) for i in range(1, 6)]
    records.append(_record(6, 5, {"accuracy:0": 0.9}, train=False, signature=3))
    page = render_page(records, "tf2npu run: recorded steps (run)")
    assert "<title>tf2npu run: recorded steps (run)</title>" in page
    assert _titles(page) == ["total_loss:0 per training step", "lr:0 per training step"]
    assert "6 session runs fetched float scalars; 5 training steps." in page
    rows = re.findall(r"<tr><td class=\"n\">(\d)</td><td class=\"n\">(\d)</td><td>(\w+)</td>", page)
    assert rows == [("2", "5", "training"), ("3", "1", "evaluation")]


def test_a_nan_step_is_a_gap_and_named() -> None:
    records = [_record(i, i, {"loss:0": None if i in (3, 4) else 1.0 / i}) for i in range(1, 7)]
    page = render_page(records, "t")
    assert "NaN or Inf at 2 training steps (3, 4): gaps in the line." in page
    path = re.search(r'<path class="series" d="([^"]*)"', page)
    assert path is not None and path.group(1).count("M") == 2


def test_without_training_runs_the_evaluations_are_drawn_by_run() -> None:
    records = [_record(i, 0, {"loss:0": 1.0}, train=False) for i in range(3)]
    assert _titles(render_page(records, "t")) == ["loss:0 per session run (evaluation)"]


def test_nothing_recorded_and_too_many_scalars() -> None:
    assert "no run fetched a float scalar" in render_page([], "t")
    many = {f"s{i:02d}:0": float(i) for i in range(MAX_CHARTS + 2)}
    page = render_page([_record(1, 1, many)], "t")
    assert len(_titles(page)) == MAX_CHARTS
    assert "not drawn (2): s12:0, s13:0" in page


def test_a_long_run_is_read_as_a_stream_into_bounded_curves_keeping_spikes() -> None:
    def records() -> Iterator[dict[str, Any]]:
        for i in range(1, 60_001):
            loss = None if i % 5000 == 0 else (99.0 if i == 31_337 else 1.0)
            yield _record(i, i, {"loss:0": loss})

    page = render_page(records(), "t")
    path = re.search(r'<path class="series" d="([^"]*)"', page)
    assert path is not None and len(re.findall(r"[\d.]+,[\d.]+", path.group(1))) <= 2 * MAX_POINTS
    assert re.findall(r'class="label tick y-tick"[^>]*>([^<]*)<', page)[-1] == "100"
    assert (
        "NaN or Inf at 12 training steps (5000, 10000, 15000, 20000, 25000, 30000, 35000, " in page
    )
    assert "60000 and 2 more): gaps in the line." not in page  # ten shown, then the rest counted
    assert "50000 and 2 more): gaps in the line." in page

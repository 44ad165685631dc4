"""bisect.html from literal trials: distance per trial with the tolerance band, loss curves,
the trials' table linking each trial's steps.html."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from tf2npu.debug.bisect.metric import Evidence
from tf2npu.debug.bisect.page import LOSS_CURVES, PAGE_FILE, render_page
from tf2npu.debug.bisect.report import text_lines
from tf2npu.debug.bisect.search import Config, Trial

DATA: dict[str, Any] = {
    "kind": "fusion", "verdict": "instance", "found": True,
    "message": "fusion instance matmul_biasadd at d/Relu breaks the run",
    "rule": "matmul_biasadd", "aliases": ["MatMulBiasAddFusionPass"], "instance": "d/Relu",
    "where": "train.py:12", "nodes": ["d/Relu"], "types": [], "metric": "loss",
    "tolerance": 1e-4, "switch_file": "/o/fusion_switch.json", "instances_file": None,
    "mixlist_file": None, "keep_file": None,
}  # fmt: skip
USERS = Config()


def _trial(out: Path, number: int, label: str, distance: float | None, loss: list[float],
           config: Config = USERS, page: bool = True) -> Trial:  # fmt: skip
    folder = out / "trials" / f"{number:02d}-{label}"
    folder.mkdir(parents=True)
    if page:
        (folder / "steps.html").write_text("<!DOCTYPE html>")
    evidence = Evidence(status=0, loss=tuple(loss), seconds=2.5)
    matches = None if distance is None else distance <= DATA["tolerance"]
    return Trial(label, config, folder, evidence, False, distance, matches)


def _trials(out: Path) -> list[Trial]:
    return [
        _trial(out, 1, "all-on", 0.2, [2.0, 1.8, 1.7]),
        _trial(out, 2, "all-off", None, [2.0, 1.5, 1.2], Config(fusion_off=(("ALL", ""),))),
        _trial(out, 3, "rules-off", 0.0, [2.0, 1.5, 1.2],
               Config(fusion_off=(("matmul_biasadd", ""),))),
        _trial(out, 4, "instance-off", math.inf, [2.0, math.nan, 1.2], page=False,
               config=Config(fusion_off=(("matmul_biasadd", "d/Relu"),))),
    ]  # fmt: skip


def test_the_distance_chart_shades_the_tolerance_and_splits_matches(tmp_path: Path) -> None:
    page = render_page(DATA, _trials(tmp_path), tmp_path)
    assert "<title>tf2npu bisect fusion: instance</title>" in page
    chart = re.search(r'<svg class="chart"[^>]*aria-label="loss distance.*?</svg>', page, re.S)
    assert chart is not None
    svg = chart.group(0)
    assert "<title>tolerance 0.0001: a trial in here matches</title>" in svg
    legend = re.findall(r'<text class="label legend-label"[^>]*><title>([^<]*)</title>', svg)
    assert legend == [
        "in the order run",
        "matches",
        "differs",
        "tolerance 0.0001: a trial in here matches",
    ]
    assert svg.count('r="3.5"') == 2 + 2  # a dot per drawn trial (0.2 and 0 floored), 2 swatches
    assert "Infinite (a NaN or a failed run), not drawn: instance-off." in page


def test_loss_curves_and_the_trials_table_with_links(tmp_path: Path) -> None:
    page = render_page(DATA, _trials(tmp_path), tmp_path)
    assert 'aria-label="loss per step of each trial"' in page
    assert '<a href="trials/01-all-on/steps.html">steps.html</a>' in page
    assert "trials/04-instance-off/steps.html" not in page
    assert "matmul_<wbr>biasadd" not in page  # short parts stay whole
    assert " matmul_biasadd@d/<wbr>Relu" in page
    assert "as the user&#x27;s command line" in page
    assert '<tr class="fail"><td>01-all-on</td>' in page
    assert "<b>switch file</b>: /o/<wbr>fusion_switch.<wbr>json" in page


def test_many_trials_draw_the_first_loss_curves(tmp_path: Path) -> None:
    trials = [_trial(tmp_path, i, f"t{i}", 0.0, [1.0, 0.5]) for i in range(1, LOSS_CURVES + 4)]
    page = render_page(DATA, trials, tmp_path)
    assert "3 more trials in the table." in page


def test_the_variables_metric_draws_no_loss_and_text_names_the_page(tmp_path: Path) -> None:
    data = {**DATA, "metric": "variables", "page": str(tmp_path / PAGE_FILE)}
    assert "Loss per step" not in render_page(data, _trials(tmp_path), tmp_path)
    data |= {"runs": 4, "bound": None, "trials": []}
    assert text_lines(data)[-1] == f"  wrote {tmp_path / PAGE_FILE}  the trials drawn"

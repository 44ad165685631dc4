"""verify.html from literal run records: the checks, a chart per scalar with the divergence
marked, the relative differences, the variables that differ."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from tf2npu.artifacts.run_summary import RunSummary
from tf2npu.debug.trials import TrialResult
from tf2npu.debug.verify.checks import RunRecord, VerifyPlan, judge
from tf2npu.debug.verify.page import PAGE_FILE, render_page, write_page

LOSSES: list[float | None] = [2.0, 1.5, 1.2, 1.0]
W = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)


def _run(tmp_path: Path, name: str, losses: list[float | None] = LOSSES, w: Any = W) -> RunRecord:
    directory = tmp_path / name
    directory.mkdir(parents=True)
    lines = []
    for step, loss in enumerate(losses, 1):
        scalars = {"loss:0": loss, "lr:0": 0.1 / step}
        record = {"run": step, "signature": 2, "train": True, "step": step, "npu": True,
                  "scalars": scalars, "nonfinite": [] if loss is not None else ["loss:0"]}  # fmt: skip
        lines.append(json.dumps(record) + "\n")
    (directory / "steps.jsonl").write_text("".join(lines), encoding="utf-8")
    if w is not None:
        np.savez(directory / "variables.npz", **{"dense/kernel": w, "dense/bias": w[0] * 0})
    return RunRecord.load(
        name, TrialResult(0, directory, RunSummary(), 1.5, directory / "trial.log")
    )


def _page(tmp_path: Path, **changed: RunRecord) -> tuple[str, VerifyPlan]:
    names = ("original-1", "original-2", "keep-origin-dtype", "precision-mode")
    runs = {n: changed.get(n.replace("-", "_")) or _run(tmp_path, n) for n in names}
    plan = VerifyPlan(Path("/s/a.py"), Path("/s/npu/b.py"), tmp_path)
    checks = judge(runs, plan)
    return render_page(checks, runs, plan), plan


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg .*?</svg>", page, re.S)


def test_a_passing_verify_draws_each_scalar_and_its_differences(tmp_path: Path) -> None:
    page, _ = _page(tmp_path)
    assert "<title>tf2npu verify: PASS</title>" in page
    charts = _svgs(page)
    titles = [re.search(r'aria-label="([^"]*)"', svg).group(1) for svg in charts]  # type: ignore[union-attr]
    assert titles == [
        "loss:0 per step",
        "loss:0: relative difference from original-1",
        "lr:0 per step",
        "lr:0: relative difference from original-1",
    ]
    assert "first divergence" not in page
    assert "keep_origin_dtype tolerance 1e-05" in charts[1]
    assert "precision_mode tolerance 0.02" in charts[1]
    assert "2 of 2 variables are identical in every run" in page
    assert "http" not in page.replace("http://www.w3.org", "")  # nothing fetched


def test_the_first_divergence_is_marked_and_the_variable_listed(tmp_path: Path) -> None:
    keep = _run(tmp_path, "keep-origin-dtype", [2.0, 1.5, 1.3, 1.1], w=W * 1.01)
    page, _ = _page(tmp_path, keep_origin_dtype=keep)
    assert "<title>tf2npu verify: FAIL</title>" in page
    loss_chart = _svgs(page)[0]
    assert "keep_origin_dtype: first divergence, step 3" in loss_chart
    assert 'class="marker"' in loss_chart
    variables = page[page.index("Variables that differ") :]
    # kernel moved by 1% of 2.0 (the model's largest magnitude): 0.02 / 2.0 = 0.01
    row = re.search(r"<tr><td>dense/<wbr>kernel</td>(.*?)</tr>", variables).group(1)  # type: ignore[union-attr]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert [re.sub(r"<[^>]+>", "", c) for c in cells] == ["2x2", "0", "0.01", "0", "yes"]
    assert "1 of 2 variables are identical" in variables
    assert '<tr class="fail"><td>keep_<wbr>' not in page  # short names are kept whole
    assert '<tr class="fail"><td>keep_origin_dtype</td>' in page


def test_a_nan_step_is_a_gap_not_a_failure_to_draw(tmp_path: Path) -> None:
    nan = _run(tmp_path, "precision-mode", [2.0, None, 1.2, 1.0])
    page, _ = _page(tmp_path, precision_mode=nan)
    diff_chart = _svgs(page)[1]
    path = re.search(r'<path class="series" d="([^"]*)" fill="none" stroke="[^"]*" '
                     r'stroke-width="1.8"><title>precision-mode</title>', diff_chart)  # fmt: skip
    assert path is not None and path.group(1).count("M") == 1  # step 1, then a dot at 3-4
    assert "precision_mode: first divergence, step 2" in diff_chart


def test_runs_that_recorded_nothing_say_so(tmp_path: Path) -> None:
    plan = VerifyPlan(Path("/s/a.py"), Path("/s/b.py"), tmp_path)
    page = render_page([], {}, plan)
    assert "no run fetched a float scalar while it trained" in page
    assert "the original recorded no trainable variables" in page


def test_write_page_puts_verify_html_into_the_out_folder(tmp_path: Path) -> None:
    _, plan = _page(tmp_path)
    runs = {n: RunRecord.load(n, TrialResult(0, tmp_path / n, RunSummary(), 1.0, tmp_path / "l"))
            for n in ("original-1", "original-2")}  # fmt: skip
    path = write_page(judge({**runs, "keep-origin-dtype": runs["original-1"],
                             "precision-mode": runs["original-1"]}, plan), runs, plan)  # fmt: skip
    assert path == tmp_path / PAGE_FILE and path.read_text().startswith("<!DOCTYPE html>")


def test_a_run_has_one_colour_in_every_chart_and_its_checks_tolerance_too(
    tmp_path: Path,
) -> None:
    page, _ = _page(tmp_path)
    values, diffs = _svgs(page)[:2]

    def stroke(svg: str, name: str) -> str:
        found = re.search(rf'stroke="(#\w+)"[^>]*><title>{re.escape(name)}</title>', svg)
        assert found is not None, name
        return found.group(1)

    for run in ("original-2", "keep-origin-dtype", "precision-mode"):
        assert stroke(values, run) == stroke(diffs, run)
    assert stroke(diffs, "keep_origin_dtype tolerance 1e-05") == stroke(diffs, "keep-origin-dtype")

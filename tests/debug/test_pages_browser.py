"""The verify, compare, bisect and steps pages as headless Chromium lays them out: no
horizontal scrolling in a 1000-pixel window, every SVG label inside its drawing and none over
another, no number broken across lines.

The pages have no script; the test adds one to a copy, which records what the browser computed
into the DOM that ``--dump-dom`` prints (as ``tests/graph/report/test_html_browser.py`` does).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.graph.report.browser import dump_probe, needs_browser

from tf2npu.artifacts.gegraph import GeOp, TensorDesc
from tf2npu.artifacts.run_summary import RunSummary
from tf2npu.debug.bisect.metric import Evidence
from tf2npu.debug.bisect.page import render_page as bisect_page
from tf2npu.debug.bisect.search import Config, Trial
from tf2npu.debug.compare.page import render_page as compare_page
from tf2npu.debug.compare.trees import compare_trees
from tf2npu.debug.trials import TrialResult
from tf2npu.debug.verify.checks import RunRecord, VerifyPlan, judge
from tf2npu.debug.verify.page import render_page as verify_page
from tf2npu.runtime.record_page import render_page as steps_page
from tf2npu.testing.dumptrees import (
    npu_step_dir,
    write_dense_golden,
    write_fused_npu,
    write_golden,
    write_graph,
    write_npu,
)

pytestmark = [needs_browser, pytest.mark.slow]
WIDTH = 1000
LOSS = "tower_0/" + "very_long_scope_name/" * 4 + "sparse_softmax_cross_entropy_loss/value:0"

_PROBE = """
<script>
window.addEventListener('load', () => {
  const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const svgs = [...document.querySelectorAll('svg')].map(svg => ({
    box: box(svg),
    texts: [...svg.querySelectorAll('text')].filter(t => t.textContent.trim()).map(t => {
      const shown = [...t.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join('');
      return [shown, box(t)];
    }),
  }));
  const lines = td => { const r = document.createRange(); r.selectNodeContents(td);
    return new Set([...r.getClientRects()].map(c => Math.round(c.top))).size; };
  const out = {
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    svgs,
    numbers: [...document.querySelectorAll('.num')].map(td => [td.textContent, lines(td)]),
  };
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def _measure(page: str, path: Path) -> dict[str, Any]:
    return dict(dump_probe(page.replace("</body>", _PROBE + "</body>"), path, WIDTH))


def _overlap(a: list[float], b: list[float]) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5


def _check_layout(seen: dict[str, Any]) -> None:
    assert seen["scrollWidth"] <= seen["innerWidth"], "the page scrolls sideways"
    assert seen["svgs"], "no chart drawn"
    for svg in seen["svgs"]:
        frame = svg["box"]
        texts = svg["texts"]
        for text, b in texts:
            inside = frame[0] - 0.5 <= b[0] and b[2] <= frame[2] + 0.5
            assert inside and frame[1] - 0.5 <= b[1] and b[3] <= frame[3] + 0.5, (text, b, frame)
        for i, (text_a, a) in enumerate(texts):
            for text_b, b in texts[i + 1 :]:
                assert not _overlap(a, b), (text_a, a, text_b, b)
    for text, lines in seen["numbers"]:
        assert lines == 1, f"number {text!r} broken across {lines} lines"


def _run(out: Path, name: str, losses: list[float | None], w: Any) -> RunRecord:
    directory = out / name
    directory.mkdir(parents=True)
    lines = []
    for step, loss in enumerate(losses, 1):
        scalars = {LOSS: loss, "learning_rate:0": 0.01 * 0.9**step}
        lines.append(json.dumps({"run": step, "signature": 2, "train": True, "step": step,
                                 "npu": True, "scalars": scalars, "nonfinite": []}) + "\n")  # fmt: skip
    (directory / "steps.jsonl").write_text("".join(lines), encoding="utf-8")
    names = ["dense/kernel", "tower_0/" + "very_long_scope_name/" * 6 + "key/bias"]
    np.savez(directory / "variables.npz", **{names[0]: w, names[1]: w[1]})
    return RunRecord.load(
        name, TrialResult(0, directory, RunSummary(), 3.2, directory / "trial.log")
    )


def test_verify_page(tmp_path: Path) -> None:
    base = [2.3 * 0.93**i + 0.01 * math.sin(i) for i in range(40)]
    w = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    keep = [v * (1 + (0 if i < 12 else 3e-3 * (i - 11))) for i, v in enumerate(base)]
    half: list[float | None] = [v * (1 + 4e-4 * math.cos(i)) for i, v in enumerate(base)]
    half[30] = None
    runs = {
        "original-1": _run(tmp_path, "original-1", list(base), w),
        "original-2": _run(tmp_path, "original-2", [v * (1 + 1e-6) for v in base], w),
        "keep-origin-dtype": _run(tmp_path, "keep-origin-dtype", list(keep), w * 1.01),
        "precision-mode": _run(tmp_path, "precision-mode", half, w + 1e-4),
    }
    plan = VerifyPlan(Path("/home/me/proj/train.py"), Path("/home/me/proj/npu/train.py"), tmp_path)
    page = verify_page(judge(runs, plan), runs, plan)
    assert "first divergence, step 13" in page
    _check_layout(_measure(page, tmp_path / "verify.html"))


def test_compare_page(tmp_path: Path) -> None:
    write_fused_npu(tmp_path / "npu", fused=[[4.0, -0.5]], mode="all")
    write_dense_golden(tmp_path / "golden")
    page = compare_page(compare_trees(tmp_path / "npu", tmp_path / "golden"))
    assert "MatMulBiasAddFusionPass" in page
    _check_layout(_measure(page, tmp_path / "compare.html"))


def test_compare_page_of_a_deep_model_with_long_names(tmp_path: Path) -> None:
    """30 ops whose names and types are as long as real ones, the 18th diverging."""
    step = npu_step_dir(tmp_path / "npu")
    f16 = TensorDesc("DT_FLOAT16", (4, 8))
    types = ("ResourceApplyAdamWithAmsgrad", "StridedSliceGrad", "IteratorGetNext", "BatchMatMulV2")
    ops, previous = [], ()
    rng = np.random.default_rng(0)
    for i in range(30):
        name = f"bert/encoder/layer_{i}/attention/self/query_key_value/{types[i % 4]}"
        ops.append(GeOp(name, types[i % 4], i, previous, (f16,) if previous else (), (f16,)))
        truth = rng.standard_normal((4, 8)).astype(np.float32) * 10.0 ** (i % 7 - 3)
        npu = truth * (1.5 if i >= 17 else 1.0)
        write_npu(step, ops[-1], {("output", 0): npu.astype(np.float16)})
        write_golden(tmp_path / "golden" / "0", name, 0, truth)
        previous = (f"{name}:0",)
    write_graph(step, ops)
    page = compare_page(compare_trees(tmp_path / "npu", tmp_path / "golden"))
    assert "layer_17" in page[page.index("First divergent op") : page.index("Inputs (")]
    _check_layout(_measure(page, tmp_path / "compare.html"))


def test_bisect_page(tmp_path: Path) -> None:
    trials = []
    for n, distance in enumerate([0.2, 0.0, 0.3, 1e-6, 0.25, math.inf, 5e-5], 1):
        folder = tmp_path / "trials" / f"{n:02d}-rules-off-{n}"
        folder.mkdir(parents=True)
        config = Config(fusion_off=(("matmul_biasadd", f"tower_0/layer_{n}/dense/MatMul"),))
        loss = tuple(
            2.0 / (s + 1) * (1 + distance if math.isfinite(distance) else 1) for s in range(20)
        )
        trials.append(Trial(f"rules-off-{n}", config, folder, Evidence(0, loss, seconds=4.0),
                            False, distance, distance <= 1e-4))  # fmt: skip
    data = {"kind": "fusion", "verdict": "instance", "found": True, "metric": "loss",
            "message": "fusion instance matmul_biasadd at tower_0/layer_4/dense/MatMul breaks it",
            "tolerance": 1e-4, "rule": "matmul_biasadd", "aliases": ["MatMulBiasAddFusionPass"],
            "instance": "tower_0/layer_4/dense/MatMul", "where": "train.py:12"}  # fmt: skip
    _check_layout(_measure(bisect_page(data, trials, tmp_path), tmp_path / "bisect.html"))


def test_steps_page(tmp_path: Path) -> None:
    records = [
        {"run": i, "signature": 2, "train": True, "step": i, "npu": True, "nonfinite": [],
         "scalars": {LOSS: None if i in (700, 701) else 3.0 / math.sqrt(i), "lr:0": 1e-3}}
        for i in range(1, 5001)
    ]  # fmt: skip
    page = steps_page(records, "tf2npu run: recorded steps (run)")
    _check_layout(_measure(page, tmp_path / "steps.html"))

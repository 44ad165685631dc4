"""Seed 001, "fusion exception detection", as written, with our commands in place of the device.

1. Switch every fusion off with precision_tool (``session_dump_config(config,
   action='fusion_off')``) and check whether accuracy changes.
2. Dump with fusions on (``action='dump'``), move ``precision_data/npu/debug_0`` to ``debug_1``,
   dump again with fusions off (``action='fusion_off|dump'``), and compare the two dumps
   through their graph JSONs: every fused op is compared with the unfused ops it stands for.
3. A fusion that broke accuracy is the first divergent op, named with its fusion pass. Our
   fusions compute what the unfused ops compute, so the test breaks one on purpose: it scales
   the fused op's output in the fusion-on dump, as a wrong fused kernel would.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tf2npu.artifacts import dump as dumpfile
from tf2npu.artifacts import gegraph

pytestmark = [
    pytest.mark.tf,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs TensorFlow"),
]

EXE = Path(sys.executable).parent / "tf2npu"

# An auto-migrated Session script (the migration tool adds npu_config_proto) that seed 001
# then edits: the NpuOptimizer entry it already has is updated with update_custom_op.
SCRIPT = """\
import os
import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *
import precision_tool.tf_config as npu_tf_config

rng = np.random.RandomState(0)
x = tf.placeholder(tf.float32, [16, 8, 32], name="x")
t = tf.placeholder(tf.float32, [16, 1], name="t")
h = tf.layers.dense(x, 64, activation=tf.nn.relu, name="intermediate")
h = tf.layers.dense(h, 32, name="output") + x
pred = tf.layers.dense(tf.reduce_mean(h, axis=1), 1, name="regressor")
loss = tf.reduce_mean(tf.square(pred - t), name="loss")
train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)

session_config = tf.ConfigProto()
custom_op = session_config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
custom_op = npu_tf_config.update_custom_op(custom_op, action=os.environ["ACTION"])
xs = rng.randn(16, 8, 32).astype(np.float32)
ts = rng.randn(16, 1).astype(np.float32)
with tf.Session(config=npu_config_proto(config_proto=session_config)) as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(2):
        _, value = sess.run([train_op, loss], {x: xs, t: ts})
        print("loss %.9g" % value)
"""


def run(cwd: Path, action: str, report: str) -> tuple[list[float], dict]:
    done = subprocess.run(
        [str(EXE), "run", "--quiet", "--report-dir", report, "train.py"],
        cwd=cwd, capture_output=True, text=True, timeout=600,
        env={**_env(), "ACTION": action},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    losses = [
        float(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("loss")
    ]
    return losses, json.loads((cwd / report / "run_summary.json").read_text())


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0"}


def compare(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), "compare", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_seed_001_finds_the_fusion_that_breaks_accuracy(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)

    # 1. every fusion off: does accuracy change?
    on, on_summary = run(tmp_path, "", "r_on")
    off, off_summary = run(tmp_path, "fusion_off", "r_off")
    assert on_summary["fusions"] and off_summary["fusions"] == {}
    assert np.allclose(on, off, rtol=1e-3)

    # 2. dump with fusions on, keep it as debug_1; dump with fusions off into debug_0
    run(tmp_path, "dump", "r_dump_on")
    npu = tmp_path / "precision_data" / "npu"
    shutil.rmtree(npu / "debug_1", ignore_errors=True)
    (npu / "debug_0").rename(npu / "debug_1")
    run(tmp_path, "fusion_off|dump", "r_dump_off")
    graphs_on = [g for p in (npu / "debug_1" / "graph").glob("*.json") for g in gegraph.load(p)]
    fused = [op for g in graphs_on for op in g.ops if op.pass_name == "MatMulBiasAddFusionPass"]
    assert fused, "the fusion-on run's graph JSON names the fused ops and their pass"
    # each fused op's output carries the tensor of the last op it replaced
    carrying = [op for op in fused if op.output_desc and op.output_desc[0].origin_name]
    origins = {op.output_desc[0].origin_name for op in carrying}
    assert {"intermediate/Relu", "output/BiasAdd", "regressor/BiasAdd"} <= origins

    done = compare(tmp_path, str(npu / "debug_0" / "dump"), str(npu / "debug_1" / "dump"),
                   "--out", "cmp_ok", "--json")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["first_divergence"] is None
    rows = [r for r in _rows(tmp_path / "cmp_ok") if r["Verdict"] == "pass"]
    fused_names = {op.name for op in carrying}
    assert any(r["GroundTruth"] in fused_names for r in rows), "fused ops were compared"

    # 3. a fused kernel that is wrong: the compare names it, and its pass
    broken = _break_first_fused_output(npu / "debug_1" / "dump", fused_names)
    done = compare(tmp_path, str(npu / "debug_0" / "dump"), str(npu / "debug_1" / "dump"),
                   "--out", "cmp_bad", "--json")  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    first = json.loads(done.stdout)["first_divergence"]
    # the fusion-off op whose counterpart is the broken fused op, and the pass that fused it
    assert [t["ground_truth"] for t in first["failed"]] == [[broken]]
    assert first["counterpart_pass_name"] == "MatMulBiasAddFusionPass"
    summary = compare(tmp_path, str(npu / "debug_0" / "dump"), str(npu / "debug_1" / "dump"),
                      "--out", "cmp_bad")  # fmt: skip
    assert "made by fusion pass MatMulBiasAddFusionPass" in " ".join(summary.stdout.split())

    # the seed's own msaccucmp order: the fusions-off dump first, -f the fusions-on graph and
    # -cf the fusions-off one; each graph is used for the dump it names, and the pass is named
    # (GE's ge_proto_*_Build.txt as atc converts it, the .txt.json beside it: one per run
    # signature, and the training one is the graph the seed points at)
    on_graph, off_graph = _training_graph(npu / "debug_1"), _training_graph(npu / "debug_0")
    done = compare(tmp_path, str(npu / "debug_0" / "dump"), str(npu / "debug_1" / "dump"),
                   "-f", str(on_graph), "-cf", str(off_graph), "--out", "cmp_seed", "--json")  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "names the ops of GOLDEN_DUMP" in done.stderr
    report = json.loads(done.stdout)
    first = report["first_divergence"]
    assert [t["ground_truth"] for t in first["failed"]] == [[broken]]
    assert first["counterpart_pass_name"] == "MatMulBiasAddFusionPass"
    assert len(report["divergences"]) == 1, report["divergences"]  # no false difference starts


def _rows(folder: Path) -> list[dict[str, str]]:
    import csv

    rows: list[dict[str, str]] = []
    for path in sorted(folder.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as stream:
            rows += list(csv.DictReader(stream))
    return rows


def _scale_in_place(tensor: dumpfile.NpuTensor) -> None:
    """Rewrite the tensor's file with the tensor scaled (x * 1.5 + 0.25)."""
    if not tensor.raw:
        np.save(tensor.path, tensor.load() * 1.5 + 0.25)
        return
    header = dumpfile.read_nano(tensor.path)
    sides: dict[str, list[Any]] = {}
    for kind, side in (("input", header.inputs), ("output", header.outputs)):
        sides[kind] = [
            None if t.absent else dumpfile.load_nano_tensor(tensor.path, kind, i)  # type: ignore[arg-type]
            for i, t in enumerate(side)
        ]
    value = sides[tensor.kind][tensor.index]
    sides[tensor.kind][tensor.index] = (value * 1.5 + 0.25).astype(value.dtype)
    origins = [(t.origin_name, t.origin_index) for t in header.outputs]
    dumpfile.write_nano(tensor.path, sides["input"], sides["output"], origins)


def _break_first_fused_output(root: Path, fused: set[str]) -> str:
    """Scale, in every step folder, the output of the first fused op that has one; its name."""
    sanitized = {dumpfile.sanitize(name): name for name in fused}
    for step in dumpfile.find_step_dirs(root):
        graph = gegraph.load(step.graph_json)[0] if step.graph_json else None
        order = {op.name: op.id for op in graph.ops} if graph else {}
        outputs = [
            (order.get(sanitized[t.name.op_name], 0), t.path.name, t)
            for t in dumpfile.iter_npu_tensors(step)
            if t.kind == "output" and t.name.op_name in sanitized
        ]
        if outputs:
            _, _, tensor = min(outputs, key=lambda item: item[:2])
            _scale_in_place(tensor)
            return sanitized[tensor.name.op_name]
    raise AssertionError("no fused op output in the fusion-on dump")


def _training_graph(debug: Path) -> Path:
    """The converted build graph of the training run signature: the one with the most ops."""
    builds = sorted((debug / "graph").glob("ge_proto_*_Build.txt.json"))
    return max(builds, key=lambda path: sum(len(g.ops) for g in gegraph.load(path)))

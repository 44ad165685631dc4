"""DUMP_GE_GRAPH's build graphs, and the facts about ``precision_data/`` that precision_tool's
``ls``, ``ni``, ``vc`` and ``ac`` rely on (Ascend/tools ``precision_tool``, read at 9d6da90):

* its graph folder ``precision_data/npu/debug_0/graph`` holds ``ge_proto_<n>_Build.txt`` files
  (it lists names of that form and keeps those whose middle part is ``Build``) and reads each
  one's ``<name>.txt.json`` instead of running atc when that file is the newer;
* ``vc`` takes every graph of a build file by its ``name`` and compares the dump folder of that
  name under ``precision_data/npu/debug_0/dump`` (its deepest folder) with the graph file as
  msaccucmp's ``-f``;
* ``ni`` reads output ``i``'s descriptor through the ``i``-th ``dst_name``/``dst_index`` entry
  whose index is not -1, one per ``output_desc``;
* ``ac`` finds ``Opdebug.Node_OpDebug.<task>.<stream>.<ts>`` files under
  ``precision_data/overflow/dump`` and the op's dump file of the same task id beside each.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tf2npu.artifacts import gegraph

EXE = Path(sys.executable).with_name("tf2npu")
SCRIPT = """\
import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *
import precision_tool.tf_config as npu_tf_config

x = tf.placeholder(tf.float32, [2, 3], name="x")
w = tf.Variable(np.full([3, 2], {weight}, np.float32), name="w")
y = tf.nn.relu(tf.matmul(x, w), name="y")
loss = tf.reduce_mean(y, name="loss")
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
config = npu_tf_config.session_dump_config(tf.ConfigProto(), action="{action}")
custom = config.graph_options.rewrite_options.custom_optimizers[0]
custom.parameter_map["precision_mode"].s = b"allow_mix_precision"
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(2):
        sess.run(train, {{x: np.full([2, 3], 300.0, np.float32)}})
"""
BUILD = re.compile(r"^ge_proto_([0-9]+)_([A-Za-z0-9_-]+)\.txt$")
"""A GE graph file's name as precision_tool lists them: the number, then the graph kind."""


def run(root: Path, action: str, weight: float) -> None:
    (root / "train.py").write_text(SCRIPT.format(action=action, weight=weight))
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [str(EXE), "run", "--report-dir", "r", "train.py"],
        capture_output=True, text=True, cwd=root, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.mark.tf
@pytest.mark.slow
def test_precision_data_after_action_dump_has_what_ls_ni_and_vc_read(tmp_path: Path) -> None:
    run(tmp_path, "dump", 0.1)
    graphs = tmp_path / "precision_data" / "npu" / "debug_0" / "graph"
    builds = sorted(p for p in graphs.iterdir() if BUILD.match(p.name))
    assert [BUILD.match(p.name)[2] for p in builds] == ["Build", "Build"]  # type: ignore[index]
    models = {}
    for build in builds:
        converted = build.with_name(build.name + ".json")
        assert converted.stat().st_mtime_ns > build.stat().st_mtime_ns
        models.update({g.name: g for g in gegraph.load(converted)})
    dump = tmp_path / "precision_data" / "npu" / "debug_0" / "dump"
    [time] = [p for p in dump.iterdir() if p.name.isdigit()]
    folders = {p.name: p for p in (time / "0").iterdir()}
    assert sorted(models) == sorted(folders) == ["GeOp1_0_1", "GeOp1_0_2"]
    leaves = [d for d, subdirs, _ in os.walk(folders["GeOp1_0_2"]) if not subdirs]
    assert [Path(d).relative_to(time).as_posix() for d in leaves] == ["0/GeOp1_0_2/2/0"]
    for graph in models.values():
        for op in graph.to_json()["graph"][0]["op"]:
            data = [i for i in op["dst_index"] if i != -1]
            assert len(data) == len(op["output_desc"]), op["name"]


@pytest.mark.tf
@pytest.mark.slow
def test_precision_data_after_action_overflow_has_what_ac_reads(tmp_path: Path) -> None:
    run(tmp_path, "overflow", 100.0)  # 3 x 300 x 100 = 90000: beyond float16
    found = sorted((tmp_path / "precision_data" / "overflow" / "dump").rglob("Opdebug.*"))
    assert found, "no overflow record"
    for record in found:
        _, _, task, stream, stamp = record.name.split(".")
        assert stream.isdigit() and len(stamp) == 16
        data = [p for p in record.parent.iterdir() if p.name.split(".")[2:3] == [task]]
        assert [p.name.split(".")[0] for p in data if p != record] == ["MatMul"]

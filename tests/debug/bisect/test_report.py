"""The fix files bisect writes, and the keep_dtype_scope snippet."""

from __future__ import annotations

import json
from pathlib import Path

from tf2npu.config.fusion_switch import FusionSwitch
from tf2npu.config.mixlist import Mixlist
from tf2npu.debug.bisect.fusion import FusionResult
from tf2npu.debug.bisect.metric import FusionInstance, LoweredNode
from tf2npu.debug.bisect.precision import PrecisionResult
from tf2npu.debug.bisect.report import (
    Files,
    keep_dtype_snippet,
    write_fusion_files,
    write_precision_files,
)
from tf2npu.graph.fusion import known_rules

KNOWN = known_rules()


def test_the_switch_file_turns_every_alias_of_the_rule_off_and_the_engine_reads_it(
    tmp_path: Path,
) -> None:
    result = FusionResult(
        "instance", "", "adam_apply_one", FusionInstance("adam_apply_one", "adam/mul")
    )
    files = write_fusion_files(result, tmp_path, KNOWN)
    data = json.loads(files.switch_file.read_text())
    assert data == {"Switch": {"GraphFusion": {f"AdamApplyOneRuleCond{i}": "off" for i in range(1, 5)},
                               "UBFusion": {}}}  # fmt: skip
    assert FusionSwitch.load(files.switch_file, KNOWN).disabled == {"adam_apply_one"}
    assert json.loads(files.instances_file.read_text()) == {
        "off": [{"rule": "adam_apply_one", "root": "adam/mul"}]
    }


def test_a_grown_instance_switches_every_root_off(tmp_path: Path) -> None:
    instance = FusionInstance("matmul_biasadd", "d/Relu", ("d/Relu", "d/BiasAdd", "d/MatMul"))
    result = FusionResult("instance", "", "matmul_biasadd", instance, roots=("d/Relu", "d/BiasAdd"))
    files = write_fusion_files(result, tmp_path, KNOWN)
    assert json.loads(files.instances_file.read_text()) == {"off": [
        {"rule": "matmul_biasadd", "root": "d/Relu"}, {"rule": "matmul_biasadd", "root": "d/BiasAdd"},
    ]}  # fmt: skip


def test_a_rule_verdict_switches_the_whole_rule_off(tmp_path: Path) -> None:
    files = write_fusion_files(FusionResult("rule", "", "layer_norm"), tmp_path, KNOWN)
    assert json.loads(files.instances_file.read_text()) == {"off": [{"rule": "layer_norm"}]}


def test_nothing_is_written_without_a_culprit(tmp_path: Path) -> None:
    assert write_fusion_files(FusionResult("on_matches_off", ""), tmp_path, KNOWN) == Files()
    assert (
        write_precision_files(PrecisionResult("mode_matches", "", "allow_mix_precision"), tmp_path)
        == Files()
    )
    assert list(tmp_path.iterdir()) == []


def test_the_mixlist_is_seed_004s_format_and_the_engine_reads_it(tmp_path: Path) -> None:
    nodes = (LoweredNode("l0/Sum", "Sum", "ReduceSumD", "t.py:4 in f"),)
    result = PrecisionResult("found", "", "allow_mix_precision", ("ReduceSumD", "Exp"), nodes)
    files = write_precision_files(result, tmp_path)
    assert json.loads(files.mixlist_file.read_text()) == {
        "black-list": {"to-add": ["ReduceSumD", "Exp"]}
    }
    assert [op for op, _ in Mixlist.load(files.mixlist_file).added] == ["ReduceSumD", "Exp"]
    assert json.loads(files.keep_file.read_text()) == {"nodes": ["l0/Sum"]}


def test_keep_dtype_snippet() -> None:
    nodes = (
        LoweredNode("l0/Sum", "Sum", "ReduceSumD", "t.py:4 in f"),
        LoweredNode("x", "Exp", "Exp"),
    )
    assert keep_dtype_snippet(nodes) == (
        "from npu_bridge.estimator.npu import npu_scope\n"
        "\n"
        "with npu_scope.keep_dtype_scope():\n"
        "    ...  # the line that creates 'l0/Sum' (Sum)  # t.py:4 in f\n"
        "with npu_scope.keep_dtype_scope():\n"
        "    ...  # the line that creates 'x' (Exp)"
    )

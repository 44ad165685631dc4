"""The precision bisection on a fake lab: smallest black list, then nodes, then the re-run."""

from __future__ import annotations

from pathlib import Path

from tf2npu.debug.bisect.metric import LoweredNode, Metric
from tf2npu.debug.bisect.precision import PrecisionResult, bisect_precision
from tf2npu.debug.bisect.search import Bench, Config, Store
from tf2npu.testing.fake_lab import FakeLab

IDENTITY = {"kind": "precision", "script": "/w/train.py", "args": [], "options": []}
LOWERED = (
    LoweredNode("l0/MatMul", "MatMul", "MatMulV2"),
    LoweredNode("l0/Exp", "Exp", "Exp"),
    LoweredNode("l0/Sum", "Sum", "ReduceSumD"),
    LoweredNode("l1/MatMul", "MatMul", "MatMulV2"),
    LoweredNode("l1/Exp", "Exp", "Exp"),
    LoweredNode("l1/Sum", "Sum", "ReduceSumD"),
    LoweredNode("head/Square", "Square", "Square"),
    LoweredNode("head/Mean", "Mean", "ReduceMeanD"),
)


def run(
    tmp_path: Path, lab: FakeLab, mode: str = "allow_mix_precision"
) -> tuple[PrecisionResult, Bench]:
    bench = Bench(lab, Store(tmp_path / "out", IDENTITY))
    return bisect_precision(bench, Metric.LOSS, 0.01, mode), bench


def test_finds_the_one_type_and_its_one_node(tmp_path: Path) -> None:
    lab = FakeLab(lowered=LOWERED, bad_types=frozenset({"ReduceSumD"}))
    result, bench = run(tmp_path, lab)
    assert result.verdict == "found"
    assert result.types == ("ReduceSumD",)
    # latest first: the search prefers the fix closest to the overflow
    assert result.candidates == ("ReduceMeanD", "Square", "ReduceSumD", "Exp", "MatMulV2")
    # both Sum nodes must be kept: the fake breaks while any node of a bad type is float16
    assert [n.node for n in result.nodes] == ["l0/Sum", "l1/Sum"]
    assert result.rerun is not None and result.rerun.config.black_list == ("ReduceSumD",)
    assert lab.runs[0] == Config(precision_mode="must_keep_origin_dtype")
    assert lab.runs[1] == Config(precision_mode="allow_mix_precision")
    assert lab.runs[-1] == Config(
        precision_mode="allow_mix_precision", black_list=("ReduceSumD",), rerun=True
    )
    assert bench.runs == len(lab.runs)


def test_finds_two_types_that_are_both_needed(tmp_path: Path) -> None:
    lab = FakeLab(lowered=LOWERED, bad_types=frozenset({"Exp", "ReduceMeanD"}))
    result, _ = run(tmp_path, lab)
    assert result.types == ("Exp", "ReduceMeanD")


def test_of_several_fixes_the_latest_type_is_preferred(tmp_path: Path) -> None:
    """Float32 spreads forward: black-listing the MatMul also fixes the Sum after it. The
    search must name the Sum (the op that overflows), not the MatMul."""

    class Spreading(FakeLab):
        def evidence(self, config: Config, seconds: float):  # type: ignore[no-untyped-def]
            if config.black_list and "MatMulV2" in config.black_list:
                config = Config(config.fusion_off, config.precision_mode,
                                (*config.black_list, "ReduceSumD"), config.keep_fp32)  # fmt: skip
            return super().evidence(config, seconds)

    # the backward pass has MatMuls after every Sum: types are ordered by their first node
    backward = LoweredNode("grads/l0/MatMul_grad/MatMul", "MatMul", "MatMulV2")
    lab = Spreading(lowered=(*LOWERED, backward), bad_types=frozenset({"ReduceSumD"}))
    result, _ = run(tmp_path, lab)
    assert result.types == ("ReduceSumD",)


def test_ops_that_only_move_data_and_pass_made_nodes_are_no_candidates(tmp_path: Path) -> None:
    extra = (
        LoweredNode("grads/tuple/control_dependency", "Identity", "Identity"),
        LoweredNode("l0/Reshape", "Reshape", "Reshape"),
        LoweredNode("l0/Sum/_tf2npu_fp16", "Sum", "ReduceSumD"),
    )
    lab = FakeLab(lowered=(*LOWERED, *extra), bad_types=frozenset({"ReduceSumD"}))
    result, _ = run(tmp_path, lab)
    assert "Identity" not in result.candidates and "Reshape" not in result.candidates
    assert [n.node for n in result.nodes] == ["l0/Sum", "l1/Sum"]
    assert not [n for c in lab.runs for n in c.keep_fp32 if "/_tf2npu_" in n]


def test_node_level_culprit_gives_one_node(tmp_path: Path) -> None:
    lab = FakeLab(lowered=LOWERED, bad_nodes=frozenset({"l1/Exp"}))
    result, _ = run(tmp_path, lab)
    assert result.types == ("Exp",)
    assert [n.node for n in result.nodes] == ["l1/Exp"]
    assert result.nodes_note == ""


def test_mode_already_matches(tmp_path: Path) -> None:
    result, bench = run(tmp_path, FakeLab(lowered=LOWERED))
    assert result.verdict == "mode_matches" and bench.runs == 2
    assert "float16 does not change the loss" in result.message


def test_nothing_lowered(tmp_path: Path) -> None:
    result, _ = run(tmp_path, FakeLab(lowered=(), bad_types=frozenset({"Exp"})))
    assert result.verdict == "nothing_lowered"


def test_not_restored_by_any_black_list(tmp_path: Path) -> None:
    result, bench = run(tmp_path, FakeLab(lowered=LOWERED, bad_types=frozenset({"Softmax"})))
    assert result.verdict == "not_restored" and not result.found
    assert bench.runs == 3


def test_reference_fails(tmp_path: Path) -> None:
    class Broken(FakeLab):
        def evidence(self, config: Config, seconds: float):  # type: ignore[no-untyped-def]
            from dataclasses import replace

            return replace(super().evidence(config, seconds), status=1)

    result, bench = run(tmp_path, Broken(lowered=LOWERED, bad_types=frozenset({"Exp"})))
    assert result.verdict == "reference_fails" and bench.runs == 1

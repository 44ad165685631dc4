"""The fusion bisection on a fake lab: literal rules and instances, counted runs, verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tf2npu.debug.bisect.fusion import bisect_fusion, bound, grown
from tf2npu.debug.bisect.metric import FusionInstance, Metric
from tf2npu.debug.bisect.search import STATE_FILE, Bench, Config, Store
from tf2npu.errors import UsageError
from tf2npu.testing.fake_lab import FakeLab

RULES = ("matmul_biasadd", "gelu_tanh", "layer_norm", "softmax_cross_entropy", "dropout_do_mask")
IDENTITY = {"kind": "fusion", "script": "/w/train.py", "args": [], "options": []}


def instances(rule: str, count: int) -> list[FusionInstance]:
    return [
        FusionInstance(rule, f"{rule}/{i}", (f"{rule}/{i}", f"{rule}/{i}/x")) for i in range(count)
    ]


# 4 rules fired: 8, 3, 2 and 1 instances (layer 0..7 of matmul_biasadd, ...)
FIRED = [
    *instances("matmul_biasadd", 8),
    *instances("gelu_tanh", 3),
    *instances("layer_norm", 2),
    *instances("softmax_cross_entropy", 1),
]


def run(tmp_path: Path, lab: FakeLab, metric: Metric = Metric.LOSS) -> tuple[object, Bench]:
    bench = Bench(lab, Store(tmp_path / "out", IDENTITY))
    return bisect_fusion(bench, metric, 0.01, RULES), bench


@pytest.mark.parametrize(
    ("culprit", "runs"),
    [
        # first half of the rules (matmul_biasadd), last instance of 8
        (("matmul_biasadd", "matmul_biasadd/7"), 2 + 2 + 3 + 1),
        # second half of the rules, first instance of 3
        (("gelu_tanh", "gelu_tanh/0"), 2 + 2 + 2 + 0),
        (("layer_norm", "layer_norm/1"), 2 + 2 + 1 + 1),
        # the rule with one instance: no instance trial, one verification
        (("softmax_cross_entropy", "softmax_cross_entropy/0"), 2 + 2 + 0 + 1),
    ],
)
def test_names_the_culprit_instance_within_the_bound(
    tmp_path: Path, culprit: tuple[str, str], runs: int
) -> None:
    lab = FakeLab(FIRED, frozenset({culprit}))
    result, bench = run(tmp_path, lab)
    assert result.verdict == "instance"
    assert (result.rule, result.instance.root) == culprit
    assert result.instance.nodes == (culprit[1], f"{culprit[1]}/x")
    assert bench.runs == len(lab.runs) == runs
    members = sum(1 for i in FIRED if i.rule == culprit[0])
    assert result.bound == bound(4, members) and bench.runs <= result.bound
    assert result.rules_fired == (
        "matmul_biasadd",
        "gelu_tanh",
        "layer_norm",
        "softmax_cross_entropy",
    )


def test_the_run_bound_holds_for_every_instance(tmp_path: Path) -> None:
    for n, target in enumerate(FIRED):
        lab = FakeLab(FIRED, frozenset({(target.rule, target.root)}))
        result, bench = run(tmp_path / str(n), lab)
        assert result.instance == target
        assert bench.runs <= result.bound


def test_one_rule_with_one_instance(tmp_path: Path) -> None:
    only = instances("matmul_biasadd", 1)
    lab = FakeLab(only, frozenset({("matmul_biasadd", "matmul_biasadd/0")}))
    result, bench = run(tmp_path, lab)
    assert result.verdict == "instance" and result.instance == only[0]
    assert [c.fusion_off for c in lab.runs] == [
        (),
        tuple((r, "") for r in RULES),
        (("matmul_biasadd", "matmul_biasadd/0"),),
    ]
    assert bench.runs == 3 <= result.bound == 3


def test_the_all_off_trial_switches_every_rule_off(tmp_path: Path) -> None:
    lab = FakeLab(FIRED, frozenset({("gelu_tanh", "gelu_tanh/2")}))
    run(tmp_path, lab)
    assert lab.runs[0] == Config()
    assert lab.runs[1] == Config(fusion_off=tuple((r, "") for r in RULES))
    # the first rule trial switches off the first half of the rules that fired
    assert lab.runs[2].fusion_off == (("matmul_biasadd", ""), ("gelu_tanh", ""))


GROWN = [
    FusionInstance("matmul_biasadd", "l0/BiasAdd", ("l0/BiasAdd", "l0/MatMul")),
    FusionInstance("matmul_biasadd", "l0/Relu", ("l0/Relu", "l0/BiasAdd", "l0/MatMul")),
    FusionInstance("matmul_biasadd", "l1/BiasAdd", ("l1/BiasAdd", "l1/MatMul")),
    FusionInstance("matmul_biasadd", "l2/BiasAdd", ("l2/BiasAdd", "l2/MatMul")),
]


def test_grown_instances_are_one_candidate_with_every_root() -> None:
    assert grown(GROWN) == {
        GROWN[1]: ("l0/Relu", "l0/BiasAdd"),
        GROWN[2]: ("l1/BiasAdd",),
        GROWN[3]: ("l2/BiasAdd",),
    }


def test_a_culprit_grown_from_another_instance_is_named_with_both_roots(tmp_path: Path) -> None:
    lab = FakeLab(GROWN, frozenset({("matmul_biasadd", "l0/Relu")}))
    result, bench = run(tmp_path, lab)
    assert result.verdict == "instance" and result.instance == GROWN[1]
    assert result.roots == ("l0/Relu", "l0/BiasAdd")
    assert result.bound == bound(1, 3) and bench.runs <= result.bound
    assert lab.runs[-1].fusion_off == (
        ("matmul_biasadd", "l0/Relu"),
        ("matmul_biasadd", "l0/BiasAdd"),
    )


def test_no_culprit_when_on_matches_off(tmp_path: Path) -> None:
    result, bench = run(tmp_path, FakeLab(FIRED, frozenset()))
    assert result.verdict == "on_matches_off" and not result.found
    assert "fusions do not change the loss" in result.message
    assert bench.runs == 2
    assert [t.distance for t in bench.trials] == [pytest.approx(5e-5, rel=0.01), 0.0]


def test_off_does_not_fix_when_the_off_run_fails(tmp_path: Path) -> None:
    lab = FakeLab(FIRED, frozenset({("gelu_tanh", "gelu_tanh/0")}), off_status=1)
    result, bench = run(tmp_path, lab)
    assert result.verdict == "off_fails"
    assert "failed too (exit status 1" in result.message
    assert bench.runs == 2


def test_no_fusion_fired(tmp_path: Path) -> None:
    result, bench = run(tmp_path, FakeLab([], frozenset()))
    assert result.verdict == "no_fusion" and bench.runs == 1


@pytest.mark.parametrize(
    ("status", "log", "why"),
    [
        (1, "Traceback (most recent call last):\n  File ...\nImportError: no module x\n", "exit status 1: no run summary (the child exited 1); the last line of its log: ImportError: no module x"),
        (124, "", "exit status 124: stopped by the timeout"),
    ],
)  # fmt: skip
def test_a_failed_script_is_not_blamed_on_no_fusion(
    tmp_path: Path, status: int, log: str, why: str
) -> None:
    result, bench = run(tmp_path, FakeLab(FIRED, fail_status=status, fail_log=log))
    assert result.verdict == "script_failed" and bench.runs == 1
    assert result.message == (
        f"the run with every fusion on failed ({why}) before any fusion rule fired; fix the "
        "script, or give --timeout if it was stopped too early, then bisect again (its log: "
        f"{tmp_path / 'out' / 'trials' / '01-all-on' / 'trial.log'})"
    )


def test_two_instances_at_fault_give_the_rule(tmp_path: Path) -> None:
    pair = frozenset(
        {("matmul_biasadd", "matmul_biasadd/1"), ("matmul_biasadd", "matmul_biasadd/6")}
    )
    result, bench = run(tmp_path, FakeLab(FIRED, pair))
    assert result.verdict == "rule" and result.rule == "matmul_biasadd"
    assert result.instance is None
    assert "no single instance" in result.message
    # the rule-off check is the rule search's last trial, taken again without a run
    assert bench.runs == result.bound == 8


def test_the_rule_check_past_the_bound_runs_once(tmp_path: Path) -> None:
    # one rule fired: the rule search runs nothing, so the rule check is a new trial
    fired = instances("matmul_biasadd", 4)
    pair = frozenset(
        {("matmul_biasadd", "matmul_biasadd/0"), ("matmul_biasadd", "matmul_biasadd/3")}
    )
    result, bench = run(tmp_path, FakeLab(fired, pair))
    assert result.verdict == "rule"
    assert bench.runs == result.bound + 1 == 2 + 2 + 1 + 1


def test_two_rules_at_fault_is_inconclusive(tmp_path: Path) -> None:
    pair = frozenset({("matmul_biasadd", "matmul_biasadd/1"), ("layer_norm", "layer_norm/0")})
    result, _ = run(tmp_path, FakeLab(FIRED, pair))
    assert result.verdict == "inconclusive" and result.rule is None


def test_resume_after_an_interruption_runs_no_finished_trial_again(tmp_path: Path) -> None:
    culprit = frozenset({("matmul_biasadd", "matmul_biasadd/5")})

    class Interrupt(Exception):
        pass

    class Flaky(FakeLab):
        def run(self, config: Config, folder: Path):  # type: ignore[no-untyped-def]
            if len(self.runs) == 4:
                (folder / "half-written").write_text("")
                raise Interrupt
            return super().run(config, folder)

    first = Flaky(FIRED, culprit)
    with pytest.raises(Interrupt):
        run(tmp_path, first)
    state = json.loads((tmp_path / "out" / STATE_FILE).read_text())
    assert len(state["trials"]) == 4
    second = FakeLab(FIRED, culprit)
    result, bench = run(tmp_path, second)
    assert result.instance.root == "matmul_biasadd/5"
    assert second.loads == 4  # the four finished trials are read back
    assert len(second.runs) == bench.runs - 4  # only the rest is run
    assert [t.resumed for t in bench.trials] == [True] * 4 + [False] * (bench.runs - 4)
    # the cut-off trial's folder was emptied and used again
    assert not list((tmp_path / "out" / "trials").glob("*/half-written"))


def test_a_state_of_another_script_is_refused(tmp_path: Path) -> None:
    run(tmp_path, FakeLab(FIRED, frozenset({("gelu_tanh", "gelu_tanh/0")})))
    with pytest.raises(
        UsageError,
        match=r"state of another bisection \(script was '/w/train.py', now '/w/other.py'\)",
    ):
        Store(tmp_path / "out", {**IDENTITY, "script": "/w/other.py"})


def test_variables_metric(tmp_path: Path) -> None:
    import numpy as np

    class VariablesLab(FakeLab):
        def evidence(self, config: Config, seconds: float):  # type: ignore[no-untyped-def]
            from dataclasses import replace

            ev = super().evidence(config, seconds)
            return replace(ev, variables={"w": np.array([1.0, ev.loss[-1]])}, loss=())

    lab = VariablesLab(FIRED, frozenset({("gelu_tanh", "gelu_tanh/1")}))
    result, _ = run(tmp_path, lab, Metric.VARIABLES)
    assert result.instance.root == "gelu_tanh/1"

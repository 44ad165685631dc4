"""``tf2npu verify`` from the command line: parsing, usage errors, and end to end on a migrated
example (passes) and on a deliberately broken migration (fails at the step it changed)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tf2npu.cli.main import build_parser, main
from tf2npu.cli.verify import make_plan
from tf2npu.testing.hostile import commands, finish, start_tf2npu, stop_group, wait_for
from tf2npu.testing.migration import migrate_text

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tf1" / "estimator_mnist_like.py"


def verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["verify", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def scripts(tmp_path: Path) -> tuple[Path, Path]:
    original, migrated = tmp_path / "a.py", tmp_path / "b.py"
    original.write_text("print(1)\n", encoding="utf-8")
    migrated.write_text("print(1)\n", encoding="utf-8")
    return original, migrated


def test_options_before_and_after_the_scripts_and_script_args(
    scripts: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = scripts
    argv = ["verify", "--steps", "3", str(a), str(b), "--option", "precision_mode=force_fp16"]
    argv += ["--no-deterministic", "--dropout-off", "--out", str(tmp_path / "o"), "--"]
    argv += ["--steps", "9", "--", "x"]
    plan = make_plan(build_parser().parse_args(argv))
    assert (plan.original, plan.migrated, plan.out) == (a, b, tmp_path / "o")
    assert plan.script_args == ("--steps", "9", "--", "x")
    assert plan.options == ("precision_mode=force_fp16",)
    assert (plan.steps, plan.deterministic, plan.dropout_off, plan.rtol) == (3, False, True, 0.02)


@pytest.mark.parametrize(
    "order",
    [
        ["O", "M", "--steps", "3", "--json", "--"],
        ["--steps", "3", "O", "M", "--json", "--"],
        ["--steps", "3", "--json", "O", "M", "--"],
        ["O", "--steps", "3", "M", "--json", "--"],
        ["--json", "O", "--steps", "3", "M", "--"],
        ["O", "M", "--json", "--steps=3", "--"],
        ["--steps=3", "O", "--json", "M", "--"],
    ],
)
def test_script_args_pass_whatever_the_order_of_verifys_options(
    scripts: tuple[Path, Path], order: list[str]
) -> None:
    a, b = scripts
    argv = [{"O": str(a), "M": str(b)}.get(item, item) for item in order]
    argv += ["--steps", "5", "--lr", "0.1", "--", "x"]  # the scripts' own, verbatim
    args = build_parser().parse_args(["verify", *argv])
    plan = make_plan(args)
    assert (plan.original, plan.migrated, plan.steps, args.json) == (a, b, 3, True)
    assert plan.script_args == ("--steps", "5", "--lr", "0.1", "--", "x")


def test_without_options_everything_after_the_dash_dash_is_the_scripts(
    scripts: tuple[Path, Path],
) -> None:
    a, b = scripts
    plan = make_plan(build_parser().parse_args(["verify", str(a), str(b), "--", "--steps", "5"]))
    assert (plan.steps, plan.script_args) == (None, ("--steps", "5"))


def test_options_before_and_after_the_scripts_add_up(scripts: tuple[Path, Path]) -> None:
    a, b = scripts
    argv = ["verify", "--option", "mix_compile_mode=true", str(a), str(b)]
    argv += ["--option", "precision_mode=force_fp16"]
    plan = make_plan(build_parser().parse_args(argv))
    assert plan.options == ("mix_compile_mode=true", "precision_mode=force_fp16")


def test_defaults(scripts: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    plan = make_plan(build_parser().parse_args(["verify", *map(str, scripts)]))
    assert plan.out == tmp_path / "tf2npu-verify"
    assert (plan.steps, plan.deterministic, plan.dropout_off, plan.script_args) == (
        None, True, False, ()
    )  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--steps", "0"], "--steps 0: give a number of training steps >= 1"),
        (["--tolerance", "2"], "--tolerance 2.0: give a relative tolerance"),
        (["--option", "precison_mode=x"], "did you mean 'precision_mode'"),
        (["--frobnicate"], "unrecognized arguments: --frobnicate; see tf2npu verify --help"),
        (["--steps", "many"], "argument --steps: invalid int value: 'many'"),
        (["--timeout", "nan"], "--timeout nan: give seconds > 0, e.g. --timeout 600"),
        (["--timeout", "inf"], "--timeout inf: give seconds > 0, e.g. --timeout 600"),
        (["--timeout", "0"], "--timeout 0: give seconds > 0, e.g. --timeout 600"),
    ],
)
def test_usage_errors_exit_2_and_name_the_fix(
    capsys: pytest.CaptureFixture[str], scripts: tuple[Path, Path], extra: list[str], message: str
) -> None:
    code, _, err = verify(capsys, *map(str, scripts), *extra)
    assert code == 2
    assert message in err


def test_one_script_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = verify(capsys, str(tmp_path / "a.py"), "--steps", "3")
    assert code == 2
    assert "the following arguments are required: MIGRATED; see tf2npu verify --help" in err


def test_a_missing_script_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = verify(capsys, str(tmp_path / "nope.py"), str(tmp_path / "b.py"))
    assert code == 2
    assert f"ORIGINAL '{tmp_path / 'nope.py'}' does not exist" in err


def test_help_teaches_with_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    out = capsys.readouterr().out
    assert "tf2npu verify train.py npu/train.py --steps 20" in out
    assert "--dropout-off" in out and "first_divergent_step" in out


@pytest.mark.tf
@pytest.mark.slow
def test_passes_on_a_migrated_example_and_fails_on_a_broken_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = EXAMPLE.read_text(encoding="utf-8")
    migrated = migrate_text(source, path=EXAMPLE.name).output.decode("utf-8")
    assert "NPURunConfig" in migrated
    good, broken = tmp_path / "good.py", tmp_path / "broken.py"
    good.write_text(migrated, encoding="utf-8")
    assert '"learning_rate": 0.1}' in migrated
    broken.write_text(migrated.replace('"learning_rate": 0.1}', '"learning_rate": 0.2}'))
    args = ["--", "--steps", "3", "--model-dir", "{run_dir}/model"]

    code, out, _ = verify(capsys, str(EXAMPLE), str(good), "--out", str(tmp_path / "v1"), *args)
    assert code == 0, out
    assert out.startswith("tf2npu verify: PASS")
    report = json.loads((tmp_path / "v1" / "verify.json").read_text())
    assert report["verdict"] == "pass"
    assert [c["steps_compared"] for c in report["checks"]] == [3, 3, 3]

    code, out, _ = verify(capsys, str(EXAMPLE), str(broken), "--out", str(tmp_path / "v2"), *args)
    assert code == 1, out
    report = json.loads((tmp_path / "v2" / "verify.json").read_text())
    exact = report["checks"][1]
    assert (report["verdict"], exact["name"], exact["passed"]) == (
        "fail",
        "keep_origin_dtype",
        False,
    )
    assert exact["first_divergent_step"] == 2  # step 1's loss is computed before the update
    assert "first divergent step 2" in out
    page = (tmp_path / "v2" / "verify.html").read_text()
    assert "keep_origin_dtype: first divergence, step 2" in page
    # the doubled learning rate is no fusion rounding: the run with fusions off still differs
    assert "keep-origin-dtype-fusions-off" in report["runs"]
    assert exact["cause"] == "divergence"
    assert exact["notes"][-1].startswith("not fusion rounding: with every fusion off the run")
    print(json.dumps(exact))


@pytest.mark.parametrize(
    ("verdict", "code", "mark"),
    [("pass", 0, "  ok  "), ("inconclusive", 3, " ??  "), ("fail", 1, " FAIL ")],
)
def test_the_verdict_gives_the_exit_code(
    capsys: pytest.CaptureFixture[str],
    scripts: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    verdict: str,
    code: int,
    mark: str,
) -> None:
    from tf2npu.cli import verify as cli
    from tf2npu.debug.verify.checks import Check

    check = Check("keep_origin_dtype", verdict != "fail", 2e-3, 1e-3)
    check.inconclusive = verdict == "inconclusive"
    monkeypatch.setattr(cli, "run_verify", lambda plan, progress: ([check], {}))
    got, out, _ = verify(capsys, *map(str, scripts), "--out", str(tmp_path / "o"))
    assert got == code
    assert out.startswith(f"tf2npu verify: {verdict.upper()}\n{mark}keep_origin_dtype ")
    assert json.loads((tmp_path / "o" / "verify.json").read_text())["verdict"] == verdict
    page = tmp_path / "o" / "verify.html"
    assert out.endswith(f"verify.html: {page.resolve()}\n")
    assert f"<title>tf2npu verify: {verdict.upper()}</title>" in page.read_text()


# -- signals: Ctrl-C, SIGTERM, SIGHUP stop verify and every trial, grandchildren included -----

HANGING = """\
import subprocess, time
subprocess.Popen(["sleep", "300"])
time.sleep(300)
"""


@pytest.mark.parametrize(
    ("signum", "code", "message"),
    [
        (signal.SIGINT, 130, "tf2npu verify: interrupted\n"),
        (signal.SIGTERM, 143, "tf2npu verify: interrupted by SIGTERM\n"),
        (signal.SIGHUP, 129, "tf2npu verify: interrupted by SIGHUP\n"),
    ],
    ids=["ctrl-c", "sigterm", "sighup"],
)
@pytest.mark.slow
def test_a_signal_stops_verify_and_its_trials(
    tmp_path: Path, signum: int, code: int, message: str
) -> None:
    script = tmp_path / "hang.py"
    script.write_text(HANGING)
    started = start_tf2npu(["verify", str(script), str(script), "--out", "o"], tmp_path)
    try:
        assert wait_for(started.tag, "sleep 300", timeout=120), "the trials never started"
        os.kill(started.process.pid, signum)  # Ctrl-C reaches only verify: trials have sessions
        ended = finish(started, timeout=30)
    finally:
        stop_group(started.process.pid)
    assert (ended.code, ended.left, ended.traceback) == (code, (), False), ended.err
    assert ended.err.endswith(message)
    assert ended.err.splitlines()[0] == (
        f"running 4 trials into {tmp_path / 'o'}; per-trial timeout: 3600 s for the reference "
        "run, then 4x its time (at least 300 s); --timeout S sets one ..."
    )


@pytest.mark.slow
def test_sigkill_of_verify_kills_its_trials(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(HANGING)  # the trial and the `sleep 300` it starts must both go
    started = start_tf2npu(["verify", str(script), str(script), "--out", "o"], tmp_path)
    try:
        assert wait_for(started.tag, "sleep 300", timeout=120), "the trials never started"
        os.kill(started.process.pid, signal.SIGKILL)
        ended = finish(started, timeout=30, settle=5)
    finally:
        stop_group(started.process.pid)
    assert ended.code == -signal.SIGKILL
    assert commands(ended.left) == []


def test_a_check_that_compared_no_scalar_says_so_instead_of_a_zero() -> None:
    from tf2npu.cli.verify import _line
    from tf2npu.debug.verify.checks import Check, Comparison

    nothing = Comparison(0, 0.0, None, None, 0.0, None)
    line = _line(Check("keep_origin_dtype", True, 1e-5, 0.0, nothing, None, 1e-3)).plain
    assert "no scalar compared (tolerance 1e-05), variables 0" in line
    assert "max rel diff" not in line
    some = Comparison(3, 0.0, None, None, 0.0, None)
    line = _line(Check("keep_origin_dtype", True, 1e-5, 0.0, some, None, 1e-3)).plain
    assert "max rel diff 0 (tolerance 1e-05)" in line

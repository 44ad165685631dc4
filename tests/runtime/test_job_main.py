"""``python -m tf2npu.runtime.job SPEC.json``'s own errors, before any run (no TensorFlow)."""

from __future__ import annotations

from pathlib import Path

from tf2npu.runtime.job import main


def test_no_spec_file_is_a_usage_error(capsys) -> None:
    assert main([]) == 2
    assert capsys.readouterr().err == (
        "usage: python -m tf2npu.runtime.job SPEC.json (got 0 arguments: []); SPEC.json is a "
        "run_spec.json a tool wrote for a child run\n"
    )


def test_a_spec_file_with_an_unknown_key_is_named_and_nothing_runs(tmp_path, capsys) -> None:
    path = tmp_path / "run_spec.json"
    path.write_text('{"schema": 1, "spec": {"scrip": "/w/t.py"}}')
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"tf2npu run: error: run spec {str(path)!r}: spec: unknown key 'scrip' (= '/w/t.py'); "
        "the keys are ['deterministic', "
    )
    assert not (tmp_path / "run_summary.json").exists()


def test_a_missing_spec_file_is_named(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "nope.json")]) == 2
    assert capsys.readouterr().err == (
        f"tf2npu run: error: run spec {str(tmp_path / 'nope.json')!r}: cannot read it: "
        "No such file or directory\n"
    )


def test_an_option_value_the_run_would_reject_stops_the_child_before_the_script(
    tmp_path: Path, capsys
) -> None:
    from tf2npu.artifacts import run_spec
    from tf2npu.runtime.job import RunSpec

    script = tmp_path / "train.py"
    script.write_text("open('ran', 'w')\n")
    spec = RunSpec(
        script=script,
        script_args=(),
        report_dir=tmp_path / "report",
        options=("precision_mode=fp17",),
        npu=True,
        execution="host",
    )
    path = tmp_path / "run_spec.json"
    run_spec.write(path, spec)
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tf2npu run: error: --option precision_mode=fp17: not a valid value; ")
    assert not (tmp_path / "ran").exists() and not (tmp_path / "report").exists()

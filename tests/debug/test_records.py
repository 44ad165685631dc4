"""Reading run records: steps.jsonl, variables.npz, and the loss series tools compare."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tf2npu.debug.records import (
    StepRecord,
    final_loss,
    loss_name,
    loss_series,
    read_steps,
    read_variables,
)
from tf2npu.errors import ConfigError, UsageError


def _write(directory: Path, *records: dict[str, object]) -> Path:
    lines = [json.dumps(r) for r in records]
    (directory / "steps.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def _record(run: int, step: int, scalars: dict[str, float | None], **kw: object) -> dict:
    nonfinite = [k for k, v in scalars.items() if v is None]
    data = {"run": run, "signature": kw.get("signature", 2), "train": kw.get("train", True)}
    data.update(step=step, npu=kw.get("npu", False), scalars=scalars, nonfinite=nonfinite)
    return data


def test_read_steps_parses_every_field(tmp_path: Path) -> None:
    _write(
        tmp_path,
        _record(1, 1, {"loss:0": 2.5, "lr:0": 0.1}, npu=True),
        _record(2, 2, {"loss:0": None, "lr:0": 0.1}, npu=True),
    )
    steps = read_steps(tmp_path)
    assert steps[0] == StepRecord(1, 2, True, 1, True, {"loss:0": 2.5, "lr:0": 0.1}, ())
    assert steps[1].nonfinite == ("loss:0",)
    assert math.isnan(steps[1].value("loss:0"))
    assert list(steps[0].scalars) == ["loss:0", "lr:0"]  # fetch order kept


def test_read_steps_skips_blank_lines(tmp_path: Path) -> None:
    (tmp_path / "steps.jsonl").write_text(
        "\n" + json.dumps(_record(0, 1, {"loss:0": 1.0})) + "\n\n", encoding="utf-8"
    )
    assert len(read_steps(tmp_path)) == 1


def test_read_steps_without_a_record_names_the_file_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"steps.jsonl' does not exist.*tf2npu run --record"):
        read_steps(tmp_path)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("{not json", "Expecting property name"),
        ('{"run": 0}', "no key 'scalars'"),
        (
            '{"run": 0, "signature": 1, "train": true, "step": 1, "npu": false, "scalars": []}',
            "scalars",
        ),
        (
            '{"run": "x", "signature": 1, "train": true, "step": 1, "npu": false, "scalars": {}}',
            "invalid literal",
        ),
        ("[1, 2, 3]", "list indices must be integers"),
        ('{"run": 1e999, "signature": 1, "train": true, "step": 1, "npu": false, "scalars": {}}', "cannot convert float infinity to integer"),
        ("[" * 100_000, "JSON nested too deep"),
    ],
)  # fmt: skip
def test_a_broken_line_is_named_with_its_number(tmp_path: Path, line: str, why: str) -> None:
    good = json.dumps(_record(0, 1, {"loss:0": 1.0}))
    (tmp_path / "steps.jsonl").write_text(good + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"steps.jsonl:2: not a step record \(.*{why}"):
        read_steps(tmp_path)


def test_read_variables_round_trip(tmp_path: Path) -> None:
    np.savez(tmp_path / "variables.npz", **{"dense/kernel": np.ones((2, 3), np.float32)})
    variables = read_variables(tmp_path)
    assert list(variables) == ["dense/kernel"]
    assert variables["dense/kernel"].shape == (2, 3)


def test_read_variables_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"variables\.npz' does not exist"):
        read_variables(tmp_path)
    (tmp_path / "variables.npz").write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match="not a variables archive"):
        read_variables(tmp_path)


def _steps(*records: dict) -> list[StepRecord]:
    return [
        StepRecord(r["run"], r["signature"], r["train"], r["step"], r["npu"], r["scalars"],
                   tuple(r["nonfinite"]))
        for r in records
    ]  # fmt: skip


def test_loss_series_takes_the_loss_named_scalar_of_training_runs() -> None:
    steps = _steps(
        _record(0, 0, {"acc:0": 0.5}, train=False, signature=1),
        _record(1, 1, {"lr:0": 0.1, "total_loss:0": 3.0}),
        _record(2, 2, {"lr:0": 0.1, "total_loss:0": None}),
        _record(3, 3, {"lr:0": 0.1, "total_loss:0": 1.0}),
    )
    series = loss_series(steps)
    assert series[0] == 3.0 and math.isnan(series[1]) and series[2] == 1.0
    assert final_loss(steps) == 1.0


def test_loss_series_without_a_loss_name_takes_the_first_scalar() -> None:
    steps = _steps(_record(1, 1, {"mean:0": 2.0, "lr:0": 0.1}), _record(2, 2, {"mean:0": 1.5}))
    assert loss_name(steps) == "mean:0"
    assert loss_series(steps) == [2.0, 1.5]


def test_loss_series_falls_back_to_the_last_evaluation() -> None:
    steps = _steps(
        _record(0, 0, {"loss:0": 9.0}, train=False, signature=3),  # an early evaluation
        _record(5, 3, {"loss:0": 4.0, "acc:0": 0.1}, train=False, signature=4),
        _record(6, 3, {"loss:0": 2.0, "acc:0": 0.3}, train=False, signature=4),
    )
    assert loss_series(steps) == [4.0, 2.0]
    assert final_loss(steps) == 2.0


def test_nothing_fetched_gives_no_loss() -> None:
    assert loss_series([]) == []
    assert final_loss([]) is None
    assert loss_name([]) is None

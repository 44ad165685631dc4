"""``run_spec.json``: a RunSpec round-trips exactly; a bad file names the key, value and fix."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tf2npu.artifacts import run_spec
from tf2npu.config.faults import FaultSpec
from tf2npu.config.overrides import EngineOverrides, FusionOverride, KeepFp32
from tf2npu.errors import ConfigError
from tf2npu.runtime.job import RunSpec

FULL = RunSpec(
    script=Path("/w/train.py"),
    script_args=("--lr", "0.1"),
    report_dir=Path("/w/report"),
    options=("precision_mode=allow_mix_precision",),
    npu=True,
    execution="xla",
    strict_options=True,
    golden_dump=Path("/w/golden"),
    dump_step="0|2",
    profile=Path("/w/prof"),
    profile_steps="1",
    export_graph=Path("/w/graphs"),
    deterministic=True,
    record=True,
    max_steps=3,
    dropout_off=True,
    engine=EngineOverrides(
        fusion=FusionOverride(
            frozenset({"layer_norm", "gelu"}), frozenset({("matmul_biasadd", "dense/BiasAdd")}), "f"
        ),
        keep_fp32=KeepFp32(frozenset({"loss/Sum"}), "k"),
        faults=(FaultSpec("op:loss/Sum=scale:2", "op", "scale", 2.0, node="loss/Sum"),),
    ),
    verbose=True,
    quiet=True,
)

FULL_JSON: dict[str, Any] = {
    "schema": 1,
    "spec": {
        "script": "/w/train.py",
        "script_args": ["--lr", "0.1"],
        "report_dir": "/w/report",
        "options": ["precision_mode=allow_mix_precision"],
        "npu": True,
        "execution": "xla",
        "strict_options": True,
        "golden_dump": "/w/golden",
        "dump_step": "0|2",
        "profile": "/w/prof",
        "profile_steps": "1",
        "export_graph": "/w/graphs",
        "deterministic": True,
        "record": True,
        "max_steps": 3,
        "dropout_off": True,
        "engine": {
            "fusion": {
                "rules_off": ["gelu", "layer_norm"],
                "instances_off": [["matmul_biasadd", "dense/BiasAdd"]],
                "source": "f",
            },
            "keep_fp32": {"nodes": ["loss/Sum"], "source": "k"},
            "faults": [
                {"text": "op:loss/Sum=scale:2", "target": "op", "kind": "scale", "value": 2.0,
                 "rule": "", "root": "", "node": "loss/Sum"}
            ],
        },
        "verbose": True,
        "quiet": True,
    },
}  # fmt: skip

MINIMAL = RunSpec(Path("/w/t.py"), (), Path("/w/r"), (), False, "host")


def test_a_full_spec_encodes_to_the_literal_json_and_back() -> None:
    assert FULL.to_json() == FULL_JSON
    assert RunSpec.from_json(json.loads(json.dumps(FULL_JSON))) == FULL


def test_a_default_spec_round_trips_with_nulls_and_empty_lists() -> None:
    data = MINIMAL.to_json()
    assert data["spec"]["golden_dump"] is None
    assert data["spec"]["max_steps"] is None
    assert data["spec"]["engine"] == {
        "fusion": {"rules_off": [], "instances_off": [], "source": ""},
        "keep_fp32": {"nodes": [], "source": ""},
        "faults": [],
    }
    assert RunSpec.from_json(data) == MINIMAL


def test_every_field_of_the_spec_is_in_the_file_and_changes_what_comes_back() -> None:
    """No field is left out of the format: each one of FULL differs from MINIMAL's and
    survives the trip."""
    names = [f.name for f in dataclasses.fields(RunSpec)]
    assert list(FULL_JSON["spec"]) == names
    for name in names:
        assert getattr(FULL, name) != getattr(MINIMAL, name), name
        one = dataclasses.replace(MINIMAL, **{name: getattr(FULL, name)})
        assert RunSpec.from_json(json.loads(json.dumps(one.to_json()))) == one, name


def test_write_and_read_a_spec_file(tmp_path: Path) -> None:
    path = tmp_path / run_spec.SPEC_FILE
    run_spec.write(path, FULL)
    assert json.loads(path.read_text()) == FULL_JSON
    assert run_spec.read(RunSpec, path) == FULL


def test_a_nan_fault_reads_back_equal(tmp_path: Path) -> None:
    nan = FaultSpec("op:loss/Sum=nan", "op", "nan", float("nan"), node="loss/Sum")
    spec = dataclasses.replace(FULL, engine=EngineOverrides(faults=(nan,)))
    path = tmp_path / run_spec.SPEC_FILE
    run_spec.write(path, spec)
    assert '"value": NaN' in path.read_text()
    assert run_spec.read(RunSpec, path) == spec


def _spec(**changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(FULL_JSON))
    data["spec"].update(changes)
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"schema": 2, "spec": {}},
            "run_spec.json: schema = 2 is not 1, the only schema this tf2npu reads; write the "
            "file with RunSpec.to_json() (tf2npu writes it for every child run) with this tf2npu",
        ),
        (
            [],
            "run_spec.json: expected {'schema': 1, 'spec': {...}}, got keys list; write the file "
            "with RunSpec.to_json() (tf2npu writes it for every child run)",
        ),
        (
            _spec(dump="/x"),
            "run_spec.json: spec: unknown key 'dump' (= '/x'); the keys are ",
        ),
        (
            _spec(max_steps="3"),
            "run_spec.json: spec.max_steps = '3' is not a int; write the file with "
            "RunSpec.to_json()",
        ),
        (_spec(npu=1), "run_spec.json: spec.npu = 1 is not a bool;"),
        (_spec(max_steps=True), "run_spec.json: spec.max_steps = True is not an integer;"),
        (_spec(script=None), "run_spec.json: spec.script = None is not a path as a string;"),
        (_spec(options="a=b"), "run_spec.json: spec.options = 'a=b' is not a list;"),
        (
            _spec(engine={"fusion": {"rules_off": [], "instances_off": [["a"]], "source": ""},
                          "keep_fp32": {"nodes": [], "source": ""}, "faults": []}),
            "run_spec.json: spec.engine.fusion.instances_off[0] = ['a'] is not a list of 2 items;",
        ),
    ],
)  # fmt: skip
def test_a_bad_spec_names_the_key_the_value_and_the_fix(data: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RunSpec.from_json(data)
    assert str(caught.value).startswith(message)


def test_a_missing_key_is_named() -> None:
    data = _spec()
    del data["spec"]["quiet"]
    with pytest.raises(ConfigError, match=r"^run_spec.json: spec: key 'quiet' is missing; write"):
        RunSpec.from_json(data)


def test_an_unreadable_or_non_json_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    with pytest.raises(ConfigError, match=r"s.json'\: cannot read it: No such file"):
        run_spec.read(RunSpec, path)
    path.write_text("{")
    with pytest.raises(ConfigError, match=r"s.json' is not JSON \("):
        run_spec.read(RunSpec, path)

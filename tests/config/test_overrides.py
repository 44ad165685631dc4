"""Trial overrides: the fusion-instance file and the keep-float32 file, parsed and refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tf2npu.config.overrides import EngineOverrides, FusionOverride, KeepFp32
from tf2npu.errors import ConfigError, UnknownNameError

RULES = {
    "matmul_biasadd": ("GraphFusion", ("MatMulBiasAddFusionPass",)),
    "layer_norm": ("UBFusion", ("LayerNormFusionPass",)),
}


def fusion(data: object) -> FusionOverride:
    return FusionOverride.from_json(data, RULES, "off.json")


def test_whole_rules_and_single_instances_by_name_or_alias() -> None:
    override = fusion(
        {"off": [{"rule": "LayerNormFusionPass"}, {"rule": "matmul_biasadd", "root": "d/add"}]}
    )
    assert override.rules_off == {"layer_norm"}
    assert override.instances_off == {("matmul_biasadd", "d/add")}
    assert not override.allows("layer_norm", "anything")
    assert not override.allows("matmul_biasadd", "d/add")
    assert override.allows("matmul_biasadd", "d2/add")
    assert override and not FusionOverride() and not fusion({"off": []})


def test_an_unknown_rule_names_the_closest() -> None:
    with pytest.raises(UnknownNameError, match=r"^off.json: unknown fusion rule 'matmul_bias'; "
                       r"did you mean 'matmul_biasadd'\?"):  # fmt: skip
        fusion({"off": [{"rule": "matmul_bias"}]})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], r'expected \{"off": \[\{"rule"'),
        ({"off": {}}, r'expected \{"off"'),
        ({"off": [], "on": []}, r'expected \{"off"'),
        ({"off": ["layer_norm"]}, r"off\[0\] = 'layer_norm' is not valid; give \{\"rule\""),
        ({"off": [{"root": "a"}]}, r"off\[0\] = .* is not valid"),
        ({"off": [{"rule": "layer_norm", "roots": "a"}]}, r"off\[0\] = .* is not valid"),
        ({"off": [{"rule": 3}]}, r"off\[0\]: rule = 3 must be a rule name"),
        ({"off": [{"rule": "layer_norm", "root": ""}]}, r"off\[0\]: root = '' must be a node"),
    ],
)
def test_a_wrong_shape_is_refused_with_the_expected_shape(data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        fusion(data)


def test_load_names_the_option_in_errors(tmp_path: Path) -> None:
    path = tmp_path / "off.json"
    path.write_text(json.dumps({"off": [{"rule": "layer_norm", "root": "ln/add"}]}))
    loaded = FusionOverride.load(path, RULES, "--fusion-instances")
    assert loaded.instances_off == {("layer_norm", "ln/add")}
    assert loaded.source == f"--fusion-instances file {str(path)!r}"
    with pytest.raises(ConfigError, match=r"^TF2NPU_FUSION_INSTANCES = .*cannot read the file"):
        FusionOverride.load(tmp_path / "missing.json", RULES, "TF2NPU_FUSION_INSTANCES")


def test_keep_fp32_nodes() -> None:
    keep = KeepFp32.from_json({"nodes": ["loss/Sum", "dense/MatMul"]}, "keep.json")
    assert keep.nodes == {"loss/Sum", "dense/MatMul"} and keep
    assert not KeepFp32.from_json({"nodes": []}, "keep.json")
    assert not EngineOverrides() and EngineOverrides(keep_fp32=keep)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (["a"], r'^keep.json: expected \{"nodes": \["<node name>", ...\]\}, got \[\'a\'\]'),
        ({"nodes": "a"}, r"expected"),
        ({"nodes": ["a", 1]}, r"^keep.json: nodes\[1\] = 1 is not a node name"),
    ],
)
def test_keep_fp32_refuses_a_wrong_shape(data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        KeepFp32.from_json(data, "keep.json")

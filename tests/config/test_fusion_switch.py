"""fusion_switch_file in the vendor's format."""

import json

import pytest

from tf2npu.config import fusion_switch
from tf2npu.config.fusion_switch import FusionSwitch
from tf2npu.errors import ConfigError, UnknownNameError

RULES = {
    "matmul_biasadd": ("GraphFusion", ("MatMulBiasAddFusionPass",)),
    "conv2d_biasadd": ("GraphFusion", ("ConvBiasAddFusionPass",)),
    "tanh_gelu": ("GraphFusion", ()),
    "conv2d_relu_ub": ("UBFusion", ("TbeConvReluFusionPass",)),
}


def switch(data):
    return FusionSwitch.parse(json.dumps(data), RULES)


@pytest.fixture(autouse=True)
def _warnings_not_yet_given():
    fusion_switch._note_foreign.cache_clear()


def test_all_off_with_single_rule_on():
    result = switch({"Switch": {"GraphFusion": {"ALL": "off", "tanh_gelu": "on"}}})
    assert result.disabled == {"matmul_biasadd", "conv2d_biasadd"}
    assert result.enabled("tanh_gelu") and result.enabled("conv2d_relu_ub")
    assert not result.enabled("matmul_biasadd")


def test_single_rule_overrides_all_whatever_the_key_order():
    data = json.loads('{"Switch": {"GraphFusion": {"tanh_gelu": "on", "ALL": "OFF"}}}')
    assert FusionSwitch.from_json(data, RULES, "f").enabled("tanh_gelu")


def test_aliases_and_case_insensitive_values():
    result = switch(
        {"Switch": {"GraphFusion": {"MatMulBiasAddFusionPass": "Off"}, "UBFusion": {"ALL": "off"}}}
    )
    assert result.disabled == {"matmul_biasadd", "conv2d_relu_ub"}


def test_all_on_and_empty_categories():
    assert FusionSwitch.all_on(RULES).disabled == frozenset()
    assert switch({"Switch": {}}).disabled == frozenset()


def test_load_from_file(tmp_path):
    path = tmp_path / "fusion_switch.cfg"
    path.write_text('{"Switch": {"UBFusion": {"TbeConvReluFusionPass": "off"}}}', encoding="utf-8")
    assert FusionSwitch.load(path, RULES).disabled == {"conv2d_relu_ub"}


def test_enabled_unknown_rule():
    with pytest.raises(UnknownNameError, match=r"^unknown fusion rule 'tanh'"):
        FusionSwitch.all_on(RULES).enabled("tanh")


def test_bad_json():
    with pytest.raises(ConfigError, match=r"^f: invalid JSON at line 1, column 12"):
        FusionSwitch.parse('{"Switch": }', RULES, "f")


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        (
            {"GraphFusion": {}},
            ConfigError,
            'expected {"Switch": {"GraphFusion": {...}, "UBFusion": {...}}}, got {\'GraphFusion\': {}}',
        ),
        ({"Switch": []}, ConfigError, 'expected {"Switch"'),
        (
            {"Switch": {"GraphFusions": {}}},
            UnknownNameError,
            "unknown fusion category name 'GraphFusions'; did you mean 'GraphFusion'? The valid ones are: GraphFusion, UBFusion",
        ),
        (
            {"Switch": {"UBFusion": "off"}},
            ConfigError,
            'Switch.UBFusion must be an object like {"ALL": "off"}, got \'off\'',
        ),
        (
            {"Switch": {"GraphFusion": {"matmul_bias": "off"}}},
            UnknownNameError,
            "did you mean 'matmul_biasadd'?",
        ),
        (
            {"Switch": {"GraphFusion": {"ALL": "disabled"}}},
            ConfigError,
            'GraphFusion.ALL = \'disabled\' is not valid; use "on" or "off"',
        ),
        (
            {"Switch": {"GraphFusion": {"tanh_gelu": False}}},
            ConfigError,
            "GraphFusion.tanh_gelu = False is not valid",
        ),
        (
            {"Switch": {"GraphFusion": {"conv2d_relu_ub": "off"}}},
            ConfigError,
            "rule 'conv2d_relu_ub' is listed under GraphFusion but is a UBFusion rule; move it under UBFusion",
        ),
        (
            {"Switch": {"GraphFusion": {"matmul_biasadd": "off", "MatMulBiasAddFusionPass": "on"}}},
            ConfigError,
            "rule 'matmul_biasadd' is switched both on and off ('matmul_biasadd' and 'MatMulBiasAddFusionPass'); keep one entry",
        ),
    ],
)
def test_errors(data, error, message):
    with pytest.raises(error) as err:
        switch(data)
    assert message in str(err.value)


def test_unknown_rule_lists_names_and_aliases():
    with pytest.raises(UnknownNameError) as err:
        switch({"Switch": {"GraphFusion": {"Nope": "off"}}})
    assert (
        "ConvBiasAddFusionPass, MatMulBiasAddFusionPass, TbeConvReluFusionPass, conv2d_biasadd"
        in str(err.value)
    )


def test_precision_tools_shipped_switch_files():
    """fusion_off.cfg turns every rule off, the fusion_switch.cfg template none."""
    from tf2npu.compat.shims.precision_tool import _config
    from tf2npu.graph.fusion import known_rules

    rules = known_rules()
    assert FusionSwitch.load(_config.FUSION_OFF_FILE, rules).disabled == set(rules)
    assert FusionSwitch.load(_config.FUSION_SWITCH_FILE, rules).disabled == frozenset()


def test_ascend_passes_we_do_not_implement_are_accepted_and_named(caplog):
    data = {
        "Switch": {
            "GraphFusion": {"ConvToFullyConnectionFusionPass": "off", "matmul_biasadd": "off"},
            "UBFusion": {"TbePool2dQuantFusionPass": "off"},
        }
    }
    result = switch(data)
    assert result.disabled == {"matmul_biasadd"}
    assert result.not_implemented == ("ConvToFullyConnectionFusionPass", "TbePool2dQuantFusionPass")
    assert (
        "switches Ascend passes tf2npu does not implement: ConvToFullyConnectionFusionPass, "
        "TbePool2dQuantFusionPass; they have no effect here" in caplog.text
    )


def test_ascend_names_ending_in_fusion_or_switch_are_accepted_too(caplog):
    # Real switch files (a ModelZoo ResUNet++ copy of precision_tool, the reference's lists)
    # name passes without the "Pass" suffix; they failed the run here before.
    data = {
        "Switch": {
            "GraphFusion": {"ConstToAttrReduceSumFusion": "off"},
            "UBFusion": {"AutomaticUbFusion": "off", "FusionVirtualOpSetSwitch": "off"},
        }
    }
    result = switch(data)
    assert result.disabled == frozenset()
    assert result.not_implemented == (
        "ConstToAttrReduceSumFusion",
        "AutomaticUbFusion",
        "FusionVirtualOpSetSwitch",
    )
    assert (
        "does not implement: ConstToAttrReduceSumFusion, AutomaticUbFusion, "
        "FusionVirtualOpSetSwitch; they have no effect here" in caplog.text
    )


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("MatMulBiasAddFusion", "did you mean 'MatMulBiasAddFusionPass'?"),  # ...Fusion, ours
        ("MatMulBiasAddFusionPas", "did you mean 'MatMulBiasAddFusionPass'?"),  # not ...Pass
        ("MatMulBiasAdFusionPass", "did you mean 'MatMulBiasAddFusionPass'?"),  # a typo of ours
        ("conv_to_fc", "unknown fusion rule 'conv_to_fc'"),  # not Ascend's spelling
    ],
)
def test_typos_of_our_names_are_still_errors(key, message):
    with pytest.raises(UnknownNameError, match=message):
        switch({"Switch": {"GraphFusion": {key: "off"}}})


def test_a_foreign_pass_still_needs_on_or_off():
    with pytest.raises(ConfigError, match="ConvToFullyConnectionFusionPass = 0 is not valid"):
        switch({"Switch": {"GraphFusion": {"ConvToFullyConnectionFusionPass": 0}}})


def test_passes_without_effect_are_named_once_per_file(caplog):
    # Every compile reads the file again: a Keras script (ResUNet++ in ModelZoo) compiled 8
    # graphs and repeated the same line 8 times.
    data = {"Switch": {"UBFusion": {"TbeEltwiseFusionPass": "off"}}}
    for _ in range(3):
        FusionSwitch.from_json(data, RULES, "a.cfg")
    FusionSwitch.from_json(data, RULES, "b.cfg")
    lines = [r.getMessage() for r in caplog.records]
    assert [line.split(" switches")[0] for line in lines] == ["a.cfg", "b.cfg"]


def test_allows_combines_the_file_and_a_trial_override() -> None:
    from tf2npu.config.overrides import FusionOverride

    rules = {"a_rule": ("GraphFusion", ()), "b_rule": ("GraphFusion", ())}
    switch = FusionSwitch.parse('{"Switch": {"GraphFusion": {"b_rule": "off"}}}', rules)
    assert switch.allows("a_rule", "x") and not switch.allows("b_rule", "x")
    trial = switch.with_override(FusionOverride(instances_off=frozenset({("a_rule", "x")})))
    assert not trial.allows("a_rule", "x") and trial.allows("a_rule", "y")
    assert not trial.allows("b_rule", "y")  # the file's "off" stays off
    assert trial.states == switch.states  # the file's own view is unchanged

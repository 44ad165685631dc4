"""precision_tool's action strings and the settings each one selects."""

import json

import pytest

from tf2npu.compat.shims.precision_tool import _actions, _config
from tf2npu.compat.shims.precision_tool._actions import Action
from tf2npu.errors import UsageError

SHIMS = _config.PACKAGE_DIR
NO_ENV: dict[str, str] = {}

DEBUG_DIR = {"debug_dir": "precision_data/npu/debug_0"}
DUMP = {
    "debug_dir": "precision_data/npu/debug_0",
    "enable_dump": True,
    "dump_mode": "all",
    "dump_path": "precision_data/npu/debug_0/dump",
    "op_debug_level": 4,
    "dump_step": "0",
}
OVERFLOW = {
    "debug_dir": "precision_data/npu/debug_0",
    "enable_dump_debug": True,
    "dump_debug_mode": "all",
    "dump_path": "precision_data/overflow/dump",
    "op_debug_level": 4,
}
PROFILING_OPTIONS = (
    '{"output": "precision_data/npu/debug_0/prof", "storage_limit": "1000MB", '
    '"training_trace": "on", "l2": "on", "hccl": "on", "task_trace": "on", "aicpu": "on", '
    '"fp_point": "", "bp_point": "", "aic_metrics": "PipeUtilization", "msproftx": "on"}'
)
FUSION_OFF = str(SHIMS / "fusion_off.cfg")
FUSION_SWITCH = str(SHIMS / "fusion_switch.cfg")


def flags(action: Action) -> tuple[bool, bool, bool, bool, bool]:
    return (action.overflow, action.dump, action.fusion_off, action.fusion_switch, action.prof)


# -- parsing --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", (False, False, False, False, False)),
        ("dump", (False, True, False, False, False)),
        ("overflow", (True, False, False, False, False)),
        ("fusion_off", (False, False, True, False, False)),
        ("fusion_switch", (False, False, False, True, False)),
        ("prof", (False, False, False, False, True)),
        ("dump|fusion_off", (False, True, True, False, False)),
        ("fusion_off|dump", (False, True, True, False, False)),
        ("dump | fusion_off", (False, True, True, False, False)),
        ("dump|fusion_switch", (False, True, False, True, False)),
        ("overflow|fusion_off", (True, False, True, False, False)),
        ("dump_fusion_off_prof", (False, True, True, False, True)),  # substrings, any separator
        ("profiling", (False, False, False, False, True)),
    ],
)
def test_tokens_are_found_as_substrings(text, expected):
    assert flags(Action.parse(text, NO_ENV)) == expected


def test_overflow_wins_over_dump_and_fusion_off_over_fusion_switch():
    parsed = Action.parse("dump|overflow|fusion_switch|fusion_off", NO_ENV)
    assert flags(parsed) == (True, False, True, False, False)
    assert parsed.notes == (
        "tf2npu: precision_tool action 'dump|overflow|fusion_switch|fusion_off': overflow wins "
        "over dump, which is not applied (as in precision_tool)",
        "tf2npu: precision_tool action 'dump|overflow|fusion_switch|fusion_off': fusion_off "
        "wins over fusion_switch, which is not applied (as in precision_tool)",
    )


def test_a_word_that_is_no_action_is_ignored_with_a_note():
    parsed = Action.parse("dump|fusion-off", NO_ENV)
    assert flags(parsed) == (False, True, False, False, False)
    assert parsed.notes == (
        "tf2npu: precision_tool action 'dump|fusion-off': 'fusion-off' is no action and is "
        "ignored, as precision_tool ignores it; the actions are overflow, dump, fusion_off, "
        "fusion_switch, prof",
    )
    assert parsed.messages == ()


def test_known_actions_give_no_notes():
    assert Action.parse("dump | fusion_off", NO_ENV).notes == ()


@pytest.mark.parametrize(
    ("env", "expected", "messages"),
    [
        ({}, (False, False, False, False, False), ()),
        ({"PRECISION_TOOL_DUMP": "True"}, (False, True, False, False, False),
         ("[PrecisionTool] enable npu dump >======",)),
        ({"PRECISION_TOOL_OVERFLOW": "True"}, (True, False, False, False, False),
         ("[PrecisionTool] enable npu overflow >======",)),
        ({"PRECISION_TOOL_DUMP": "True", "PRECISION_TOOL_OVERFLOW": "True"},
         (True, False, False, False, False), ("[PrecisionTool] enable npu overflow >======",)),
        ({"PRECISION_TOOL_DUMP": "true", "PRECISION_TOOL_OVERFLOW": "1"},
         (False, False, False, False, False), ()),  # exactly 'True', as the real tool tests
    ],
)  # fmt: skip
def test_no_action_reads_the_environment(env, expected, messages):
    parsed = Action.parse(None, env)
    assert flags(parsed) == expected
    assert parsed.messages == messages


def test_an_action_string_ignores_the_environment():
    env = {"PRECISION_TOOL_DUMP": "True", "PRECISION_TOOL_OVERFLOW": "True"}
    assert flags(Action.parse("", env)) == (False, False, False, False, False)
    assert flags(Action.parse("fusion_off", env)) == (False, False, True, False, False)


@pytest.mark.parametrize("bad", [["dump"], b"dump", 1])
def test_an_action_that_is_not_a_string_is_a_usage_error(bad):
    with pytest.raises(UsageError, match=r"^precision_tool action=.* is not a string; give the "
                                         r"actions in one string, e.g. action='dump\|fusion_off'"):  # fmt: skip
        Action.parse(bad, NO_ENV)


# -- settings -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", DEBUG_DIR),
        ("dump", DUMP),
        ("overflow", OVERFLOW),
        ("overflow|dump", OVERFLOW),
        ("fusion_off", {**DEBUG_DIR, "fusion_switch_file": FUSION_OFF}),
        ("fusion_switch", {**DEBUG_DIR, "fusion_switch_file": FUSION_SWITCH}),
        ("fusion_switch|fusion_off", {**DEBUG_DIR, "fusion_switch_file": FUSION_OFF}),
        ("dump|fusion_off", {**DUMP, "fusion_switch_file": FUSION_OFF}),
        ("prof", {**DEBUG_DIR, "profiling_mode": True, "profiling_options": PROFILING_OPTIONS}),
    ],
)
def test_custom_op_settings(text, expected):
    settings = _actions.custom_op_settings(Action.parse(text, NO_ENV))
    assert settings == expected
    assert list(settings) == list(expected)  # the order the real tool writes them


def test_the_switch_files_are_absolute_paths_of_the_shipped_files():
    assert FUSION_OFF.startswith("/") and FUSION_OFF.endswith("precision_tool/fusion_off.cfg")
    assert json.loads((SHIMS / "fusion_off.cfg").read_text()) == {
        "Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}
    }
    assert json.loads((SHIMS / "fusion_switch.cfg").read_text()) == {
        "Switch": {"GraphFusion": {}, "UBFusion": {}}
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("fusion_off|prof", {}),
        ("overflow", {"enable_dump_debug": True, "dump_path": "precision_data/overflow/dump",
                      "dump_mode": "all"}),
        ("dump", {"enable_dump": True, "dump_path": "precision_data/npu/debug_0/dump",
                  "dump_step": "0", "dump_mode": "all"}),
        ("dump|overflow", {"enable_dump_debug": True, "dump_path": "precision_data/overflow/dump",
                           "dump_mode": "all"}),
    ],
)  # fmt: skip
def test_dump_config_args(text, expected):
    assert _actions.dump_config_args(Action.parse(text, NO_ENV)) == expected


def test_estimator_notes_name_what_estimator_dump_config_ignores():
    assert _actions.estimator_notes(Action.parse("dump", NO_ENV)) == ()
    assert _actions.estimator_notes(Action.parse("dump|fusion_off|prof", NO_ENV)) == (
        "tf2npu: precision_tool: estimator_dump_config ignores 'fusion_off' (as precision_tool "
        "does); pass NPURunConfig(fusion_switch_file=npu_tf_config.FUSION_OFF_FILE)",
        "tf2npu: precision_tool: estimator_dump_config ignores 'prof' (as precision_tool does); "
        "pass NPURunConfig(profiling_config=ProfilingConfig(enable_profiling=True, ...))",
    )


def test_switch_file_note_only_for_a_file_that_switches_nothing(tmp_path):
    note = _actions.switch_file_note(FUSION_SWITCH)
    assert note is not None
    assert note.startswith(f"tf2npu: precision_tool: {FUSION_SWITCH} switches no fusion pass")
    assert "edit it to" not in note and "do not edit it" in note  # it is inside our install
    assert 'NPURunConfig(fusion_switch_file="fusion_switch.cfg")' in note
    assert 'parameter_map["fusion_switch_file"].s = tf.compat.as_bytes("fusion_switch.cfg")' in note
    assert "tf2npu run --fusion-switch-file fusion_switch.cfg" in note
    assert _actions.switch_file_note(FUSION_OFF) is None
    edited = tmp_path / "edited.cfg"
    edited.write_text('{"Switch": {"GraphFusion": {"matmul_biasadd": "off"}, "UBFusion": {}}}')
    assert _actions.switch_file_note(str(edited)) is None


@pytest.mark.parametrize("text", ["{not json", '["Switch"]', '{"Other": {}}', '{"Switch": 1}'])
def test_switch_file_note_leaves_bad_files_to_the_session(tmp_path, text):
    bad = tmp_path / "bad.cfg"
    bad.write_text(text)
    assert _actions.switch_file_note(str(bad)) is None
    assert _actions.switch_file_note(str(tmp_path / "missing.cfg")) is None

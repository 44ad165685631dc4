"""One home per fact: each shared fact is declared once, and the copies that must exist agree.

The table of homes is in docs/design.md ("One home per fact"); each row a test here holds.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tf2npu
from tf2npu.config import env
from tf2npu.config.options import PRECISION_MODES, PRECISION_MODES_V2

SRC = Path(tf2npu.__file__).parent
_ENV_NAME = re.compile(r"TF2NPU_[A-Z0-9_]+")


def _string_constants(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_tf2npu_variables_are_named_only_in_config_env() -> None:
    home = SRC / "config" / "env.py"
    elsewhere = [
        f"{path.relative_to(SRC)}:{line}: {value}"
        for path in sorted(SRC.rglob("*.py"))
        if path != home
        for line, value in _string_constants(path)
        if _ENV_NAME.fullmatch(value)
    ]
    assert elsewhere == [], "import the name from tf2npu.config.env instead"


def test_every_tf2npu_variable_is_in_the_table_of_config_env() -> None:
    names = {getattr(env, n) for n in env.__all__}
    assert all(_ENV_NAME.fullmatch(n) for n in names)
    assert len(names) == len(env.__all__), "two constants name one variable"
    doc = env.__doc__ or ""
    assert sorted(n for n in names if f"``{n}" not in doc) == []


def test_the_engine_knows_a_policy_for_exactly_the_precision_modes_the_options_accept() -> None:
    from tf2npu.graph.precision.modes import MODES

    accepted = set(PRECISION_MODES) | set(PRECISION_MODES_V2)
    assert sorted(set(MODES) - accepted) == []
    assert sorted(accepted - set(MODES)) == []


def test_shared_cli_flags_are_declared_once() -> None:
    """``--option`` (and the shorthands) are declared in cli/npu_flags.py only; commands that
    start NPU sessions call ``add_option_flag`` / ``add_shorthands``. ``migrate``'s flags of the
    same names are another thing: they write the option into the migrated source."""
    shared = {"--option", "--precision-mode", "--mix-compile", "--fusion-switch-file"}
    shared.add("--modify-mixlist")
    declared: dict[str, list[str]] = {}
    for path in sorted((SRC / "cli").glob("*.py")):
        if path.name == "migrate.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr != "add_argument" or not node.args:
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and first.value in shared:
                declared.setdefault(first.value, []).append(path.name)
    assert declared == {"--option": ["npu_flags.py"]}


def test_run_config_arguments_have_one_home_that_npu_run_config_and_tf_agree_with() -> None:
    import inspect

    import tensorflow as tf

    from npu_bridge.estimator.npu.npu_config import NPURunConfig
    from tf2npu.config.run_config import (
        NOT_IN_NPU_RUN_CONFIG,
        NPU_RUN_CONFIG_PASSES,
        RUN_CONFIG_PARAMS,
    )

    ours = set(inspect.signature(NPURunConfig.__init__).parameters)
    tfs = set(inspect.signature(tf.estimator.RunConfig.__init__).parameters)
    assert sorted(set(RUN_CONFIG_PARAMS) - tfs) == []
    assert sorted(set(NPU_RUN_CONFIG_PASSES) - ours) == []
    assert sorted(NOT_IN_NPU_RUN_CONFIG & ours) == []
    assert sorted(NOT_IN_NPU_RUN_CONFIG - tfs) == []


def test_tf_dtype_numbers_are_spelled_only_in_tf2npu_dtypes() -> None:
    """No module assigns a ``DT_*`` number of its own; they import :mod:`tf2npu.dtypes`."""
    home = SRC / "dtypes.py"
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path == home:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if any(re.fullmatch(r"_?DT_[A-Z0-9_]+|_?REF_OFFSET", n) for n in names):
                found.append(f"{path.relative_to(SRC)}:{node.lineno}: {names[0]}")
    assert found == []


def test_the_dtype_table_agrees_with_tensorflow() -> None:
    import tensorflow as tf

    from tf2npu.dtypes import DTYPES, REF_OFFSET

    for number, dtype in DTYPES.items():
        tf_dtype = tf.dtypes.as_dtype(number)
        assert tf_dtype.as_datatype_enum == number
        assert tf.dtypes.as_dtype(number + REF_OFFSET).base_dtype == tf_dtype
        if dtype.numpy:
            assert tf_dtype.name == dtype.numpy
            assert tf_dtype.size == dtype.itemsize

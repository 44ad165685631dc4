"""``precision_tool`` from tf2npu only when nothing on ``sys.path`` provides it."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from tf2npu.compat.shims import fallback
from tf2npu.runtime.script import run_script

OURS = fallback.SHIMS_DIR / "precision_tool"
EXE = Path(sys.executable).parent / "tf2npu"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def real_copy(where: Path) -> Path:
    """A stand-in for the user's copy of the real tool (TF-free, so in-process tests stay cheap)."""
    write(where / "precision_tool" / "__init__.py", "WHO = 'real'\n")
    write(where / "precision_tool" / "tf_config.py", "FUSION_OFF_FILE = 'the real one'\n")
    return where


@pytest.fixture(autouse=True)
def _no_precision_tool_left_behind():
    yield
    for name in [n for n in sys.modules if n.partition(".")[0] == "precision_tool"]:
        del sys.modules[name]
    importlib.invalidate_caches()


def test_ours_is_found_when_nothing_else_provides_it():
    meta_path = list(sys.meta_path)
    with fallback.fallback_imports():
        import precision_tool

        assert Path(precision_tool.__file__).parent == OURS
        assert sys.meta_path[-1].__class__ is fallback.FallbackFinder
    assert "precision_tool" not in sys.modules  # a later script finds its own copy again
    assert sys.meta_path == meta_path


def test_without_the_context_it_is_not_importable():
    with pytest.raises(ModuleNotFoundError, match="precision_tool"):
        import precision_tool  # noqa: F401


def test_a_real_copy_on_sys_path_wins_and_stays_imported(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(real_copy(tmp_path)))
    with fallback.fallback_imports():
        import precision_tool.tf_config

        assert precision_tool.WHO == "real"
        assert precision_tool.tf_config.FUSION_OFF_FILE == "the real one"
    assert sys.modules["precision_tool"] is precision_tool  # the user's module is not ours


def test_a_real_copy_added_to_the_end_of_sys_path_later_still_wins(tmp_path, monkeypatch):
    with fallback.fallback_imports():
        monkeypatch.setattr(sys, "path", [*sys.path, str(real_copy(tmp_path))])
        import precision_tool

        assert precision_tool.WHO == "real"


@pytest.mark.parametrize(
    ("name", "path"), [("other", None), ("precision_tool.tf_config", [str(OURS)])]
)
def test_only_the_top_level_package_is_served(name, path):
    assert fallback.FallbackFinder().find_spec(name, path) is None


def test_run_script_serves_ours_only_while_the_script_runs(tmp_path, capsys):
    script = write(
        tmp_path / "a" / "t.py", "import precision_tool\nprint(precision_tool.__file__)\n"
    )
    assert run_script(script, []).status == 0
    assert capsys.readouterr().out == f"{OURS / '__init__.py'}\n"
    assert "precision_tool" not in sys.modules
    assert not any(isinstance(f, fallback.FallbackFinder) for f in sys.meta_path)


def test_run_script_prefers_the_copy_beside_the_script(tmp_path, capsys):
    script = write(
        real_copy(tmp_path / "b") / "t.py", "import precision_tool\nprint(precision_tool.WHO)\n"
    )
    assert run_script(script, []).status == 0
    assert capsys.readouterr().out == "real\n"


def test_a_failing_script_still_removes_the_finder(tmp_path, capsys):
    script = write(tmp_path / "t.py", "import precision_tool\nraise SystemExit(3)\n")
    assert run_script(script, []).status == 3
    assert "precision_tool" not in sys.modules
    assert not any(isinstance(f, fallback.FallbackFinder) for f in sys.meta_path)


SHOW = """\
import precision_tool.tf_config as npu_tf_config
print("FUSION_OFF_FILE", npu_tf_config.FUSION_OFF_FILE)
"""


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("with_copy", [True, False])
def test_tf2npu_run_end_to_end(tmp_path, with_copy):
    if with_copy:
        real_copy(tmp_path)
    write(tmp_path / "train.py", SHOW)
    done = subprocess.run([str(EXE), "run", "--quiet", "train.py"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    expected = "the real one" if with_copy else str(OURS / "fusion_off.cfg")
    assert f"FUSION_OFF_FILE {expected}\n" in done.stdout
    assert (
        "[PrecisionTool] Set Tensorflow random seed to 2022 success." in done.stdout
    ) != with_copy


def test_the_finder_and_the_settings_import_without_tensorflow():
    code = (
        "import sys\n"
        "import tf2npu.compat.shims.fallback\n"
        "import tf2npu.compat.shims.precision_tool._actions\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tensorflow'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"

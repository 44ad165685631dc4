"""``run_script``: a script runs in this process as ``python SCRIPT ARGS`` would run it."""

import sys
from pathlib import Path

import pytest

from tf2npu.runtime.script import run_script


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_argv_path_and_main_name_are_as_python_gives_them(tmp_path, capsys):
    script = write(
        tmp_path / "sub" / "show.py",
        "import sys\nprint(sys.argv)\nprint(sys.path[0])\nprint(__name__, __file__)\n",
    )
    argv_before, path_before = sys.argv, list(sys.path)
    assert run_script(script, ["--epochs", "1", "--", "-x"]).status == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        repr([str(script), "--epochs", "1", "--", "-x"]),
        str(tmp_path / "sub"),
        f"__main__ {script}",
    ]
    assert sys.argv is argv_before
    assert sys.path == path_before


def test_script_imports_modules_beside_it(tmp_path, capsys):
    write(tmp_path / "helper_for_run_cli.py", "VALUE = 41\n")
    script = write(
        tmp_path / "main.py", "import helper_for_run_cli\nprint(helper_for_run_cli.VALUE + 1)\n"
    )
    try:
        assert run_script(script, []).status == 0
    finally:
        sys.modules.pop("helper_for_run_cli", None)
    assert capsys.readouterr().out == "42\n"


def test_script_changes_to_sys_path_and_argv_are_undone(tmp_path):
    script = write(tmp_path / "t.py", "import sys\nsys.path.insert(0, '/nowhere')\nsys.argv = []\n")
    argv_before, path_before, main_before = sys.argv, list(sys.path), sys.modules["__main__"]
    assert run_script(script, []).status == 0
    assert sys.argv is argv_before and sys.path == path_before
    assert sys.modules["__main__"] is main_before


def test_script_is_main_while_it_runs(tmp_path, capsys):
    script = write(
        tmp_path / "t.py",
        "import pickle, sys\nclass Point:\n    pass\n"
        "print(sys.modules['__main__'].Point is Point)\n"
        "print(type(pickle.loads(pickle.dumps(Point()))).__name__)\n",
    )
    assert run_script(script, []).status == 0
    assert capsys.readouterr().out == "True\nPoint\n"


def test_coding_cookie_is_honoured(tmp_path, capsys):
    script = tmp_path / "t.py"
    script.write_bytes("# -*- coding: latin-1 -*-\nprint('caf\u00e9')\n".encode("latin-1"))
    assert run_script(script, []).status == 0
    assert capsys.readouterr().out == "caf\u00e9\n"


@pytest.mark.parametrize(
    ("body", "status", "stderr"),
    [
        ("raise SystemExit", 0, ""),
        ("sys.exit(0)", 0, ""),
        ("sys.exit(3)", 3, ""),
        ("sys.exit(True)", 1, ""),
        ("sys.exit('bad data dir')", 1, "bad data dir\n"),
        ("exit(7)", 7, ""),
    ],
)
def test_system_exit_gives_the_status_python_gives(tmp_path, capsys, body, status, stderr):
    script = write(tmp_path / "t.py", f"import sys\n{body}\nprint('not reached')\n")
    assert run_script(script, []).status == status
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == stderr


def test_uncaught_exception_prints_the_scripts_traceback_and_gives_1(tmp_path, capsys):
    script = write(
        tmp_path / "t.py",
        "def load(n):\n    raise ValueError(f'bad batch size {n}')\n\nload(-1)\n",
    )
    assert run_script(script, []).status == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert f'File "{script}", line 4, in <module>' in err
    assert f'File "{script}", line 2, in load' in err
    assert err.endswith("ValueError: bad batch size -1\n")
    assert err.count("File ") == 2  # nothing of tf2npu between the user and their traceback


def test_syntax_error_in_the_script_gives_1(tmp_path, capsys):
    script = write(tmp_path / "t.py", "print 'py2'\n")
    assert run_script(script, []).status == 1
    err = capsys.readouterr().err
    assert err.startswith(f"  File \"{script}\", line 1\n    print 'py2'\n")  # as python prints it
    assert "SyntaxError: Missing parentheses in call to 'print'" in err


def test_keyboard_interrupt_gives_130(tmp_path, capsys):
    script = write(tmp_path / "t.py", "raise KeyboardInterrupt\n")
    assert run_script(script, []).status == 130
    assert capsys.readouterr().err.endswith("KeyboardInterrupt\n")


def test_scripts_own_excepthook_is_called(tmp_path, capsys):
    script = write(
        tmp_path / "t.py",
        "import sys\n"
        "def hook(kind, value, tb):\n    print('hooked', kind.__name__, value)\n"
        "sys.excepthook = hook\n"
        "raise RuntimeError('boom')\n",
    )
    saved = sys.excepthook
    try:
        assert run_script(script, []).status == 1
    finally:
        sys.excepthook = saved
    assert capsys.readouterr().out == "hooked RuntimeError boom\n"


RAISES = "from tf2npu.errors import ConfigError\nraise ConfigError('bad record')\n"


def test_a_user_error_in_a_package_of_the_scripts_project_names_that_line(
    tmp_path, monkeypatch, capsys
):
    """proj/pkg/bin/train.py imports pkg.data.record with proj on PYTHONPATH (THUMT's layout):
    the error names record.py's line, not the script's import."""
    write(tmp_path / "proj" / "pkg" / "__init__.py", "")
    write(tmp_path / "proj" / "pkg" / "data" / "__init__.py", "")
    record = write(tmp_path / "proj" / "pkg" / "data" / "record_for_run.py", RAISES)
    script = write(
        tmp_path / "proj" / "pkg" / "bin" / "train.py", "import pkg.data.record_for_run\n"
    )
    # After sys.path[0], which run_script replaces with the script's folder.
    monkeypatch.setattr(sys, "path", [sys.path[0], str(tmp_path / "proj"), *sys.path[1:]])
    try:
        assert run_script(script, []).status == 2
    finally:
        for name in ("pkg", "pkg.data", "pkg.data.record_for_run"):
            sys.modules.pop(name, None)
    assert capsys.readouterr().err == f"tf2npu run: error: {record}:2: bad record\n"


def test_a_user_error_in_a_module_outside_the_project_names_the_script_line(
    tmp_path, monkeypatch, capsys
):
    """A sys.path entry beside the project, not above the script, is someone else's code."""
    write(tmp_path / "lib" / "other_for_run.py", RAISES)
    script = write(tmp_path / "proj" / "train.py", "x = 1\nimport other_for_run\n")
    monkeypatch.setattr(sys, "path", [sys.path[0], str(tmp_path / "lib"), *sys.path[1:]])
    try:
        assert run_script(script, []).status == 2
    finally:
        sys.modules.pop("other_for_run", None)
    assert capsys.readouterr().err == f"tf2npu run: error: {script}:2: bad record\n"


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("x = 1\n", None),
        ("import sys\nsys.exit(0)\n", None),
        ("import sys\nsys.exit(3)\n",
         {"kind": "exit", "type": "SystemExit", "message": "", "where": "{script}:2"}),
        ("import sys\nsys.exit('bad data dir')\n",
         {"kind": "exit", "type": "SystemExit", "message": "bad data dir", "where": "{script}:2"}),
        ("def load(n):\n    raise ValueError(f'bad batch size {n}')\n\nload(-1)\n",
         {"kind": "exception", "type": "ValueError", "message": "bad batch size -1",
          "where": "{script}:2"}),
        ("from tf2npu.errors import UsageError\nraise UsageError('no such option')\n",
         {"kind": "usage", "type": "UsageError", "message": "no such option",
          "where": "{script}:2"}),
        ("raise KeyboardInterrupt\n",
         {"kind": "interrupted", "type": "KeyboardInterrupt", "message": "",
          "where": "{script}:1"}),
        ("print 'py2'\n",
         {"kind": "exception", "type": "SyntaxError",
          "message": "Missing parentheses in call to 'print'. Did you mean print(...)? "
          "({name}, line 1)", "where": "{script}:1"}),
    ],
)  # fmt: skip
def test_how_a_script_failed_is_data(tmp_path, capsys, body, error):
    script = write(tmp_path / "t.py", body)
    end = run_script(script, [])
    if error is not None:
        error = {k: v.format(script=script, name="t.py") for k, v in error.items()}
    assert end.error == error

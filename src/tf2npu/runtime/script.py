"""Run a Python script in this process as ``python SCRIPT ARGS`` would run it.

``tf2npu run``, the multi-rank launcher and every trial of ``tf2npu bisect`` / ``verify`` run a
user's script this way: as ``__main__``, with its own ``sys.argv`` and ``sys.path[0]``, and its
exit status as ``python`` would give it. It runs in-process (not as a child ``python``) because
the runtime reaches the sessions a script builds only through process-wide hooks.
"""

from __future__ import annotations

import builtins
import importlib.machinery
import io
import os
import sys
import traceback
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from tf2npu import exit_codes
from tf2npu.errors import Tf2NpuError

__all__ = ["PYTHON_ERROR", "ScriptEnd", "run_script"]

PYTHON_ERROR = 1
"""What ``python`` exits with on an uncaught exception or ``sys.exit("message")``."""


@dataclass(frozen=True)
class ScriptEnd:
    """How a script ended: its exit status and, when it failed, why (as data)."""

    status: int
    error: dict[str, Any] | None = None
    """``run_summary.json``'s ``error`` section: ``kind`` (``exception``, ``usage``, ``exit``,
    ``interrupted``), ``type`` and ``message`` of the exception, ``where`` (``FILE:LINE`` of
    the user's innermost frame, None when unknown); None when the script exited 0."""


def run_script(script: Path, args: Sequence[str]) -> ScriptEnd:
    """Run ``script`` as ``__main__`` with ``sys.argv = [script, *args]``; return how it ended.

    Like the ``python`` executable: ``sys.path[0]`` is the script's (real) directory; a
    ``SystemExit`` gives its code (``None`` -> 0, a non-integer is printed to stderr -> 1); an
    uncaught exception goes to :data:`sys.excepthook` (the traceback, from the script's frames
    on) -> 1; Ctrl-C -> 130. ``sys.argv``, ``sys.path`` and ``sys.modules["__main__"]`` are
    restored afterwards. While it runs, ``import precision_tool`` finds tf2npu's stand-in when
    nothing on ``sys.path`` provides one (:mod:`tf2npu.compat.shims.fallback`).
    """
    from tf2npu.compat.shims.fallback import fallback_imports  # not at CLI start-up

    path = os.fspath(script)
    saved_argv, saved_path, saved_main = sys.argv, sys.path[:], sys.modules.get("__main__")
    sys.argv = [path, *args]
    sys.path[0:1] = [os.path.dirname(os.path.realpath(path))]
    try:
        with fallback_imports():  # precision_tool, unless the script has its own copy
            _execute(path)
    except SystemExit as exc:
        status = _exit_status(exc.code)
        if status == exit_codes.OK:
            return ScriptEnd(status)
        message = "" if isinstance(exc.code, int) or exc.code is None else str(exc.code)
        return ScriptEnd(status, _error("exit", exc, path, message))
    except KeyboardInterrupt as exc:
        _report_uncaught(exc)
        return ScriptEnd(exit_codes.INTERRUPTED, _error("interrupted", exc, path))
    except Tf2NpuError as exc:
        # A user error tf2npu found while the script ran (an option set in the script's own
        # config, a switch file it names): one message at the script's line, no traceback.
        _report_user_error(exc, path)
        return ScriptEnd(exc.exit_code, _error("usage", exc, path))
    except Exception as exc:
        _report_uncaught(exc)
        return ScriptEnd(PYTHON_ERROR, _error("exception", exc, path))
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    return ScriptEnd(exit_codes.OK)


def _error(
    kind: str, exc: BaseException, script: str, message: str | None = None
) -> dict[str, Any]:
    where = _user_frame(exc.__traceback__, script)
    if where is None and isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        where = f"{exc.filename}:{exc.lineno}: "
    return {
        "kind": kind,
        "type": type(exc).__name__,
        "message": str(exc) if message is None else message,
        "where": where.removesuffix(": ") if where else None,
    }


def _execute(path: str) -> None:
    """Compile and run the file in a fresh ``__main__`` module, as the interpreter does.

    Not :func:`runpy.run_path`: on the way out it writes ``sys.argv[0]`` of whatever list the
    script left in ``sys.argv`` (an ``IndexError`` if the script emptied it), and its frames
    would sit between the user and their traceback.
    """
    with io.open_code(path) as stream:
        source = stream.read()
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__cached__ = None  # type: ignore[attr-defined]
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    # compile() reads the coding cookie and BOM from the bytes, like the interpreter.
    code = compile(source, path, "exec", dont_inherit=True)
    exec(code, main.__dict__)


def _exit_status(code: object) -> int:
    if code is None:
        return exit_codes.OK
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return PYTHON_ERROR


def _report_uncaught(exc: BaseException) -> None:
    tb = _script_frames(exc.__traceback__)
    sys.stdout.flush()
    try:
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
    except Exception:
        traceback.print_exception(exc)


def _report_user_error(exc: Tf2NpuError, script: str) -> None:
    """``tf2npu run: error: FILE:LINE: message`` at the user's innermost frame (see
    :func:`_user_frame`), else ``SCRIPT: message``."""
    where = _user_frame(exc.__traceback__, script) or f"{script}: "
    sys.stdout.flush()
    print(f"tf2npu run: error: {where}{exc}", file=sys.stderr)


def _user_frame(tb: TracebackType | None, script: str) -> str | None:
    """``FILE:LINE: `` of the innermost frame in the script or a module of its project.

    Scripts keep their model in modules beside them (``ops.py``, ``model.py``) or in a package
    of the project whose root is on ``sys.path`` (``thumt/bin/trainer.py`` importing
    ``thumt.data.record`` with the root on ``PYTHONPATH``): the call that failed is there, not
    at the script's line that led to it. Library code (a copy of ``precision_tool`` in the
    project included) is skipped.
    """
    from tf2npu.runtime.errors import is_library_file, library_roots

    real_script = os.path.realpath(script)
    folders = _project_folders(os.path.dirname(real_script), sys.path)
    roots = library_roots()
    found = None
    for frame, number in traceback.walk_tb(tb):
        filename = frame.f_code.co_filename
        path = os.path.realpath(filename)
        if path == real_script:
            found = f"{script}:{number}: "
        elif path.startswith(folders) and not is_library_file(filename, roots):
            found = f"{os.path.normpath(filename)}:{number}: "  # sys.path "./": "/d/./ops.py"
    return found


def _project_folders(folder: str, search_path: Sequence[str]) -> tuple[str, ...]:
    """``folder`` and the ``search_path`` entries that contain it, each ending in a separator.

    An entry that contains the script's folder is the root of the script's project, put there
    by ``PYTHONPATH`` or by the script (``sys.path.insert(1, base_path + "/../")``). Entries
    elsewhere (site-packages) and the file system's root are not.
    """
    found = [os.path.join(folder, "")]
    for entry in search_path:
        root = os.path.join(os.path.realpath(entry or os.curdir), "")
        if root != os.sep and found[0].startswith(root) and root not in found:
            found.append(root)
    return tuple(found)


def _script_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without its leading tf2npu frames: the user's traceback starts in SCRIPT."""
    while tb is not None and tb.tb_frame.f_globals.get("__name__") == __name__:
        tb = tb.tb_next
    return tb

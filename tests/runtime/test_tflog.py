"""TensorFlow's own log lines are dropped unless --verbose; the script's own lines stay."""

from __future__ import annotations

import logging

import pytest

from tf2npu.runtime.tflog import CPP_LEVEL_ENV, TF_LOGGER, LibraryNoise, quiet_tensorflow

LIB = "/venv/lib/python3.11/site-packages/"


def record(level: int, path: str, msg: str = "text", args: tuple[object, ...] = ()) -> bool:
    item = logging.LogRecord(TF_LOGGER, level, path, 1, msg, args, None)
    return LibraryNoise((LIB,)).filter(item)


@pytest.mark.parametrize(
    ("level", "path", "msg", "args", "kept"),
    [
        # Estimator's "Using config: ..." and "loss = 0.69, step = 1": INFO from library code.
        (logging.INFO, LIB + "tensorflow_estimator/python/estimator/estimator.py", "x", (), False),
        (logging.INFO, "/home/me/train.py", "my own progress line", (), True),
        (logging.WARNING, LIB + "tensorflow/python/training/basic_session_run_hooks.py", "x", (),
         True),
        (logging.WARNING, LIB + "tensorflow/python/util/deprecation.py",
         "From %s: %s (from %s) is deprecated", (LIB + "tensorflow/x.py:3", "f", "m"), False),
        (logging.WARNING, LIB + "tensorflow/python/util/deprecation.py",
         "From %s: %s (from %s) is deprecated", ("/home/me/train.py:11", "f", "m"), True),
        (logging.ERROR, LIB + "tensorflow/python/client/session.py", "x", (), True),
        (logging.DEBUG, LIB + "keras/src/engine.py", "x", (), False),
    ],
    ids=["lib_info", "script_info", "lib_warning", "lib_deprecation", "script_deprecation",
         "lib_error", "lib_debug"],
)  # fmt: skip
def test_what_is_kept(level: int, path: str, msg: str, args: tuple[object, ...], kept: bool):
    assert record(level, path, msg, args) is kept


def test_quiet_installs_one_filter_and_the_cpp_level(monkeypatch: pytest.MonkeyPatch) -> None:
    logger = logging.getLogger(TF_LOGGER)
    monkeypatch.setattr(logger, "filters", [])
    monkeypatch.delenv(CPP_LEVEL_ENV, raising=False)
    quiet_tensorflow(verbose=False)
    quiet_tensorflow(verbose=False)
    assert [type(f) for f in logger.filters] == [LibraryNoise]
    import os

    assert os.environ[CPP_LEVEL_ENV] == "1"


def test_verbose_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    logger = logging.getLogger(TF_LOGGER)
    monkeypatch.setattr(logger, "filters", [])
    monkeypatch.setenv(CPP_LEVEL_ENV, "0")
    quiet_tensorflow(verbose=True)
    assert logger.filters == []
    import os

    assert os.environ[CPP_LEVEL_ENV] == "0"

"""Run-time errors name the user's op and the line of the user's code that created it."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.runtime.conftest import npu_config, tf

pytestmark = pytest.mark.tf

SCRIPT = """\
def build(tf):
    value = tf.compat.v1.placeholder(tf.float32, [], name="value")
    check = tf.raw_ops.Assert(condition=value > 0, data=["must be positive"], name="my_check")
    return value, check
"""


@pytest.mark.parametrize("folder", ["tf2npu", "tensorflow", "keras", "npu_bridge"])
def test_created_at_names_a_script_under_a_folder_named_like_a_library(
    tmp_path: Path, folder: str
) -> None:
    """Library frames are recognised by the packages' real folders, not by a name in the path:
    a clone of this repository called tf2npu, or a project folder called keras, is user code."""
    script = tmp_path / folder / "train.py"
    script.parent.mkdir()
    script.write_text(SCRIPT)
    build = runpy.run_path(str(script))["build"]
    graph = tf.Graph()
    with graph.as_default():
        value, check = build(tf)
        with (
            tf.compat.v1.Session(config=npu_config()) as sess,
            pytest.raises(tf.errors.InvalidArgumentError) as err,
        ):
            sess.run(check, {value: -1.0})
    assert err.value.op.name == "my_check"
    assert f"(op 'my_check' was created at {script}:3 in build)" in err.value.message


def test_library_frames_are_those_of_the_installed_packages() -> None:
    import keras
    import tensorflow

    import tf2npu
    from tf2npu.runtime.errors import is_library_file

    for module in (tensorflow, keras, tf2npu):
        assert is_library_file(str(module.__file__))
    assert is_library_file(str(Path(tf2npu.__file__).parent / "runtime" / "session.py"))
    assert not is_library_file(__file__)
    assert not is_library_file("/home/me/tf2npu/tensorflow/keras/train.py")
    assert not is_library_file("<string>")


@pytest.mark.slow
def test_library_roots_are_the_real_folders_under_tf2npu_runs_module_swap() -> None:
    """``tf2npu run`` binds ``sys.modules["tensorflow"]`` to the v1 API module; the folder of
    TensorFlow is still the real package's, so its deeper frames stay library frames.

    In a fresh interpreter: activate() disables v2 behaviour for the whole process, and undoing
    it fails once any test before has built a graph (TF allows eager only at start-up)."""
    code = textwrap.dedent(
        """
        from pathlib import Path
        import tensorflow
        from tf2npu import compat
        from tf2npu.runtime.errors import is_library_file, library_roots
        real = Path(tensorflow.__file__).resolve().parent
        compat.activate()
        print(is_library_file(str(real / "python" / "framework" / "ops.py")))
        print(str(real) + "/" in library_roots())
        """
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "True"]

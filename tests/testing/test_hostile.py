"""``tf2npu.testing.hostile``: a case's exit, output and the processes it left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tf2npu.testing.hostile import TAG, commands, run_tf2npu, tagged, wait_for


def test_a_command_that_ends_leaves_nothing(tmp_path: Path) -> None:
    ended = run_tf2npu(["--version"], tmp_path, timeout=60)
    assert (ended.code, ended.left, ended.traceback) == (0, (), False)
    assert ended.out.startswith("tf2npu ")


def test_a_process_is_found_by_its_tag_whatever_its_session() -> None:
    env = {**os.environ, TAG: "test-hostile-tag"}
    leaver = "import subprocess; subprocess.Popen(['sleep', '300'], start_new_session=True)"
    subprocess.run([sys.executable, "-c", leaver], env=env, check=True)
    try:
        assert wait_for("test-hostile-tag", "sleep 300", timeout=10)
        assert commands(tagged("test-hostile-tag")) == ["sleep 300"]
    finally:
        for pid in tagged("test-hostile-tag"):
            os.kill(pid, signal.SIGKILL)

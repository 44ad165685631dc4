"""The statistics op's block functions without TensorFlow (stats_op/stats_kernel.h): the
baseline x86-64 variant, which the op's own tests never reach on a CPU with AVX2, agrees with
the AVX2 one, and the half decoder with the compiler's conversion on every bit pattern
(``kernel_check.cc`` next to this file, compiled here with g++)."""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path

import pytest

from tf2npu.runtime.dump import stats_op

CHECK = Path(__file__).with_name("kernel_check.cc")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the AVX2 variant is x86-64 only")
def test_the_baseline_and_avx2_blocks_agree_and_half_decodes_exactly(tmp_path: Path) -> None:
    binary = tmp_path / "kernel_check"
    subprocess.run(
        ["g++", "-O3", "-std=c++17", f"-I{stats_op.HERE}", str(CHECK), "-o", str(binary)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    done = subprocess.run([str(binary)], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (0, "bad=0\n")

"""A step's wall time split by what ran: literal spans, then the sample profile."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.debug.profile_sample import write_sample

from tf2npu.debug.profile.phases import split_step, step_phases
from tf2npu.debug.profile.report import analyse
from tf2npu.debug.profile.tables import StepRow


def _step(start: float, end: float, gap: float = 0.0) -> StepRow:
    return StepRow(1, 2, True, start, end, end - start + gap, None, None, gap, 0.0, 0, 0)


def test_overlapping_ops_count_once_and_the_first_phase_wins() -> None:
    spans = [("host", 0.0, 40.0), ("device", 10.0, 30.0), ("device", 20.0, 50.0)]
    split = split_step(_step(0.0, 100.0, gap=5.0), spans)
    assert (split.input_us, split.device_us, split.host_us, split.copy_us) == (5.0, 40.0, 10.0, 0)
    assert split.other_us == 50.0 and split.total_us == 105.0


def test_getnext_is_input_wait_even_while_device_ops_run() -> None:
    split = split_step(_step(0.0, 10.0), [("device", 0.0, 10.0), ("input", 2.0, 6.0)])
    assert (split.input_us, split.device_us, split.other_us) == (4.0, 6.0, 0.0)


def test_spans_outside_the_step_are_clipped_or_dropped() -> None:
    spans = [("device", -50.0, -10.0), ("host", 90.0, 150.0), ("device", -5.0, 5.0)]
    split = split_step(_step(0.0, 100.0), spans)
    assert (split.device_us, split.host_us, split.other_us) == (5.0, 10.0, 85.0)


def test_an_empty_step_is_all_other() -> None:
    split = split_step(_step(3.0, 3.0), [])
    assert split.total_us == 0.0
    assert split_step(_step(0.0, 8.0), []).other_us == 8.0


def test_an_unknown_phase_is_a_bug_not_a_silent_zero() -> None:
    with pytest.raises(KeyError):
        split_step(_step(0.0, 8.0), [("dma", 0.0, 4.0)])


def test_the_sample_profile_puts_most_of_each_step_in_device_host_and_input(
    tmp_path: Path,
) -> None:
    analysis = analyse(write_sample(tmp_path))
    phases = step_phases(analysis.rows, analysis.steps)
    for step, split in zip(analysis.steps, phases, strict=True):
        assert split.total_us == pytest.approx(step.iteration_us)
        assert split.other_us < 0.1 * split.total_us
    # iteration 2: 20 µs gap, MatMul 10 + Tile 5 + ReduceSum 60 on the device, PyFunc 30 on the
    # host; the feed, the fetch and the 1 µs gaps between ops are the executor's (other)
    second = phases[1]
    assert (second.input_us, second.device_us, second.host_us) == (20.0, 75.0, 30.0)
    assert second.other_us == 7.0


SCRIPT = """\
import time
import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

def slow(v):
    time.sleep(0.002)
    return v

x = tf.placeholder(tf.float32, [64, 128], name="x")
w = tf.Variable(np.ones([128, 128], np.float32) / 128, name="w")
h = tf.py_func(slow, [x], tf.float32, name="host_slow")
h.set_shape([64, 128])
loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(tf.matmul(h, w)), w)), name="loss")
train = tf.train.AdamOptimizer(1e-3).minimize(loss)
with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(6):
        sess.run([train, loss], {x: np.ones([64, 128], np.float32)})
"""
"""A py_func of 2 ms on the host between device ops, trained with Adam."""


@pytest.mark.tf
@pytest.mark.slow
def test_a_real_profile_puts_other_in_the_minority(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    exe = Path(sys.executable).with_name("tf2npu")
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [str(exe), "profile", "--steps", "4", "--out", "prof", "--", "train.py"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [folder] = (tmp_path / "prof").glob("PROF_*")
    analysis = analyse(folder)
    warm = [s for s in analysis.steps if s.train and not s.warmup]
    assert len(warm) == 3
    for split in step_phases(analysis.rows, warm):
        assert split.other_us < 0.5 * split.total_us, split
        assert split.host_us >= 2000  # the py_func's sleep
        assert split.device_us > 0

"""The timeline drawn in the profile page: which steps, which lanes, which bars."""

from __future__ import annotations

import re
from pathlib import Path

from tests.debug.profile_sample import write_sample

from tf2npu.debug.profile.report import analyse
from tf2npu.debug.profile.tables import StepRow, trace_events
from tf2npu.debug.profile.timeline import render_timeline, window


def _step(model: int, iteration: int, start: float, train: bool = True) -> StepRow:
    return StepRow(model, iteration, train, start, start + 10, 10, None, None, None, 0.0, 0, 0)


def test_the_window_spans_warm_training_steps_of_one_model() -> None:
    steps = [_step(1, 1, 0, train=False), _step(2, 1, 100), _step(2, 2, 200), _step(2, 3, 300),
             _step(3, 2, 400), _step(2, 4, 500), _step(2, 5, 600)]  # fmt: skip
    shown = window(steps, origin=50.0)
    assert shown is not None
    assert [(s.model, s.iteration) for s in shown.steps] == [(2, 2), (2, 3), (2, 4)]
    assert (shown.start, shown.end) == (150.0, 460.0)  # trace time: µs after the origin


def test_without_training_steps_any_step_is_shown_and_nothing_traced_says_so() -> None:
    shown = window([_step(1, 1, 0, train=False)], origin=0.0)
    assert shown is not None and shown.steps[0].model == 1
    assert window([], origin=0.0) is None
    assert render_timeline([], []) == '<p class="note">nothing was traced</p>'


def test_the_sample_draws_one_lane_per_process_and_every_event_of_its_steps(
    tmp_path: Path,
) -> None:
    analysis = analyse(write_sample(tmp_path))
    events = trace_events(analysis.profile, analysis.rows, analysis.steps)
    svg = render_timeline(events, analysis.steps)
    lanes = re.findall(r'text-anchor="end">([^<]+)</text><line class="lane"', svg)
    assert lanes == ["Iterations", "Host ops (AI CPU)", "GeOp1_0 (device)", "Memcpy edges"]
    # iterations 2 and 3 (the first is the warm-up): 4 ops, 4 memcpy edges and the step each
    bars = re.findall(r'<rect class="(bar-[a-z]+)"', svg)
    assert len(bars) == 2 * 9
    assert bars.count("bar-host") == 2 and bars.count("bar-step") == 2
    assert bars.count("bar-copy") == 8 and bars.count("bar-device") == 6
    assert svg.count('<line class="step"') == 2
    assert "rs/_tf2npu_fp16 (ReduceSumD): 60.0 µs" in svg
    # a copy of 0 µs is drawn one pixel wide, not 0
    widths = re.findall(r'<rect class="bar-copy" x="[^"]+" y="[^"]+" width="([^"]+)"', svg)
    assert min(float(w) for w in widths) > 0
    assert "after model 2 iteration 2 starts" in svg


def test_iteration_lanes_are_named_by_model_and_op_lanes_by_thread() -> None:
    steps = [_step(2, 2, 1000.0), _step(3, 2, 1004.0)]
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Iterations"}},
        {"ph": "M", "name": "process_name", "pid": 3, "args": {"name": "GeOp1_0 (device)"}},
        {"ph": "X", "name": "model 2 iteration 2", "cat": "iteration", "pid": 1, "tid": 2,
         "ts": 0.0, "dur": 10.0},
        {"ph": "X", "name": "model 3 iteration 2", "cat": "iteration", "pid": 1, "tid": 3,
         "ts": 4.0, "dur": 3.0},
        {"ph": "X", "name": "mm", "cat": "AI_CORE", "pid": 3, "tid": 1, "ts": 1.0, "dur": 2.0},
        {"ph": "X", "name": "add", "cat": "AI_CORE", "pid": 3, "tid": 2, "ts": 1.0, "dur": 2.0},
    ]  # fmt: skip
    svg = render_timeline(events, steps)
    lanes = re.findall(r'text-anchor="end">([^<]+)</text><line class="lane"', svg)
    assert lanes == ["Iterations · model 2", "Iterations · model 3",
                     "GeOp1_0 (device) · thread 1", "GeOp1_0 (device) · thread 2"]  # fmt: skip

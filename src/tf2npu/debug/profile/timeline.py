"""The profile's timeline drawn in its page: trace_view.json's events as an inline SVG (TF-free).

Perfetto needs the network and ``chrome://tracing`` is gone, so the page draws the events itself:
one lane per (process, thread) of the trace (the iterations, the host ops, each GeOp, the memcpy
edges), a few training steps wide (:data:`STEPS_SHOWN`), each step marked by a line at its start
and its name on the iterations lane. Each bar's tooltip gives the op, its type and duration.
The plot is a nested ``<svg>`` whose ``viewBox`` is in µs, so the page's small script zooms
(wheel) and pans (drag) by changing that box alone; double-click resets. Nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from tf2npu.debug.profile.tables import AI_CPU, MEMCPY, StepRow

__all__ = ["EVENTS_DRAWN", "STEPS_SHOWN", "TIMELINE_SCRIPT", "Window", "render_timeline", "window"]

STEPS_SHOWN = 3
"""Training steps the timeline spans (after each signature's first run when there are any)."""
EVENTS_DRAWN = 5000
"""Bars drawn at most (the first in time); trace_view.json has them all."""

_WIDTH, _LABEL, _LANE, _TOP = 960, 210, 18, 22
_PLOT = _WIDTH - _LABEL - 10


@dataclass(frozen=True, slots=True)
class Window:
    """The span of the trace drawn, in the trace's µs, and the steps in it."""

    start: float
    end: float
    steps: tuple[StepRow, ...]
    origin: float
    """The absolute µs (a :class:`StepRow`'s clock) of trace time 0."""

    @property
    def width(self) -> float:
        return max(self.end - self.start, 1.0)


def window(steps: Sequence[StepRow], origin: float) -> Window | None:
    """:data:`STEPS_SHOWN` warm training steps (else training steps, else any), in trace time
    (µs after ``origin``, the first traced op); ``None`` when nothing was traced."""
    train = [s for s in steps if s.train]
    chosen = [s for s in train if not s.warmup] or train or list(steps)
    if not chosen:
        return None
    model = chosen[0].model
    shown = tuple(s for s in chosen if s.model == model)[:STEPS_SHOWN]
    return Window(shown[0].start_us - origin, shown[-1].end_us - origin, shown, origin)


def render_timeline(events: Sequence[Mapping[str, Any]], steps: Sequence[StepRow]) -> str:
    """The timeline section's HTML: the SVG and a line saying what it shows."""
    spans = [e for e in events if e.get("ph") == "X"]
    origin = _origin(events, steps)
    shown = window(steps, origin)
    if shown is None or not spans:
        return '<p class="note">nothing was traced</p>'
    inside = sorted(
        (e for e in spans if e["ts"] + e["dur"] >= shown.start and e["ts"] <= shown.end),
        key=lambda e: e["ts"],
    )[:EVENTS_DRAWN]
    lanes = _lanes(events, inside)
    height = _TOP + len(lanes) * _LANE + 6
    out = [
        f'<svg id="timeline" width="{_WIDTH}" height="{height}" viewBox="0 0 {_WIDTH} {height}" '
        'role="img" aria-label="timeline">',
        f'<text class="label" id="tl-range" x="{_LABEL}" y="14">{_range(shown)}</text>',
    ]
    for i, (_, label) in enumerate(lanes.values()):
        y = _TOP + i * _LANE
        out.append(
            f'<text class="label" x="{_LABEL - 6}" y="{y + 13}" text-anchor="end">'
            f"{escape(_clip(label))}</text>"
            f'<line class="lane" x1="{_LABEL}" y1="{y + _LANE}" x2="{_WIDTH - 10}" '
            f'y2="{y + _LANE}"/>'
        )
    out.append(
        f'<svg id="tl-plot" x="{_LABEL}" y="{_TOP}" width="{_PLOT}" '
        f'height="{len(lanes) * _LANE}" viewBox="{shown.start:.3f} 0 {shown.width:.3f} '
        f'{len(lanes) * _LANE}" preserveAspectRatio="none" '
        f'data-start="{shown.start:.3f}" data-width="{shown.width:.3f}">'
    )
    least = shown.width / _PLOT  # one pixel: a 0 µs copy stays visible
    rows = {key: i for i, key in enumerate(lanes)}
    for event in inside:
        y = rows[(event["pid"], event["tid"])] * _LANE
        out.append(_bar(event, y, least))
    for step in shown.steps:
        x = step.start_us - shown.origin
        out.append(
            f'<line class="step" x1="{x:.3f}" y1="0" x2="{x:.3f}" y2="{len(lanes) * _LANE}" '
            f'vector-effect="non-scaling-stroke"><title>model {step.model} iteration '
            f"{step.iteration} starts</title></line>"
        )
    out.append("</svg></svg>")
    note = (
        f"{len(shown.steps)} step(s) of model {shown.steps[0].model}, {len(inside):,} events; "
        "wheel: zoom, drag: pan, double-click: back. Every event is in "
        "mindstudio_profiler_output/trace_view.json."
    )
    return "".join(out) + f'<p class="note">{escape(note)}</p>'


def _origin(events: Sequence[Mapping[str, Any]], steps: Sequence[StepRow]) -> float:
    """The absolute µs of trace time 0: the first step event's start minus its ``ts``."""
    for event in events:
        if event.get("ph") == "X" and event.get("cat") == "iteration":
            model, iteration = event["tid"], _iteration(event["name"])
            for step in steps:
                if (step.model, step.iteration) == (model, iteration):
                    return float(step.start_us - event["ts"])
    return min((s.start_us for s in steps), default=0.0)


def _iteration(name: str) -> int:
    """``model 3 iteration 2`` -> 2."""
    tail = name.rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def _lanes(
    events: Sequence[Mapping[str, Any]], inside: Sequence[Mapping[str, Any]]
) -> dict[tuple[int, int], tuple[int, str]]:
    """(pid, tid) -> (sort key, label), in the trace's process order, then by thread."""
    names = {
        e["pid"]: str(e["args"]["name"])
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    keys = sorted({(e["pid"], e["tid"]) for e in inside})
    steps = {(e["pid"], e["tid"]) for e in inside if e.get("cat") == "iteration"}
    threads: dict[int, int] = {}
    for pid, _ in keys:
        threads[pid] = threads.get(pid, 0) + 1
    lanes = {}
    for pid, tid in keys:
        label = names.get(pid, f"process {pid}")
        if threads[pid] > 1:
            # the iterations' lanes are one per model (run signature), the others threads
            label += f" · model {tid}" if (pid, tid) in steps else f" · thread {tid}"
        lanes[(pid, tid)] = (pid, label)
    return lanes


def _bar(event: Mapping[str, Any], y: int, least: float) -> str:
    cat = str(event.get("cat", ""))
    css = {AI_CPU: "bar-host", MEMCPY: "bar-copy", "iteration": "bar-step"}.get(cat, "bar-device")
    args = event.get("args") or {}
    kind = args.get("type", cat)
    title = f"{event['name']} ({kind}): {event['dur']:,.1f} µs at {event['ts']:,.1f} µs"
    return (
        f'<rect class="{css}" x="{event["ts"]:.3f}" y="{y + 2}" '
        f'width="{max(float(event["dur"]), least):.3f}" height="{_LANE - 4}">'
        f"<title>{escape(title)}</title></rect>"
    )


def _range(shown: Window) -> str:
    """The span shown, in µs after the first shown step's start (the script keeps it so)."""
    first = shown.steps[0]
    return f"0 – {shown.width:,.0f} µs after model {first.model} iteration {first.iteration} starts"


def _clip(label: str, width: int = 30) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


TIMELINE_SCRIPT = """
(function () {
  var plot = document.getElementById('tl-plot');
  if (!plot) { return; }
  var range = document.getElementById('tl-range');
  var full = [parseFloat(plot.dataset.start), parseFloat(plot.dataset.width)];
  var view = full.slice();
  var height = plot.viewBox.baseVal.height;
  function show() {
    plot.setAttribute('viewBox', view[0] + ' 0 ' + view[1] + ' ' + height);
    var text = range.textContent;
    range.textContent = Math.round(view[0] - full[0]).toLocaleString('en') + ' \\u2013 ' +
      Math.round(view[0] - full[0] + view[1]).toLocaleString('en') +
      text.slice(text.indexOf(' \\u00b5s'));
  }
  function at(clientX) {
    var box = plot.getBoundingClientRect();
    return view[0] + view[1] * (clientX - box.left) / box.width;
  }
  plot.addEventListener('wheel', function (e) {
    e.preventDefault();
    var t = at(e.clientX);
    var scale = e.deltaY > 0 ? 1.25 : 0.8;
    var width = Math.min(full[1] * 4, Math.max(full[1] / 2000, view[1] * scale));
    view = [t - (t - view[0]) * width / view[1], width];
    show();
  }, {passive: false});
  var drag = null;
  plot.addEventListener('mousedown', function (e) { drag = [e.clientX, view[0]]; });
  window.addEventListener('mouseup', function () { drag = null; });
  window.addEventListener('mousemove', function (e) {
    if (!drag) { return; }
    var box = plot.getBoundingClientRect();
    view = [drag[1] - (e.clientX - drag[0]) * view[1] / box.width, view[1]];
    show();
  });
  plot.addEventListener('dblclick', function () { view = full.slice(); show(); });
  show();
})();
"""

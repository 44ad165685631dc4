"""Instruments around the pass manager: call order, timing, dumps, skipping."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tf2npu.errors import ConfigError, UnknownNameError
from tf2npu.graph.instruments import DumpGraph, SkipPasses, TimePasses
from tf2npu.graph.passes import (
    PassContext,
    PassError,
    PassInfo,
    PassInstrument,
    PassManager,
    PassResult,
)


@dataclass
class Toy:
    nodes: dict[str, list[str]] = field(default_factory=dict)

    def lint(self, baseline: object | None = None) -> None:
        if "broken" in self.nodes:
            raise ValueError("broken node")


class AddNode:
    def __init__(self, name: str) -> None:
        self.info = PassInfo(name)

    def run(self, graph: Toy, ctx: PassContext) -> PassResult[Toy]:
        graph.nodes[self.info.name] = []
        return PassResult(graph, changed=True, stats={"added": 1})


class Fails:
    info = PassInfo("fails")

    def run(self, graph: Toy, ctx: PassContext) -> PassResult[Toy]:
        raise RuntimeError("kaput")


class Recorder(PassInstrument[Toy]):
    def __init__(self, tag: str, events: list[str], veto: str | None = None) -> None:
        self.tag, self.events, self.veto = tag, events, veto

    def should_run(self, graph: Toy, info: PassInfo) -> bool:
        self.events.append(f"{self.tag}.should_run {info.name}")
        return info.name != self.veto

    def before(self, graph: Toy, info: PassInfo) -> None:
        self.events.append(f"{self.tag}.before {info.name} {sorted(graph.nodes)}")

    def after(self, graph: Toy, info: PassInfo, result: PassResult[Any]) -> None:
        self.events.append(f"{self.tag}.after {info.name} {sorted(graph.nodes)} {result.changed}")

    def on_error(self, graph: Toy, info: PassInfo, exc: BaseException) -> None:
        self.events.append(f"{self.tag}.on_error {info.name} {exc}")


def run(pm: PassManager[Toy, None], *instruments: PassInstrument[Any], verify: bool = False) -> Any:
    return pm.run(Toy(), PassContext(config=None, instruments=instruments, verify=verify))


def test_instrument_hooks_run_in_order_around_each_pass() -> None:
    events: list[str] = []
    run(
        PassManager[Toy, None]([AddNode("a"), AddNode("b")]),
        Recorder("x", events),
        Recorder("y", events),
    )
    assert events == [
        "x.should_run a",
        "y.should_run a",
        "x.before a []",
        "y.before a []",
        "x.after a ['a'] True",
        "y.after a ['a'] True",
        "x.should_run b",
        "y.should_run b",
        "x.before b ['a']",
        "y.before b ['a']",
        "x.after b ['a', 'b'] True",
        "y.after b ['a', 'b'] True",
    ]


def test_should_run_false_skips_without_before_or_after() -> None:
    events: list[str] = []
    out = run(PassManager[Toy, None]([AddNode("a"), AddNode("b")]), Recorder("x", events, veto="a"))
    assert events == [
        "x.should_run a",
        "x.should_run b",
        "x.before b []",
        "x.after b ['b'] True",
    ]
    assert out.skipped == [("a", "skipped by instrument Recorder")]


def test_context_disabled_passes_do_not_reach_instruments() -> None:
    events: list[str] = []
    pm = PassManager[Toy, None]([AddNode("a")])
    pm.run(Toy(), PassContext(None, disabled=frozenset({"a"}), instruments=[Recorder("x", events)]))
    assert events == []


def test_on_error_sees_the_failure_and_after_is_not_called() -> None:
    events: list[str] = []
    with pytest.raises(PassError, match="'fails' failed: RuntimeError: kaput"):
        run(PassManager[Toy, None]([AddNode("a"), Fails(), AddNode("b")]), Recorder("x", events))
    assert events[-2:] == ["x.before fails ['a']", "x.on_error fails kaput"]


def test_on_error_sees_a_lint_failure() -> None:
    events: list[str] = []
    with pytest.raises(PassError, match="'broken' left a graph that fails lint"):
        run(PassManager[Toy, None]([AddNode("broken")]), Recorder("x", events), verify=True)
    assert events[-1] == "x.on_error broken broken node"


def fake_clock() -> Iterator[float]:
    yield from (1.0, 1.5, 2.0, 4.0, 10.0)


def test_time_passes_records_wall_seconds_per_pass() -> None:
    ticks = fake_clock()
    timer = TimePasses(clock=lambda: next(ticks))
    run(PassManager[Toy, None]([AddNode("a"), AddNode("b")]), timer)
    assert timer.seconds == {"a": 0.5, "b": 2.0}
    assert timer.total == 2.5


def test_time_passes_with_the_real_clock() -> None:
    timer = TimePasses()
    run(PassManager[Toy, None]([AddNode("a")]), timer)
    assert list(timer.seconds) == ["a"] and timer.seconds["a"] >= 0.0


def test_time_passes_drops_a_failed_pass() -> None:
    timer = TimePasses()
    with pytest.raises(PassError):
        run(PassManager[Toy, None]([AddNode("a"), Fails()]), timer)
    assert list(timer.seconds) == ["a"]


def write_names(graph: Toy, path: Path) -> None:
    path.write_text("\n".join(sorted(graph.nodes)))


def test_dump_graph_writes_numbered_files_before_and_after(tmp_path: Path) -> None:
    dump = DumpGraph(tmp_path / "dumps", write_names)
    run(PassManager[Toy, None]([AddNode("device_strings"), AddNode("placement")]), dump)
    names = sorted(p.name for p in (tmp_path / "dumps").iterdir())
    assert names == [
        "01_device_strings_after.pbtxt",
        "01_device_strings_before.pbtxt",
        "02_placement_after.pbtxt",
        "02_placement_before.pbtxt",
    ]
    assert (tmp_path / "dumps" / "02_placement_before.pbtxt").read_text() == "device_strings"
    assert dump.written[-1].read_text() == "device_strings\nplacement"


@pytest.mark.parametrize(
    ("when", "only", "expected"),
    [
        ("before", None, ["01_a_before.pbtxt", "02_b_before.pbtxt", "03_c_before.pbtxt"]),
        ("after", {"b"}, ["02_b_after.pbtxt"]),
        (
            "both",
            {"a", "c"},
            ["01_a_before.pbtxt", "01_a_after.pbtxt", "03_c_before.pbtxt", "03_c_after.pbtxt"],
        ),
    ],
)
def test_dump_graph_when_and_only(
    tmp_path: Path, when: Any, only: set[str] | None, expected: list[str]
) -> None:
    dump = DumpGraph(tmp_path, write_names, when=when, only=only)
    run(PassManager[Toy, None]([AddNode("a"), AddNode("b"), AddNode("c")]), dump)
    assert [p.name for p in dump.written] == expected


def test_dump_graph_rejects_a_bad_when(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="when must be"):
        DumpGraph(tmp_path, write_names, when="during")  # type: ignore[arg-type]


def test_dump_graph_only_names_must_exist(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError, match="'fusoin'"):
        run(
            PassManager[Toy, None]([AddNode("fusion")]),
            DumpGraph(tmp_path, write_names, only={"fusoin"}),
        )


def test_skip_passes_skips_by_name_and_reports_it() -> None:
    out = run(PassManager[Toy, None]([AddNode("a"), AddNode("b"), AddNode("c")]), SkipPasses({"b"}))
    assert out.ran == ["a", "c"]
    assert out.skipped == [("b", "skipped by instrument SkipPasses")]


def test_skip_passes_rejects_unknown_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        run(PassManager[Toy, None]([AddNode("a")]), SkipPasses({"zzz"}))
    assert isinstance(info.value, ConfigError) and info.value.known == ("a",)

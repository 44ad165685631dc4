"""injected_faults: each spec of a drill with what it hit over every compile of the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tf2npu.config.faults import parse_faults
from tf2npu.config.overrides import EngineOverrides
from tf2npu.graph.fusion import known_rules
from tf2npu.graph.passes.inject_faults import INJECTED_FAULTS, InjectedFault
from tf2npu.runtime import configure, context
from tf2npu.runtime.faults import InjectedFaults


@dataclass
class FakeGraph:
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class FakeEvent:
    graph: FakeGraph


def test_specs_keep_their_order_and_gather_hits_across_compiles() -> None:
    specs = parse_faults(["op:a=nan;op:b=scale:2;op:c=bias:1"], known_rules(), "test")
    configure(engine=EngineOverrides(faults=specs))
    instrument = InjectedFaults(context())
    for hits in ({"op:a=nan": ("a",), "op:b=scale:2": ()}, {"op:a=nan": ("a", "a2")}):
        graph = FakeGraph({INJECTED_FAULTS: [InjectedFault(s, h) for s, h in hits.items()]})
        instrument.on_compile(FakeEvent(graph))  # type: ignore[arg-type]
    instrument.on_compile(FakeEvent(FakeGraph()))  # type: ignore[arg-type]
    assert instrument.summary() == [
        {"spec": "op:a=nan", "applied_to": ["a", "a2"]},
        {"spec": "op:b=scale:2", "applied_to": []},
        {"spec": "op:c=bias:1", "applied_to": []},
    ]
    instrument.reset()
    assert instrument.summary()[0]["applied_to"] == []


def test_no_drill_no_entries() -> None:
    assert InjectedFaults(context()).summary() == []

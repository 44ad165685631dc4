"""The pass manager over a dict-backed toy graph: order, enabling, requirements, errors, stats."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tf2npu.errors import ConfigError, InternalError, Tf2NpuError, UnknownNameError
from tf2npu.graph.passes import (
    DEFAULT_PIPELINE,
    STAGES,
    PassContext,
    PassError,
    PassInfo,
    PassInstrument,
    PassManager,
    PassRegistry,
    PassResult,
    PipelineError,
)


@dataclass
class Toy:
    """Node name -> input names; lint checks inputs exist and baseline names survive."""

    nodes: dict[str, list[str]] = field(default_factory=dict)
    lints: int = 0

    def lint(self, baseline: object | None = None) -> None:
        self.lints += 1
        for name, inputs in self.nodes.items():
            for src in inputs:
                if src not in self.nodes:
                    raise ValueError(f"node {name!r} reads missing node {src!r}")
        if isinstance(baseline, set):
            lost = baseline - set(self.nodes)
            if lost:
                raise ValueError(f"original nodes lost: {sorted(lost)}")


class AddNode:
    """Adds a node named after the pass, reading the previously added one."""

    def __init__(self, name: str, requires: tuple[str, ...] = (), default: bool = True) -> None:
        self.info = PassInfo(name, requires=requires, default_enabled=default)

    def run(self, graph: Toy, ctx: PassContext) -> PassResult[Toy]:
        graph.nodes[self.info.name] = list(graph.nodes)[-1:]
        return PassResult(graph, changed=True, stats={"added": 1, "size": len(graph.nodes)})


class Boom:
    def __init__(self, exc: Exception, name: str = "boom") -> None:
        self.info = PassInfo(name)
        self.exc = exc

    def run(self, graph: Toy, ctx: PassContext) -> PassResult[Toy]:
        raise self.exc


class Breaker:
    """Leaves a dangling input (or drops a node) and so fails lint."""

    info = PassInfo("breaker")

    def __init__(self, drop: str | None = None) -> None:
        self.drop = drop

    def run(self, graph: Toy, ctx: PassContext) -> PassResult[Toy]:
        if self.drop is not None:
            del graph.nodes[self.drop]
        else:
            graph.nodes["dangling"] = ["nowhere"]
        return PassResult(graph, changed=True)


def ctx(**kwargs: Any) -> PassContext:
    return PassContext(config=None, **kwargs)


def manager(*names: str) -> PassManager[Toy, None]:
    return PassManager[Toy, None]([AddNode(n) for n in names])


def test_runs_passes_in_order_and_collects_stats() -> None:
    out = manager("a", "b", "c").run(Toy(), ctx())
    assert out.ran == ["a", "b", "c"]
    assert out.graph.nodes == {"a": [], "b": ["a"], "c": ["b"]}
    assert out.stats == {
        "a": {"added": 1, "size": 1},
        "b": {"added": 1, "size": 2},
        "c": {"added": 1, "size": 3},
    }
    assert out.changed and out.skipped == []


def test_continues_with_the_graph_a_pass_returns() -> None:
    class Replace:
        info = PassInfo("replace")

        def run(self, graph: Toy, ctx: PassContext) -> PassResult[Toy]:
            return PassResult(Toy({"fresh": []}), changed=True)

    out = PassManager[Toy, None]([AddNode("a"), Replace(), AddNode("b")]).run(Toy(), ctx())
    assert out.graph.nodes == {"fresh": [], "b": ["fresh"]}


def test_disabled_beats_forced_beats_default() -> None:
    on, off = PassInfo("on"), PassInfo("off", default_enabled=False)
    assert ctx().is_enabled(on) and not ctx().is_enabled(off)
    assert ctx(forced=frozenset({"off"})).is_enabled(off)
    assert not ctx(disabled=frozenset({"on"})).is_enabled(on)
    both = ctx(disabled=frozenset({"on", "off"}), forced=frozenset({"on", "off"}))
    assert not both.is_enabled(on) and not both.is_enabled(off)


def test_skipped_passes_are_recorded_with_their_reason() -> None:
    pm = PassManager[Toy, None]([AddNode("a"), AddNode("b"), AddNode("c", default=False)])
    out = pm.run(Toy(), ctx(disabled=frozenset({"b"})))
    assert out.ran == ["a"]
    assert out.skipped == [("b", "disabled by the pass context"), ("c", "disabled by default")]
    forced = pm.run(Toy(), ctx(forced=frozenset({"c"})))
    assert forced.ran == ["a", "b", "c"]


@pytest.mark.parametrize("field_name", ["disabled", "forced"])
def test_unknown_pass_names_in_the_context_list_the_known_ones(field_name: str) -> None:
    with pytest.raises(UnknownNameError) as info:
        manager("a", "b").run(Toy(), ctx(**{field_name: frozenset({"nope"})}))
    assert info.value.known == ("a", "b")
    assert "'nope'" in str(info.value) and "a, b" in str(info.value)


def test_duplicate_names_are_rejected() -> None:
    with pytest.raises(PipelineError, match="'a' appears twice"):
        manager("a", "b", "a")


def test_requirement_must_run_earlier() -> None:
    with pytest.raises(PipelineError, match=r"'b' requires pass 'a'.*does not run before"):
        PassManager[Toy, None]([AddNode("b", requires=("a",)), AddNode("a")])
    with pytest.raises(PipelineError, match="'b' requires pass 'missing'"):
        PassManager[Toy, None]([AddNode("a"), AddNode("b", requires=("missing",))])


def test_requirement_must_be_enabled() -> None:
    pm = PassManager[Toy, None]([AddNode("a"), AddNode("b", requires=("a",))])
    with pytest.raises(ConfigError, match="'b' requires pass 'a', which is disabled"):
        pm.run(Toy(), ctx(disabled=frozenset({"a"})))
    out = pm.run(Toy(), ctx(disabled=frozenset({"a", "b"})))
    assert out.ran == []


def test_requirement_skipped_by_an_instrument_is_an_error() -> None:
    class SkipA(PassInstrument[object]):
        def should_run(self, graph: object, info: PassInfo) -> bool:
            return info.name != "a"

    pm = PassManager[Toy, None]([AddNode("a"), AddNode("b", requires=("a",))])
    with pytest.raises(ConfigError, match="'b' requires pass 'a', which was skipped by"):
        pm.run(Toy(), ctx(instruments=[SkipA()]))


def test_pass_names_must_be_snake_case() -> None:
    with pytest.raises(InternalError, match="snake_case"):
        PassInfo("Fusion-Pass")
    with pytest.raises(InternalError, match="snake_case"):
        PassInfo("ok", requires=("NotOk",))


def test_verify_lints_after_every_pass_with_the_baseline() -> None:
    graph = Toy()
    manager("a", "b").run(graph, ctx(verify=True))
    assert graph.lints == 2
    manager("c").run(graph, ctx())
    assert graph.lints == 2


def test_verify_names_the_pass_that_broke_the_graph() -> None:
    pm = PassManager[Toy, None]([AddNode("a"), Breaker(), AddNode("b")])
    with pytest.raises(PassError) as info:
        pm.run(Toy(), ctx(verify=True))
    err = info.value
    assert (err.pass_name, err.ran_before, err.phase) == ("breaker", ("a",), "lint")
    assert "graph pass 'breaker' left a graph that fails lint" in str(err)
    assert "reads missing node 'nowhere'" in str(err)
    assert "passes run before it: a" in str(err)
    assert isinstance(err.__cause__, ValueError)


def test_verify_passes_the_baseline_to_lint() -> None:
    graph = Toy({"x": [], "y": ["x"]})
    pm = PassManager[Toy, None]([Breaker(drop="y")])
    pm.run(Toy({"x": [], "y": ["x"]}), ctx(verify=True))  # no baseline: only structure
    with pytest.raises(PassError, match=r"original nodes lost: \['y'\]"):
        pm.run(graph, ctx(verify=True), baseline={"x", "y"})


def test_a_failing_pass_is_named_with_the_passes_before_it() -> None:
    pm = PassManager[Toy, None]([AddNode("a"), AddNode("b"), Boom(KeyError("x")), AddNode("c")])
    with pytest.raises(PassError) as info:
        pm.run(Toy(), ctx())
    err = info.value
    assert isinstance(err, InternalError) and not isinstance(err, Tf2NpuError)
    assert str(err) == "graph pass 'boom' failed: KeyError: 'x'; passes run before it: a, b"
    assert err.ran_before == ("a", "b") and err.phase == "run"


def test_a_failing_first_pass_says_nothing_ran_before() -> None:
    with pytest.raises(PassError, match="no passes ran before it"):
        PassManager[Toy, None]([Boom(RuntimeError("bad"))]).run(Toy(), ctx())


def test_user_errors_propagate_unchanged_with_the_pass_as_context() -> None:
    user = ConfigError("iterations_per_loop must be 1 in mixed compute; set it to 1")
    pm = PassManager[Toy, None]([AddNode("a"), Boom(user, name="partition")])
    with pytest.raises(ConfigError) as info:
        pm.run(Toy(), ctx())
    assert info.value is user
    assert str(info.value) == "iterations_per_loop must be 1 in mixed compute; set it to 1"
    assert info.value.__notes__ == ["while running graph pass 'partition'; passes run before it: a"]


def test_registry_builds_pipelines_and_lists_known_names() -> None:
    registry = PassRegistry()

    @registry.register
    class First:
        info = PassInfo("first")

        def run(self, graph: Toy, ctx: PassContext) -> PassResult[Toy]:
            graph.nodes["first"] = []
            return PassResult(graph, changed=True)

    @registry.register
    class Second:
        info = PassInfo("second", requires=("first",))

        def run(self, graph: Toy, ctx: PassContext) -> PassResult[Toy]:
            return PassResult(graph, changed=False)

    assert list(registry) == ["first", "second"] and len(registry) == 2
    pm = PassManager.from_names(["first", "second"], registry)
    out = pm.run(Toy(), ctx())
    assert out.ran == ["first", "second"] and not out.results[1][1].changed
    with pytest.raises(UnknownNameError, match=r"'third'.*: first, second$"):
        PassManager.from_names(["first", "third"], registry)
    with pytest.raises(PipelineError, match="registered twice"):
        registry.register(First)


def test_registry_rejects_classes_without_pass_info() -> None:
    class NoInfo:
        pass

    with pytest.raises(PipelineError, match="no class attribute 'info'"):
        PassRegistry().register(NoInfo)  # type: ignore[type-var]


def test_default_pipeline_order_and_stage_docs() -> None:
    assert DEFAULT_PIPELINE == (
        "device_strings",
        "placement",
        "precision",
        "fusion",
        "inject_faults",
        "partition",
        "lowering",
    )
    assert tuple(STAGES) == DEFAULT_PIPELINE
    assert all(PassInfo(name).name == name for name in DEFAULT_PIPELINE)


def test_a_user_error_from_lint_after_a_pass_is_still_that_pass_s_bug() -> None:
    class StrictToy(Toy):
        def lint(self, baseline: object | None = None) -> None:
            if "dangling" in self.nodes:
                raise ConfigError("node 'dangling' reads missing node 'nowhere'")

    with pytest.raises(PassError, match=r"'breaker' left a graph that fails lint: ConfigError"):
        PassManager[Toy, None]([Breaker()]).run(StrictToy(), ctx(verify=True))

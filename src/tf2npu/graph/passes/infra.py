"""Pass infrastructure: named passes, one ordered pipeline, instruments around them.

After torch.fx ``passes/infra/pass_manager.py`` (a pass returns ``(graph, changed, stats)``;
the manager owns order, checks and error context) and TVM ``ir/transform.py`` /
``ir/instrument.py`` (passes named by stable strings, a context that disables or forces them
by name, dumps and timing as instruments, never code inside passes).

The infra is generic over the graph type (anything with ``lint(baseline)`` will do) and over
the config the passes read (``PassContext[C].config``; the engine's is an ``EngineConfig``).

>>> class Toy:
...     def __init__(self) -> None:
...         self.nodes: list[str] = []
...     def lint(self, baseline: object | None = None) -> None:
...         pass
>>> class AddNode:
...     info = PassInfo("add_node")
...     def run(self, graph: Toy, ctx: PassContext[None]) -> PassResult[Toy]:
...         graph.nodes.append("n")
...         return PassResult(graph, changed=True, stats={"added": 1})
>>> out = PassManager([AddNode()]).run(Toy(), PassContext(config=None, verify=True))
>>> out.graph.nodes, out.stats
(['n'], {'add_node': {'added': 1}})
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from tf2npu.errors import ConfigError, InternalError, Tf2NpuError, UnknownNameError

__all__ = [
    "PASSES",
    "GraphPass",
    "LintableGraph",
    "PassContext",
    "PassError",
    "PassInfo",
    "PassInstrument",
    "PassManager",
    "PassRegistry",
    "PassResult",
    "PipelineError",
    "PipelineResult",
    "build_pipeline",
    "register_pass",
]

_SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")


class LintableGraph(Protocol):
    """What the infra needs from a graph: a consistency check, optionally against a baseline."""

    def lint(self, baseline: object | None = None) -> None: ...


G = TypeVar("G", bound=LintableGraph)
Phase = Literal["run", "lint"]
G_contra = TypeVar("G_contra", contravariant=True)
#: The config a pipeline's passes read besides the graph (opaque to the infra).
C = TypeVar("C")


@dataclass(frozen=True)
class PassInfo:
    """A pass's stable name, the passes that must run before it, and whether it is on by default."""

    name: str
    requires: tuple[str, ...] = ()
    default_enabled: bool = True
    description: str = ""

    def __post_init__(self) -> None:
        for name in (self.name, *self.requires):
            if not _SNAKE_CASE.fullmatch(name):
                raise InternalError(f"pass name {name!r} is not snake_case")


@dataclass(frozen=True)
class PassResult(Generic[G]):
    """What a pass returns: the (possibly same, mutated) graph, whether it changed, its counters."""

    graph: G
    changed: bool
    stats: Mapping[str, int | float] = field(default_factory=dict)


class PassInstrument(Generic[G_contra]):
    """Hooks around every pass; the defaults do nothing (TVM ``PassInstrument``).

    ``should_run`` may veto a pass (it is then recorded as skipped); ``before`` and ``after``
    bracket a pass that runs; ``on_error`` sees a pass (or its lint) fail before the error
    propagates. ``check_names`` lets an instrument reject pass names the pipeline lacks.
    """

    def check_names(self, known: Sequence[str]) -> None:
        """Raise :class:`UnknownNameError` for a configured pass name not in ``known``."""

    def should_run(self, graph: G_contra, info: PassInfo) -> bool:
        return True

    def before(self, graph: G_contra, info: PassInfo) -> None:
        """Called just before ``info``'s pass runs."""

    def after(self, graph: G_contra, info: PassInfo, result: PassResult[Any]) -> None:
        """Called after the pass ran (and, with ``verify``, after its lint passed)."""

    def on_error(self, graph: G_contra, info: PassInfo, exc: BaseException) -> None:
        """Called when the pass or its lint raised; the error propagates afterwards."""


@dataclass(frozen=True)
class PassContext(Generic[C]):
    """Everything a run needs besides the graph (TVM ``PassContext``).

    ``config`` is opaque here: passes read it, the infra does not (the engine's passes take a
    ``PassContext[EngineConfig]``). ``disabled`` beats ``forced`` beats each pass's
    ``default_enabled``.
    """

    config: C
    disabled: frozenset[str] = frozenset()
    forced: frozenset[str] = frozenset()
    instruments: Sequence[PassInstrument[Any]] = ()
    verify: bool = False

    def is_enabled(self, info: PassInfo) -> bool:
        if info.name in self.disabled:
            return False
        if info.name in self.forced:
            return True
        return info.default_enabled

    def disabled_reason(self, info: PassInfo) -> str:
        """Why ``is_enabled(info)`` is false (only meaningful when it is)."""
        if info.name in self.disabled:
            return "disabled by the pass context"
        return "disabled by default"


class GraphPass(Protocol[G, C]):
    """A named graph transformation; it may mutate the graph in place and return it."""

    @property
    def info(self) -> PassInfo: ...

    def run(self, graph: G, ctx: PassContext[C]) -> PassResult[G]: ...


class PipelineError(InternalError):
    """A pipeline that cannot be built: duplicate names, a requirement out of order."""


class PassError(InternalError):
    """A pass (or the lint after it) failed: a bug. Names the pass and those that ran before."""

    def __init__(self, pass_name: str, ran_before: Sequence[str], phase: Phase, cause: str) -> None:
        self.pass_name = pass_name
        self.ran_before = tuple(ran_before)
        self.phase = phase
        what = "failed" if phase == "run" else "left a graph that fails lint"
        super().__init__(f"graph pass {pass_name!r} {what}: {cause}; {_ran(ran_before)}")


def _ran(names: Sequence[str]) -> str:
    if not names:
        return "no passes ran before it"
    return "passes run before it: " + ", ".join(names)


@dataclass
class PipelineResult(Generic[G]):
    """The final graph, each pass that ran with its result, and each skipped pass with why."""

    graph: G
    results: list[tuple[str, PassResult[G]]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ran(self) -> list[str]:
        return [name for name, _ in self.results]

    @property
    def changed(self) -> bool:
        return any(result.changed for _, result in self.results)

    @property
    def stats(self) -> dict[str, dict[str, int | float]]:
        """Per pass that ran, its counters (``{"fusion": {"matmul_biasadd": 3}, ...}``)."""
        return {name: dict(result.stats) for name, result in self.results}


class PassManager(Generic[G, C]):
    """Runs one ordered pipeline of passes under a :class:`PassContext`."""

    def __init__(self, pipeline: Sequence[GraphPass[G, C]]) -> None:
        self.pipeline = tuple(pipeline)
        _check_structure(self.pipeline)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.info.name for p in self.pipeline)

    @classmethod
    def from_names(
        cls, names: Sequence[str], registry: PassRegistry | None = None
    ) -> PassManager[Any, Any]:
        """A manager over fresh instances of the registered passes ``names``, in that order."""
        return PassManager(build_pipeline(names, PASSES if registry is None else registry))

    def check_context(self, ctx: PassContext[C]) -> None:
        """Reject unknown pass names and enabled passes whose requirements are off."""
        for name in sorted(ctx.disabled | ctx.forced):
            if name not in self.names:
                raise UnknownNameError("pass", name, self.names)
        for instrument in ctx.instruments:
            instrument.check_names(self.names)
        enabled = {p.info.name for p in self.pipeline if ctx.is_enabled(p.info)}
        for p in self.pipeline:
            if p.info.name not in enabled:
                continue
            for required in p.info.requires:
                if required not in enabled:
                    raise ConfigError(
                        f"graph pass {p.info.name!r} requires pass {required!r}, which is "
                        f"disabled; enable {required!r} or disable {p.info.name!r} too"
                    )

    def run(
        self, graph: G, ctx: PassContext[C], baseline: object | None = None
    ) -> PipelineResult[G]:
        """Run every enabled pass in order; ``baseline`` is handed to ``graph.lint``."""
        self.check_context(ctx)
        out = PipelineResult(graph)
        for p in self.pipeline:
            reason = self._skip_reason(out, p.info, ctx)
            if reason is not None:
                out.skipped.append((p.info.name, reason))
                continue
            result = self._run_one(p, out, ctx, baseline)
            out.results.append((p.info.name, result))
            out.graph = result.graph
        return out

    def _skip_reason(
        self, out: PipelineResult[G], info: PassInfo, ctx: PassContext[C]
    ) -> str | None:
        if not ctx.is_enabled(info):
            return ctx.disabled_reason(info)
        for instrument in ctx.instruments:
            if not instrument.should_run(out.graph, info):
                return f"skipped by instrument {type(instrument).__name__}"
        skipped = dict(out.skipped)
        for required in info.requires:
            if required in skipped:
                raise ConfigError(
                    f"graph pass {info.name!r} requires pass {required!r}, which was "
                    f"{skipped[required]}; run {required!r} or skip {info.name!r} too"
                )
        return None

    def _run_one(
        self,
        p: GraphPass[G, C],
        out: PipelineResult[G],
        ctx: PassContext[C],
        baseline: object | None,
    ) -> PassResult[G]:
        info, graph = p.info, out.graph
        for instrument in ctx.instruments:
            instrument.before(graph, info)
        try:
            result = p.run(graph, ctx)
        except Tf2NpuError as exc:
            _notify_error(ctx, graph, info, exc)
            exc.add_note(f"while running graph pass {info.name!r}; {_ran(out.ran)}")
            raise
        except Exception as exc:
            _notify_error(ctx, graph, info, exc)
            raise PassError(info.name, out.ran, "run", _describe(exc)) from exc
        if ctx.verify:
            _lint_after(result.graph, info, out.ran, ctx, baseline)
        for instrument in ctx.instruments:
            instrument.after(result.graph, info, result)
        return result


def _lint_after(
    graph: LintableGraph,
    info: PassInfo,
    ran: Sequence[str],
    ctx: PassContext[Any],
    baseline: object | None,
) -> None:
    """Lint the graph a pass left; any failure, even a GraphError, is that pass's bug."""
    try:
        graph.lint(baseline)
    except Exception as exc:
        _notify_error(ctx, graph, info, exc)
        raise PassError(info.name, ran, "lint", _describe(exc)) from exc


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _notify_error(ctx: PassContext[Any], graph: object, info: PassInfo, exc: BaseException) -> None:
    for instrument in ctx.instruments:
        instrument.on_error(graph, info, exc)


def _check_structure(pipeline: Sequence[GraphPass[Any, Any]]) -> None:
    seen: list[str] = []
    for p in pipeline:
        name = p.info.name
        if name in seen:
            raise PipelineError(f"graph pass {name!r} appears twice in the pipeline")
        for required in p.info.requires:
            if required not in seen:
                raise PipelineError(
                    f"graph pass {name!r} requires pass {required!r}, which does not run "
                    f"before it in the pipeline ({', '.join(seen) or 'nothing runs before it'})"
                )
        seen.append(name)


PassFactory = Callable[[], GraphPass[Any, Any]]
F = TypeVar("F", bound=PassFactory)


class PassRegistry(Mapping[str, PassFactory]):
    """Pass classes (or factories) by pass name; unknown names list the known ones."""

    def __init__(self) -> None:
        self._factories: dict[str, PassFactory] = {}

    def register(self, factory: F) -> F:
        """Class decorator: register a pass class under its class attribute ``info.name``."""
        info = getattr(factory, "info", None)
        if not isinstance(info, PassInfo):
            raise PipelineError(f"{factory!r} has no class attribute 'info' holding a PassInfo")
        name = info.name
        if name in self._factories:
            raise PipelineError(f"graph pass {name!r} is registered twice")
        self._factories[name] = factory
        return factory

    def __getitem__(self, name: str) -> PassFactory:
        try:
            return self._factories[name]
        except KeyError:
            raise UnknownNameError("pass", name, tuple(self._factories)) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)


def build_pipeline(names: Sequence[str], registry: PassRegistry) -> list[GraphPass[Any, Any]]:
    """Fresh instances of the registered passes ``names``, in that order."""
    return [registry[name]() for name in names]


PASSES = PassRegistry()
register_pass = PASSES.register

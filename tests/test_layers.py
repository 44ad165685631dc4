"""The layering of docs/design.md: imports point down, so import cycles stay small.

Every import counts, those inside functions included (a deferred import is a dependency all the
same); only ``if TYPE_CHECKING:`` imports are left out. The bound is the largest cycle today and
only goes down: the target is 5 (issue 21). The cycles that remain are listed in docs/design.md.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Mapping, Set
from pathlib import Path

import tf2npu

SRC = Path(tf2npu.__file__).parent
LARGEST_CYCLE = 4
"""The IR with its proto form and lint (4 modules); lower it when a cycle is cut."""


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(n) for n in ast.walk(node))
    return inside


@functools.cache
def import_graph() -> dict[str, frozenset[str]]:
    """Module -> the tf2npu modules it imports (a ``from P import m`` of a submodule is m);
    parsed once per test session (every test of this file reads the same tree)."""
    modules = _modules()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package
                    for _ in range(node.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            for target in targets:
                found = known(target)
                if found is not None and found != name:
                    edges[name].add(found)
    return {name: frozenset(targets) for name, targets in edges.items()}


def cycles(edges: Mapping[str, Set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:  # iterative: the graph is deep enough to hit recursion limits
        nonlocal counter
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for name in sorted(set(edges) | {m for targets in edges.values() for m in targets}):
        if name not in index:
            visit(name)
    return sorted(found, key=len, reverse=True)


def test_cycles_finds_a_cycle_and_leaves_a_chain_alone() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}}) == []


def test_import_graph_counts_deferred_imports_and_not_type_checking_ones() -> None:
    edges = import_graph()
    # the IR imports its lint inside methods only; it is an edge all the same
    assert "tf2npu.graph.lint" in edges["tf2npu.graph.ir"]


def _in(module: str, *packages: str) -> bool:
    """Whether ``module`` is one of ``packages`` or inside one (``tf2npu.cli`` is not
    ``tf2npu.client``)."""
    return any(module == p or module.startswith(p + ".") for p in packages)


def _upward(layer: str, above: tuple[str, ...]) -> list[str]:
    """The imports from ``layer`` into any of the packages ``above`` it."""
    return sorted(
        f"{a} -> {b}"
        for a, targets in import_graph().items()
        if _in(a, layer)
        for b in targets
        if _in(b, *above)
    )


def test_in_tells_a_package_from_one_whose_name_it_starts() -> None:
    assert _in("tf2npu.cli.run", "tf2npu.cli") and _in("tf2npu.cli", "tf2npu.cli")
    assert not _in("tf2npu.client.ops", "tf2npu.cli")


def test_the_graph_engine_imports_nothing_of_the_layers_above_it() -> None:
    above = ("tf2npu.client", "tf2npu.runtime", "tf2npu.cli", "tf2npu.debug")
    assert _upward("tf2npu.graph", above) == []


def test_the_client_of_npu_ops_imports_nothing_of_the_layers_above_it() -> None:
    assert _upward("tf2npu.client", ("tf2npu.runtime", "tf2npu.cli", "tf2npu.debug")) == []


def test_no_import_cycle_is_larger_than_today() -> None:
    found = cycles(import_graph())
    assert [len(c) for c in found if len(c) > LARGEST_CYCLE] == [], found[0]


def test_artifacts_and_config_import_nothing_above_them() -> None:
    edges = import_graph()
    below = ("tf2npu.artifacts", "tf2npu.config", "tf2npu.errors", "tf2npu.fs", "tf2npu.atomic")
    below += ("tf2npu.dtypes",)
    upward = sorted(
        f"{a} -> {b}"
        for a, targets in edges.items()
        if a.startswith(("tf2npu.artifacts", "tf2npu.config"))
        for b in targets
        if not b.startswith(below)
    )
    assert upward == []


def test_the_sessions_and_their_interception_import_no_instrument_of_a_feature() -> None:
    # Multi-rank is the DistributedInstrument (docs/design.md, "A run is a value"): session.py
    # maps runs into the mirror, and neither it nor the hook nor intercept.py grows per feature.
    edges = import_graph()
    sessions = ("tf2npu.runtime.session", "tf2npu.runtime.intercept", "tf2npu.runtime.hook")
    found = sorted(
        f"{a} -> {b}"
        for a in sessions
        for b in edges.get(a, ())
        if b.startswith("tf2npu.runtime.distributed")
    )
    assert found == []


def test_the_runtime_imports_nothing_of_the_command_line() -> None:
    # A run is a value the CLI hands down (runtime/job.py): the exit codes it returns live
    # below both, in tf2npu/exit_codes.py.
    assert _upward("tf2npu.runtime", ("tf2npu.cli",)) == []


def test_the_runtime_imports_of_the_debugging_tools_only_the_profiles_analysis() -> None:
    # The formats the runtime writes and the tools read live below both (tf2npu/artifacts/). The
    # one call up is the profile's analysis when the run ends, as msprof exports its tables when
    # a device run ends: the run instrument writes the raw files, then has them analysed.
    assert _upward("tf2npu.runtime", ("tf2npu.debug",)) == [
        "tf2npu.runtime.profile -> tf2npu.debug.profile.report"
    ]

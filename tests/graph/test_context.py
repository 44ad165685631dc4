"""EngineConfig lives below the engine: passes and their helpers never import the orchestrator."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tf2npu.graph

GRAPH = Path(tf2npu.graph.__file__).parent
#: Packages below the engine: the passes it runs and the helpers those passes call.
BELOW_ENGINE = ("passes", "placement", "precision", "partition", "fusion")
ENGINE = "tf2npu.graph.engine"


def imports_engine(source: str) -> list[int]:
    """The line numbers of ``source`` that import :mod:`tf2npu.graph.engine` (or a name in it)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        if any(name == ENGINE or name.startswith(ENGINE + ".") for name in names):
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("from tf2npu.graph.engine import EngineRun\n", [1]),
        ("import tf2npu.graph.engine\n", [1]),
        ("x = 1\nfrom tf2npu.graph import engine\n", [2]),
        ("from tf2npu.graph.context import EngineConfig\n", []),
        ("from tf2npu.graph import engines, ir\nimport tf2npu.graph.engineering\n", []),
    ],
)
def test_imports_engine_finds_every_spelling(source: str, lines: list[int]) -> None:
    assert imports_engine(source) == lines


@pytest.mark.slow
def test_no_pass_or_helper_imports_the_engine() -> None:
    modules = sorted(p for package in BELOW_ENGINE for p in (GRAPH / package).rglob("*.py"))
    assert GRAPH / "passes" / "precision.py" in modules  # the scan sees the packages
    assert GRAPH / "fusion" / "rules" / "gelu_tanh.py" in modules  # and their subpackages
    offenders = {
        str(path.relative_to(GRAPH)): found
        for path in modules
        if (found := imports_engine(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, f"import EngineConfig from tf2npu.graph.context instead: {offenders}"

"""Meta-test: an option marked "honoured" is read by the engine or runtime; the rest are reported.

:attr:`Effect.HONOURED` means "the graph engine or runtime acts on the value", so every such
option must be read in ``src/tf2npu/graph/`` or ``src/tf2npu/runtime/``. A read is found in the
code's syntax tree, never in its text, so a docstring or comment naming the option does not count:

* an attribute load ``<expr>.<name>`` where ``<expr>`` is not ``self`` (a class reading its own
  field of the same name is not reading the options), e.g. ``options.dump_path``,
  ``cfg.options.mix_compile_mode``;
* ``<expr>.get("<name>")`` with the name as a string literal;
* a load of an :class:`NpuOptions` property or method (``effective_precision_mode``) counts for
  every option that property reads from ``self`` (``precision_mode``, ``precision_mode_v2``,
  ``graph_run_mode``).

``config/`` (which defines and checks the options) and ``npu_bridge`` (which passes them through)
are never searched. Every other option must show up in :attr:`NpuOptions.no_effect` when set.

Expected failures while issue 11 is being built: the dump options (``enable_dump``,
``dump_path``, ``dump_step``, ``dump_mode``, ``enable_dump_debug``, ``dump_debug_mode``,
``dump_data``, ``dump_layer``) are read by ``src/tf2npu/runtime/dump.py``, which is written on
another branch; on a branch without it, exactly those eight fail here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import pytest

from tf2npu.config import options as options_module
from tf2npu.config.options import OPTIONS, ROWS, Effect, NpuOptions, Value

SRC = Path(__file__).resolve().parents[2] / "src" / "tf2npu"
READER_PACKAGES = ("graph", "runtime")
"""Where the engine and runtime live: the only places an honoured option may be read."""

HONOURED = sorted(spec.name for spec in ROWS if spec.effect is Effect.HONOURED)
NO_EFFECT = sorted(spec.name for spec in ROWS if spec.effect is Effect.NO_EFFECT_HERE)


def reads(tree: ast.AST, names: Iterable[str]) -> set[str]:
    """Which of ``names`` ``tree`` reads as an attribute of something other than ``self``."""
    wanted = set(names)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            is_self = isinstance(node.value, ast.Name) and node.value.id == "self"
            if node.attr in wanted and not is_self:
                found.add(node.attr)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in wanted
        ):
            found.add(str(node.args[0].value))
    return found


def self_reads(function: ast.AST) -> set[str]:
    """The ``self.<attr>`` loads in ``function``."""
    return {
        node.attr
        for node in ast.walk(function)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }


@cache
def derived_readers() -> dict[str, frozenset[str]]:
    """Each :class:`NpuOptions` method or property -> the options it reads from ``self``."""
    tree = ast.parse(Path(str(options_module.__file__)).read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "NpuOptions"]
    derived = {}
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name != "get":
            used = frozenset(self_reads(item) & set(OPTIONS))
            if used:
                derived[item.name] = used
    return derived


@cache
def options_read() -> dict[str, list[str]]:
    """Each option read in the reader packages -> the files that read it (relative to src/)."""
    names = set(OPTIONS) | set(derived_readers())
    found: dict[str, list[str]] = {}
    files = sorted(f for package in READER_PACKAGES for f in (SRC / package).rglob("*.py"))
    assert len(files) > 50, f"the search found only {len(files)} files under {SRC}"
    for path in files:
        where = str(path.relative_to(SRC.parent))
        for name in reads(ast.parse(path.read_text(encoding="utf-8")), names):
            for option in derived_readers().get(name, {name}):
                found.setdefault(option, []).append(where)
    return found


@pytest.mark.parametrize("name", HONOURED)
def test_every_honoured_option_is_read_by_the_engine_or_the_runtime(name: str) -> None:
    assert name in options_read(), (
        f"option {name!r} is marked honoured but nothing in src/tf2npu/graph or "
        f"src/tf2npu/runtime reads it; read it there, or mark it _off with the reason"
    )


@pytest.mark.parametrize("name", NO_EFFECT)
def test_every_other_option_set_by_the_user_is_reported_as_no_effect(name: str) -> None:
    options = NpuOptions.from_values({name: example(name)})
    assert options.no_effect == (name,)


@pytest.mark.parametrize("name", HONOURED)
def test_a_honoured_option_set_by_the_user_is_not_reported(name: str) -> None:
    assert NpuOptions.from_values({name: example(name)}).no_effect == ()


def example(name: str) -> Value:
    """A value of the option's kind, other than the default where the kind allows."""
    spec = OPTIONS[name]
    if isinstance(spec.allowed, tuple):
        return spec.allowed[-1]
    return {"b": not spec.default, "i": 1, "s": "x"}[spec.kind]


# -- the search itself ----------------------------------------------------------------------------


def test_the_search_counts_reads_and_ignores_docstrings_self_and_stores() -> None:
    code = '''
"""options.dump_path in a docstring"""
class Dumper:
    def __init__(self, options):
        # options.dump_mode in a comment
        self.dump_step = options.get("dump_step")
        self.enable_dump = True
        options.dump_layer = "set, not read"
        use(self.dump_data, cfg.options.mix_compile_mode, options.effective_precision_mode)
'''
    names = {"dump_path", "dump_mode", "dump_step", "enable_dump", "dump_layer", "dump_data"}
    names |= {"mix_compile_mode", "effective_precision_mode"}
    got = reads(ast.parse(code), names)
    assert got == {"dump_step", "mix_compile_mode", "effective_precision_mode"}


def test_properties_of_npu_options_stand_for_the_options_they_read() -> None:
    derived = derived_readers()
    assert derived["effective_precision_mode"] == {
        "precision_mode",
        "precision_mode_v2",
        "graph_run_mode",
    }
    assert derived["is_mixed_precision"] == {"precision_mode", "precision_mode_v2"}


def test_the_lists_are_not_empty() -> None:
    assert len(HONOURED) >= 10
    assert len(NO_EFFECT) >= 80
    assert "runtime/loop.py" in " ".join(options_read()["iterations_per_loop"])

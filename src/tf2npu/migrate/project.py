"""Facts about the whole source tree that the per-file rules need.

Files are migrated independently (in parallel workers), so a fact that lives in one file and
matters in others is collected here first, before any file is migrated, and handed to every
file through :class:`~tf2npu.migrate.options.MigrateOptions`.

Today's one fact: *Horovod holders*. NVIDIA's ConvNets keep the Horovod module in a global of a
project module (``utils/hvd_wrapper.py``: ``hvd_global_object = hvd``) and use it elsewhere as
``hvd.hvd_global_object.DistributedOptimizer(...)``; only the holder's own file shows that the
global is Horovod.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from tf2npu.gcpause import gc_paused
from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.names import canonical, statements
from tf2npu.migrate.source import SourceError, SourceFile

MAX_BYTES = 4 * 1024 * 1024
"""Files above this size are not read for project facts (the engine does not migrate them)."""


def horovod_holders(files: Iterable[tuple[str, Path]]) -> tuple[str, ...]:
    """``<module path>.<global>=<canonical prefix>`` for every global holding a Horovod module.

    ``files`` are ``(path relative to SRC, path to read)``; ``utils/hvd_wrapper.py`` holding
    ``horovod.tensorflow`` in ``hvd_global_object`` gives
    ``utils.hvd_wrapper.hvd_global_object=hvd``. Unreadable or unparsable files are skipped
    (the migration reports them on its own). The cyclic collector is paused as for a file's
    migration (:mod:`tf2npu.gcpause`): the pass parses and indexes files and frees no cycles,
    and its collections rescanned those trees (6 ms of the 57 ms pass on the benchmark corpus).
    """
    with gc_paused():
        return _horovod_holders(files)


def _horovod_holders(files: Iterable[tuple[str, Path]]) -> tuple[str, ...]:
    found: list[str] = []
    for rel, path in files:
        if not rel.endswith(".py"):
            continue
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            raw = path.read_bytes()
        except OSError:
            continue
        if b"horovod" not in raw:
            continue
        try:
            parsed = parse(raw, rel)
        except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        index = (
            ModuleIndex.build(parsed.tree, parsed.source.text) if has_aliases(parsed.tree) else None
        )
        if index is not None:
            parsed = Parsed(parsed.source, parsed.tree, index)
        _parsed[raw] = parsed
        module = module_path(rel)
        found += [
            f"{module}.{name}={prefix}" for name, prefix in module_holders(parsed.tree, index)
        ]
    return tuple(sorted(set(found)))


@dataclass(frozen=True, slots=True)
class Parsed:
    """A file as the engine reads it: decoded, parsed, and indexed when that was needed."""

    source: SourceFile
    tree: ast.Module
    index: ModuleIndex | None = None


def parse(raw: bytes, path: str) -> Parsed:
    """Decode and parse ``raw`` as the engine does (its one way to read a file)."""
    source = SourceFile.decode(raw)
    return Parsed(source, ast.parse(source.text, filename=path, type_comments=False))


_parsed: dict[bytes, Parsed] = {}
"""What :func:`horovod_holders` read, for the same file's migration in this process to take
instead of reading it again (a worker process finds nothing here and reads the file)."""


def take_parsed(raw: bytes) -> Parsed | None:
    """The project pass's reading of a file with exactly these bytes, once."""
    return _parsed.pop(raw, None)


def forget_parsed() -> None:
    """Drop what no file took (the run is over, or its files went to worker processes)."""
    _parsed.clear()


def has_aliases(tree: ast.Module) -> bool:
    """Whether the module has an ``a = b`` anywhere (the only way to hold Horovod)."""
    return any(_name_to_name(node) for node in statements(tree))


def module_path(rel: str) -> str:
    """``pkg/mod.py`` -> ``pkg.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = rel[: -len(".py")].split("/")
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def module_holders(tree: ast.Module, index: ModuleIndex | None = None) -> list[tuple[str, str]]:
    """``(global name, canonical prefix)`` for module globals assigned a Horovod module.

    The assignment may be at module level or in a function that declares the name ``global``.
    ``index`` is the tree's index when the caller has one already.
    """
    aliases = [stmt for stmt in statements(tree) if _name_to_name(stmt)]
    if not aliases:  # most files: no `a = b` at all, so no index to build for them
        return []
    index = index if index is not None else ModuleIndex.build(tree)
    resolver = index.resolver
    found: dict[str, str] = {}
    for stmt in aliases:
        target, value = stmt.targets[0], stmt.value
        assert isinstance(target, ast.Name) and isinstance(value, ast.Name)
        scope = index.scope_at(stmt)
        if scope is not resolver.module and target.id not in scope.globals:
            continue
        path = resolver.resolve_name(value.id, scope)
        prefix = canonical(path) if path is not None else ""
        if prefix in ("hvd", "hvd.keras"):
            found[target.id] = prefix
    return sorted(found.items())


def _name_to_name(node: ast.AST) -> TypeGuard[ast.Assign]:
    """``a = b``: one plain name assigned another (the only holder assignments looked for)."""
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Name)
    )

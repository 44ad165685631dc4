"""Serve the TF 1.15-era paths of :mod:`.table` on TF 2.15.

A :class:`MovedFinder` first on ``sys.meta_path`` does two things:

* for a module path TF 2.15 dropped, it returns a :class:`MovedModule` view whose names
  resolve, on first use, in the module that holds them now;
* for a module TF 2.15 still has but with names missing, it loads the real module and adds a
  module ``__getattr__`` (PEP 562) that resolves those names, or refuses them with advice.

Neither touches TensorFlow's files: both act on module objects in this process only.
:func:`install_attributes` adds the renamed private attributes as read-only aliases.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

from tf2npu.compat.errors import MovedImportError
from tf2npu.compat.moved import table


def _resolve(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


class MovedModuleView(types.ModuleType):
    """A dropped module path; its names are looked up in the module that has them now."""

    def __init__(self, entry: table.MovedModule) -> None:
        super().__init__(entry.path, f"{entry.path} under tf2npu run: {entry.note}.")
        self._tf2npu_entry = entry

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name.startswith("_tf2npu_"):
            raise AttributeError(name)
        target = importlib.import_module(self._tf2npu_entry.target)
        try:
            value = getattr(target, name)
        except AttributeError:
            raise MovedImportError(
                f"{self.__name__}.{name} does not exist under tf2npu run: this module is "
                f"{self._tf2npu_entry.note} ({self._tf2npu_entry.target}), which has no "
                f"{name!r}; find its TF 2.15 name in the keras/TensorFlow API docs",
                name=self.__name__) from None
        setattr(self, name, value)  # cache: later lookups skip __getattr__
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(importlib.import_module(
            self._tf2npu_entry.target))))


def add_names(module: types.ModuleType) -> None:
    """Give ``module`` (a real TF 2.15 module) the TF 1.15 names :data:`table.NAMES` lists."""
    names = table.NAMES[module.__name__]
    previous: Callable[[str], Any] | None = module.__dict__.get("__getattr__")

    def __getattr__(name: str) -> Any:
        if name not in names:
            if previous is not None:
                return previous(name)
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
        target = names[name]
        if target is None:
            raise MovedImportError(table.advice_for_name(module.__name__, name),
                                   name=module.__name__)
        value = _resolve(target)
        setattr(module, name, value)
        return value

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module._tf2npu_moved_names = True  # type: ignore[attr-defined]


class _AddNamesLoader(importlib.abc.Loader):
    """Loads the real module, then adds the names TF 2.15 dropped from it."""

    def __init__(self, real: importlib.abc.Loader) -> None:
        self._real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._real.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._real.exec_module(module)
        add_names(module)


class _ViewLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        entry = table.moved_module(spec.name)
        assert entry is not None  # MovedFinder only hands out specs for table entries
        return MovedModuleView(entry)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds :mod:`.table`'s paths; every other import goes on to the normal finders."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        moved = table.moved_module(fullname) is not None
        if not moved and fullname not in table.NAMES:
            return None
        real = importlib.machinery.PathFinder.find_spec(fullname, path)
        if real is None or real.loader is None:
            return importlib.machinery.ModuleSpec(fullname, _ViewLoader()) if moved else None
        if fullname in table.NAMES:
            real.loader = _AddNamesLoader(real.loader)
        return real  # a module that exists after all is used as it is


class _RenamedAttribute:
    """Non-data descriptor: ``obj.<old>`` reads ``obj.<new>`` unless ``obj`` set ``<old>``."""

    def __init__(self, new: str) -> None:
        self.new = new

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self
        if ":" in self.new:
            return _resolve(self.new)(obj)
        return getattr(obj, self.new)


def install_attributes() -> list[tuple[type, str]]:
    """Add :data:`table.ATTRIBUTES` to their classes; returns what was added (to undo)."""
    added: list[tuple[type, str]] = []
    for entry in table.ATTRIBUTES:
        module_name, _, class_name = entry.owner.partition(":")
        module = sys.modules.get(module_name)
        cls = getattr(module, class_name, None) if module is not None else None
        if isinstance(cls, type) and entry.old not in cls.__dict__:
            setattr(cls, entry.old, _RenamedAttribute(entry.new))
            added.append((cls, entry.old))
    return added


def install_names_on_loaded() -> None:
    """Add :data:`table.NAMES` to those modules that are imported already."""
    for name in table.NAMES:
        module = sys.modules.get(name)
        if module is not None and "_tf2npu_moved_names" not in module.__dict__:
            add_names(module)

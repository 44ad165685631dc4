"""Serve the TF 1.15-era paths of :mod:`.table` on TF 2.15.

A :class:`MovedFinder` first on ``sys.meta_path`` does two things:

* for a module path TF 2.15 dropped, it returns a :class:`MovedModule` view whose names
  resolve, on first use, in the module that holds them now;
* a module that does exist is left to the normal finders.

:func:`package_entries` gives the ``sys.modules`` entries that serve a package TF 2.15 keeps
as a different object (``tensorflow.python.keras``), and :func:`install_attributes` adds the
renamed private attributes as read-only aliases. Nothing touches TensorFlow's files: all of
it acts on module and class objects in this process only.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Sequence
from typing import Any

from tf2npu.compat.errors import ContribAttributeError, MovedImportError
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
        except ContribAttributeError:
            raise  # the target's own refusal, with its advice
        except AttributeError:
            raise MovedImportError(
                f"{self.__name__}.{name} does not exist under tf2npu run: this module is "
                f"{self._tf2npu_entry.note} ({self._tf2npu_entry.target}), which has no "
                f"{name!r}; find its TF 2.15 name in the keras/TensorFlow API docs",
                name=self.__name__,
            ) from None
        setattr(self, name, value)  # cache: later lookups skip __getattr__
        return value

    def __dir__(self) -> list[str]:
        return sorted(
            set(super().__dir__()) | set(dir(importlib.import_module(self._tf2npu_entry.target)))
        )


class ContribParent(types.ModuleType):
    """``tensorflow.contrib.<m>[.python...]`` above a served path: its other names get advice."""

    def __init__(self, name: str) -> None:
        super().__init__(name, f"{name}: only the internal modules tf2npu run serves.")
        self.__path__: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        from tf2npu.compat.contrib import table as contrib_table

        short = self.__name__.split(".")[2]
        raise ContribAttributeError(contrib_table.advice_for(short, name))


class _ViewLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if table.is_contrib_parent(spec.name):
            return ContribParent(spec.name)
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
        if table.is_contrib_parent(fullname):
            return importlib.machinery.ModuleSpec(fullname, _ViewLoader(), is_package=True)
        if table.moved_module(fullname) is None:
            return None
        real = importlib.machinery.PathFinder.find_spec(fullname, path)
        if real is not None and real.loader is not None:
            return real  # a module that exists after all is used as it is
        return importlib.machinery.ModuleSpec(fullname, _ViewLoader())


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


class AliasedPackageView(types.ModuleType):
    """A package whose names come from an API module first, then from the package itself.

    Its ``__path__`` stays the real package's, so private submodules still import from it.
    """

    def __init__(self, real: types.ModuleType, api: types.ModuleType, note: str) -> None:
        super().__init__(real.__name__, f"{real.__name__} under tf2npu run: {note}.")
        self.__path__ = list(getattr(real, "__path__", []))
        self.__file__ = real.__file__
        self._tf2npu_real = real
        self._tf2npu_api = api

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_tf2npu_"):
            raise AttributeError(name)
        if not name.startswith("__") and hasattr(self._tf2npu_api, name):
            return getattr(self._tf2npu_api, name)
        return getattr(self._tf2npu_real, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._tf2npu_api)) | set(dir(self._tf2npu_real)))


MISSING = object()
"""Stands for "the module had no such attribute" in what :func:`install_module_attributes`
returns."""


def install_module_attributes() -> list[tuple[types.ModuleType, str, object]]:
    """Set :data:`table.MODULE_ATTRIBUTES`; returns ``(module, name, previous)`` to undo.

    ``previous`` is :data:`MISSING` where the module had no such attribute.
    """
    done: list[tuple[types.ModuleType, str, object]] = []
    for entry in table.MODULE_ATTRIBUTES:
        module = importlib.import_module(entry.module)
        if ":" in entry.target:
            value = _resolve(entry.target)
        else:
            value = importlib.import_module(entry.target)
        done.append((module, entry.name, module.__dict__.get(entry.name, MISSING)))
        setattr(module, entry.name, value)
    return done


def uninstall_module_attributes(done: list[tuple[types.ModuleType, str, object]]) -> None:
    """Undo :func:`install_module_attributes`."""
    for module, name, previous in reversed(done):
        if previous is MISSING:
            delattr(module, name)
        else:
            setattr(module, name, previous)


def package_entries() -> dict[str, types.ModuleType]:
    """``sys.modules`` entries serving :data:`table.PACKAGES` (the package, its submodules).

    :data:`table.BOUND_BEFORE_ALIAS` is imported first, so TF 2.15's own layer modules keep
    binding its own copy of the package.
    """
    for name in table.BOUND_BEFORE_ALIAS:
        importlib.import_module(name)
    entries: dict[str, types.ModuleType] = {}
    for entry in table.PACKAGES:
        real = importlib.import_module(entry.path)
        api = importlib.import_module("tensorflow")
        for part in entry.target[len("tf.") :].split("."):
            api = getattr(api, part)
        entries[entry.path] = AliasedPackageView(real, api, entry.note)
        for name in dir(api):
            value = getattr(api, name)
            if not name.startswith("_") and isinstance(value, types.ModuleType):
                path = f"{entry.path}.{name}"
                entries[path] = _with_private_submodules(path, value, real, name)
                # ``import keras.layers.core as core`` reads ``core`` from the package
                # attribute, which must be the entry the import system added ``core`` to.
                setattr(entries[entry.path], name, entries[path])
    return entries


class ApiPackageView(types.ModuleType):
    """An API module whose private submodules import from the real package of the same path.

    TF 2.15's own copy under ``tensorflow.python.keras`` imports
    ``tensorflow.python.keras.mixed_precision.autocast_variable`` when
    ``tensorflow.python.layers.core.Dense`` is first built: its names come from the API module
    (``tf.compat.v1.keras.mixed_precision``), its ``__path__`` adds the real package's folder.
    """

    def __init__(self, name: str, api: types.ModuleType, path: list[str]) -> None:
        super().__init__(name, api.__doc__)
        self.__path__ = path
        self._tf2npu_api = api

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_tf2npu_"):
            raise AttributeError(name)
        return getattr(self._tf2npu_api, name)

    def __dir__(self) -> list[str]:
        return dir(self._tf2npu_api)


def _with_private_submodules(
    path: str, api: types.ModuleType, real: types.ModuleType, name: str
) -> types.ModuleType:
    """``api``, or a :class:`ApiPackageView` of it when ``real`` has a package ``name``.

    The view searches the API module's folders first (``keras.layers.experimental`` stays the
    v1 API's), then the real package's.
    """
    folders = [os.path.join(folder, name) for folder in getattr(real, "__path__", [])]
    found = [folder for folder in folders if os.path.isfile(os.path.join(folder, "__init__.py"))]
    if not found:
        return api
    return ApiPackageView(path, api, [*getattr(api, "__path__", []), *found])

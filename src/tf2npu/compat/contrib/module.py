"""Module objects for ``tensorflow.contrib`` and its submodules, built from the table.

Each provided submodule is a real module object registered in ``sys.modules`` under
``tensorflow.contrib.<name>``, so ``import tensorflow.contrib.layers``,
``from tensorflow.contrib import tpu`` and ``tf.contrib.data.map_and_batch`` all work. Its
attributes resolve lazily (on first use) to the targets in :mod:`.table`, which keeps
activation cheap and imports TF 2.15 pieces only when a script touches them. A finder on
``sys.meta_path`` turns imports of anything else under ``tensorflow.contrib`` into a
:class:`ContribImportError` that says what to do instead.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence
from typing import Any

from tf2npu.compat.contrib import table
from tf2npu.compat.errors import ContribAttributeError, ContribImportError

PREFIX = "tensorflow.contrib"


def resolve(target: str) -> Any:
    """The object a table target names: ``tf.a.b`` (attribute walk) or ``pkg.mod:attr``."""
    if target.startswith("tf."):
        obj: Any = importlib.import_module("tensorflow")
        path = target[len("tf.") :]
    else:
        module_name, _, path = target.partition(":")
        obj = importlib.import_module(module_name)
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


class ContribSubmodule(types.ModuleType):
    """``tensorflow.contrib.<name>``: provided names resolve lazily; others raise with advice."""

    def __init__(self, short: str) -> None:
        super().__init__(f"{PREFIX}.{short}", f"tf.contrib.{short} as provided by tf2npu run.")
        self._tf2npu_short = short
        self._tf2npu_symbols = table.symbols_of(short)
        # A package, so `import tensorflow.contrib.layers.python...` reaches ContribFinder
        # (which explains) instead of failing with "is not a package".
        self.__path__: list[str] = []
        self.__all__ = sorted(self._tf2npu_symbols)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name.startswith("_tf2npu_"):
            raise AttributeError(name)
        sym = self._tf2npu_symbols.get(name)
        if sym is None:
            raise ContribAttributeError(table.advice_for(self._tf2npu_short, name))
        value = resolve(sym.target)
        setattr(self, name, value)  # cache: later lookups skip __getattr__
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._tf2npu_symbols))


#: ``tensorflow.contrib.<m>.<...>.<name>`` for each name an internal-path view just refused:
#: ``from <view> import <name>`` then asks the finders for it as a submodule, and the finder
#: answers with the public path's advice instead of a module.
_REFUSED: set[str] = set()


class InternalPathView(types.ModuleType):
    """``tensorflow.contrib.<m>.python[...]``, TF 1.15's internal path: the names of
    ``tf.contrib.<m>`` that tf2npu provides (a superset of what that file held), and the
    public path's advice for the others."""

    def __init__(self, fullname: str, short: str) -> None:
        super().__init__(fullname, f"{fullname}: tf.contrib.{short}'s names under tf2npu run.")
        self.__path__: list[str] = []  # deeper internal paths import as views too
        self._tf2npu_short = short

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name.startswith("_tf2npu_"):
            raise AttributeError(name)
        short = self._tf2npu_short
        module = sys.modules.get(f"{PREFIX}.{short}") or ContribSubmodule(short)
        try:
            return getattr(module, name)
        except ContribAttributeError:
            _REFUSED.add(f"{self.__name__}.{name}")
            raise

    def __setattr__(self, name: str, value: Any) -> None:
        # The import system sets each imported child module on its parent; a child that is
        # also a provided name (``...framework.python.ops.arg_scope``, module and function in
        # TF 1.15) must not hide the function.
        if name in table.symbols_of(self.__dict__.get("_tf2npu_short", "")):
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(table.symbols_of(self._tf2npu_short)))


class ContribPackage(types.ModuleType):
    """``tensorflow.contrib``: the provided submodules; any other name raises with advice."""

    def __init__(self, submodules: dict[str, ContribSubmodule]) -> None:
        super().__init__(PREFIX, "tf.contrib as provided by tf2npu run (see docs/tf1-compat.md).")
        self.__path__: list[str] = []  # a package, so `import tensorflow.contrib.x` is tried
        for short, module in submodules.items():
            setattr(self, short, module)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if table.alias_of(name) is not None:
            try:
                return importlib.import_module(f"{PREFIX}.{name}")
            except ContribImportError as err:
                raise ContribAttributeError(str(err)) from None
        raise ContribAttributeError(table.advice_for(name, None))


class ContribFinder(importlib.abc.MetaPathFinder):
    """Refuses ``tensorflow.contrib.*`` imports that the table does not provide, with advice.

    Provided modules are in ``sys.modules`` already and never reach a finder.
    """

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(PREFIX + "."):
            return None
        parts = fullname[len(PREFIX) + 1 :].split(".")
        alias = table.alias_of(parts[0])
        if alias is not None:
            return _alias_spec(fullname, ".".join([alias.package, *parts[1:]]), alias.package)
        if parts[0] in table.provided_modules():
            return _provided_module_path(fullname, parts)
        raise ContribImportError(table.advice_for(parts[0], None), name=fullname)


def _provided_module_path(fullname: str, parts: list[str]) -> importlib.machinery.ModuleSpec:
    """A path below a provided contrib module: an internal path (``.python...``), a provided
    name that is a module (``learn.datasets``), or a name tf2npu lacks (advice)."""
    short, name = parts[0], parts[-1]
    if fullname in _REFUSED:
        raise ContribImportError(table.advice_for(short, name), name=fullname)
    if parts[1] == "python":
        return importlib.machinery.ModuleSpec(fullname, _InternalLoader(short), is_package=True)
    value: Any = importlib.import_module(f"{PREFIX}.{short}")
    for part in parts[1:]:
        try:
            value = getattr(value, part)
        except ContribAttributeError:
            raise ContribImportError(table.advice_for(short, part), name=fullname) from None
    if not isinstance(value, types.ModuleType):
        raise ContribImportError(
            f"{fullname} is not a module: it is tf.contrib.{short}.{'.'.join(parts[1:])}; "
            f"use `from tensorflow.contrib.{short} import {parts[1]}`",
            name=fullname,
        )
    return importlib.machinery.ModuleSpec(fullname, _AliasLoader(value))


class _InternalLoader(importlib.abc.Loader):
    def __init__(self, short: str) -> None:
        self._short = short

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return InternalPathView(spec.name, self._short)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _AliasLoader(importlib.abc.Loader):
    """Hands an already imported module to the import system under a second name."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self._module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def _alias_spec(fullname: str, real: str, package: str) -> importlib.machinery.ModuleSpec:
    """A spec importing ``real`` as ``fullname``; missing package → advice to install it."""
    try:
        module = importlib.import_module(real)
    except ModuleNotFoundError as err:
        if err.name is None or err.name.partition(".")[0] != package:
            raise
        short = fullname[len(PREFIX) + 1 :].split(".")[0]
        raise ContribImportError(table.advice_for(short, None), name=fullname) from None
    return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module))


def build() -> dict[str, types.ModuleType]:
    """The ``sys.modules`` entries for ``tensorflow.contrib`` and its provided submodules."""
    subs = {short: ContribSubmodule(short) for short in table.provided_modules()}
    entries: dict[str, types.ModuleType] = {PREFIX: ContribPackage(subs)}
    entries.update({f"{PREFIX}.{short}": mod for short, mod in subs.items()})
    return entries

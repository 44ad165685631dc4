"""Import ``precision_tool`` from tf2npu only when the script's ``sys.path`` has no copy of it.

:func:`fallback_imports` appends a :class:`FallbackFinder` to the *end* of ``sys.meta_path``
while the script runs. Python asks it only after the normal path finder has searched every
``sys.path`` entry, including the script's directory and entries the script adds later, so a
real ``precision_tool/`` the user copied anywhere there always wins. On the way out the finder
is removed and our modules leave ``sys.modules``, so a later script in the same process finds
its own copy again.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Iterator, Sequence
from pathlib import Path

SHIMS_DIR = Path(__file__).resolve().parent
"""The directory holding the stand-in packages (and this module)."""

PACKAGES = frozenset({"precision_tool"})
"""Top-level names served from :data:`SHIMS_DIR` when nothing else provides them."""


class FallbackFinder(importlib.abc.MetaPathFinder):
    """Finds the top-level :data:`PACKAGES` in :data:`SHIMS_DIR`; nothing else."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if path is not None or fullname not in PACKAGES:
            return None  # submodules are found through the package's own __path__
        return importlib.machinery.PathFinder.find_spec(fullname, [str(SHIMS_DIR)])


@contextlib.contextmanager
def fallback_imports() -> Iterator[None]:
    """Inside ``with fallback_imports():``, :data:`PACKAGES` import as a last resort.

    Example:
        >>> with fallback_imports():
        ...     import precision_tool
        >>> precision_tool.__name__, "precision_tool" in sys.modules
        ('precision_tool', False)
    """
    finder = FallbackFinder()
    sys.meta_path.append(finder)
    try:
        yield
    finally:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        for name in [name for name, module in sys.modules.items() if _is_ours(name, module)]:
            del sys.modules[name]


def _is_ours(name: str, module: types.ModuleType | None) -> bool:
    """Whether ``sys.modules[name]`` is one of our stand-ins (not the user's real copy)."""
    top = name.partition(".")[0]
    if top not in PACKAGES:
        return False
    origin = getattr(getattr(module, "__spec__", None), "origin", None)
    if not isinstance(origin, str):
        return False
    return Path(os.path.realpath(origin)).is_relative_to(SHIMS_DIR / top)

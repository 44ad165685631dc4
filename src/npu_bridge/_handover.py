"""Never shadow a real Ascend ``npu_bridge``: hand the import over to it.

tf2npu installs a package named ``npu_bridge`` so that migrated scripts run without the Ascend
software. On a machine that also has Huawei's TF Adapter installed, ``import npu_bridge`` must
keep meaning the real adapter (it drives the NPU; ours only emulates it), whatever the order of
``sys.path``. The real package is recognised by its compiled adapter library
(``_tf_adapter*.so`` or ``tf_adapter*.so``) next to its ``__init__.py``.

:func:`hand_over` runs first thing in our ``__init__``: if such a package exists elsewhere on
``sys.path`` it is executed under the name ``npu_bridge`` and put into ``sys.modules`` in place
of ours. Python's import statement returns ``sys.modules[name]`` after running a package's
``__init__``, so ``import npu_bridge`` then yields the real module, and its submodules are found
through the real package's ``__path__``. CANN's ``hccl`` package is handed over the same way
(:mod:`hccl`).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["find_real_adapter", "hand_over"]

_LIBRARY_PATTERNS = ("_tf_adapter*.so", "tf_adapter*.so")


def _is_real_adapter(package: Path) -> bool:
    if not (package / "__init__.py").is_file():
        return False
    return any(any(package.glob(pattern)) for pattern in _LIBRARY_PATTERNS)


def find_real_adapter(
    own_package: Path,
    search_path: list[str],
    name: str = "npu_bridge",
    is_real: Callable[[Path], bool] = _is_real_adapter,
) -> Path | None:
    """The first ``name`` package directory on ``search_path`` that ``is_real`` accepts.

    ``own_package`` (our package directory) is skipped; an empty entry means the current
    directory, as for the import system.
    """
    own = own_package.resolve()
    for entry in search_path:
        candidate = Path(entry or ".") / name
        try:
            if candidate.resolve() == own or not candidate.is_dir():
                continue
        except OSError:  # unreadable or vanished path entries are skipped, as imports do
            continue
        if is_real(candidate):
            return candidate
    return None


def hand_over(
    own_package: Path,
    name: str = "npu_bridge",
    is_real: Callable[[Path], bool] = _is_real_adapter,
) -> bool:
    """Replace ``sys.modules[name]`` by the real package when one is installed.

    Returns True when it handed over (the caller must then stop initialising itself).
    Errors raised while importing the real package propagate: they are the real package's.
    """
    real = find_real_adapter(own_package, sys.path, name, is_real)
    if real is None:
        return False
    spec = importlib.util.spec_from_file_location(
        name, real / "__init__.py", submodule_search_locations=[str(real)]
    )
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has a loader
        return False
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return True

"""Errors a session raises at run time, and where in the user's code a failing op was made."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from tf2npu.errors import Tf2NpuError

__all__ = [
    "LIBRARY_PACKAGES",
    "LoopError",
    "created_at",
    "first_created_at",
    "is_library_file",
    "library_roots",
]

#: Top-level packages whose frames are never "the user's code" in a run-time error.
LIBRARY_PACKAGES = (
    "tensorflow",
    "keras",
    "tf_keras",
    "tensorflow_estimator",
    "tf2npu",
    "npu_bridge",
    "hccl",
    "precision_tool",
)


class LoopError(Tf2NpuError):
    """``iterations_per_loop`` > 1 is used where the adapter cannot offload the loop."""


def created_at(op: Any) -> str:
    """``file:line in function`` of the user's code that created ``op`` ("" if unknown).

    The innermost frame of the op's creation stack that is not library code: a layer built by
    Keras inside the user's model names the user's line that called Keras.
    """
    try:
        frames = list(op.traceback)
    except Exception:  # an op imported from a GraphDef has no creation stack
        return ""
    roots = library_roots()
    for frame in reversed(frames):
        filename = str(frame.filename)
        if not is_library_file(filename, roots):
            return f"{filename}:{frame.lineno} in {frame.name}"
    return ""


def first_created_at(graph: Any, names: Sequence[str]) -> str:
    """:func:`created_at` of the first of ``names`` that is an op of the client ``graph``."""
    for name in names:
        try:
            return created_at(graph.get_operation_by_name(name))
        except (KeyError, ValueError):
            continue
    return ""


def is_library_file(filename: str, roots: tuple[str, ...] | None = None) -> bool:
    """Whether ``filename`` lies inside one of :data:`LIBRARY_PACKAGES` as loaded.

    Compared with the packages' real folders (symlinks resolved), not by a name in the path:
    a script under ``~/work/keras/`` or in a clone of this repository named ``tf2npu`` is the
    user's code. ``<string>`` and other pseudo files are not library files.
    """
    if filename.startswith("<"):
        return False
    path = os.path.realpath(filename)
    return any(path.startswith(root) for root in roots or library_roots())


def library_roots() -> tuple[str, ...]:
    """The folders of the loaded :data:`LIBRARY_PACKAGES`, resolved, each ending in a separator.

    Read from the modules' own ``__name__`` and ``__file__``, not from ``sys.modules`` keys or
    ``find_spec``: ``tf2npu run`` puts the v1 API module under the key ``tensorflow``, and a
    folder named like a package beside the script would be found on ``sys.path``.
    """
    roots: dict[str, str] = {}
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", None)
        top = name.partition(".")[0] if isinstance(name, str) else ""
        if top not in LIBRARY_PACKAGES or top in roots:
            continue
        root = _package_folder(name, getattr(module, "__file__", None))  # type: ignore[arg-type]
        if root is not None:
            roots[top] = root
            if len(roots) == len(LIBRARY_PACKAGES):
                break
    return tuple(roots.values())


def _package_folder(name: str, file: object) -> str | None:
    """The top-level package folder of module ``name`` loaded from ``file``."""
    if not isinstance(file, str) or not file:
        return None
    folder = os.path.dirname(os.path.realpath(file))
    ups = name.count(".") - (0 if os.path.basename(file).startswith("__init__.") else 1)
    if ups < 0:  # a top-level single-file module, not a package
        return None
    for _ in range(ups):
        folder = os.path.dirname(folder)
    return os.path.join(folder, "")

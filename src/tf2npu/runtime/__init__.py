"""The runtime adapter: sessions whose config carries ``NpuOptimizer`` run through the engine.

:func:`install` hooks ``Session.__new__`` so such a session becomes an
:class:`~tf2npu.runtime.session.NpuSession`; every other session stays stock. Settings for all
NPU sessions (``--option`` overrides, ``--no-npu``, execution mode) are a
:class:`~tf2npu.runtime.settings.RuntimeSettings`; what they did is counted in a
:class:`~tf2npu.runtime.stats.RunStats`; both are held by the context in force
(:mod:`tf2npu.runtime.context`, which also has :func:`configure` and :func:`run_stats`).
See ``docs/runtime.md``.
"""

from tf2npu.runtime.context import (
    RuntimeContext,
    configure,
    context,
    current,
    reset_stats,
    run_stats,
)
from tf2npu.runtime.settings import DEFAULT_EXECUTION, EXECUTION_MODES, RuntimeSettings
from tf2npu.runtime.stats import RunStats

__all__ = [
    "DEFAULT_EXECUTION",
    "EXECUTION_MODES",
    "RunStats",
    "RuntimeContext",
    "RuntimeSettings",
    "configure",
    "context",
    "current",
    "install",
    "is_installed",
    "make_sessions_npu_by_default",
    "reset_stats",
    "run_stats",
    "uninstall",
]


def install() -> None:
    """Hook TensorFlow's session classes (idempotent). Imports TensorFlow."""
    from tf2npu.runtime.hook import install as _install

    _install()


def uninstall() -> None:
    """Undo :func:`install` (tests)."""
    from tf2npu.runtime.hook import uninstall as _uninstall

    _uninstall()


def is_installed() -> bool:
    """Whether the session hook is in place."""
    from tf2npu.runtime.hook import is_installed as _is_installed

    return _is_installed()


def make_sessions_npu_by_default(enabled: bool = True) -> None:
    """The latest ``npu_init`` side effect: sessions created without ``NpuOptimizer`` get it.

    The latest adapter wraps ``Session.__init__`` so every session's config is normalised like
    ``npu_config_proto`` (an ``NpuOptimizer`` entry added when none exists). Here the hook
    applies the same normalisation before it picks the session class. Installs the hook.
    """
    from tf2npu.runtime.hook import install as _install
    from tf2npu.runtime.hook import set_npu_by_default

    _install()
    set_npu_by_default(enabled)

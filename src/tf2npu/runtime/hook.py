"""Choosing the session class at construction: the hook on ``Session.__new__``.

TensorFlow's ``session.py`` names its own classes inside ``super()`` calls, so rebinding
``tf.Session`` to a subclass recurses forever, and it would miss names bound before the swap.
Hooking ``__new__`` instead covers every way a session is made (``tf.Session``,
``tf.compat.v1.Session``, ``MonitoredTrainingSession``, Estimator, Keras ``set_session``) and
leaves every class name untouched: ``isinstance(sess, tf.compat.v1.Session)`` still holds.

A session becomes an :class:`~tf2npu.runtime.session.NpuSession` when its config carries a
custom optimizer named ``NpuOptimizer`` (or, after ``npu_init``'s side effect, always), unless
``--no-npu`` is in force. Subclasses of ``Session`` (our own, a user's) are never swapped.
"""

from __future__ import annotations

import threading
from typing import Any

from tf2npu.config.sources import NPU_OPTIMIZER
from tf2npu.runtime import intercept
from tf2npu.runtime.context import context
from tf2npu.runtime.instruments import SessionInfo

__all__ = [
    "NPU_OPTIMIZER",
    "has_npu_optimizer",
    "install",
    "is_installed",
    "set_npu_by_default",
    "uninstall",
]

_lock = threading.Lock()
_STOCK: list[Any] = []
"""``Session`` and ``InteractiveSession`` (filled by :func:`install`)."""
_BASE_INIT: list[Any] = []
"""``BaseSession.__init__`` as TensorFlow defines it (filled by :func:`install`)."""
_state = {"installed": False}


def install() -> None:
    """Hook ``Session.__new__`` and ``InteractiveSession.__new__`` (idempotent)."""
    from tensorflow.python.client import session as session_lib

    with _lock:
        if _state["installed"]:
            return
        _STOCK[:] = [session_lib.Session, session_lib.InteractiveSession]
        for cls in _STOCK:
            cls.__new__ = staticmethod(_new)
        _BASE_INIT[:] = [session_lib.BaseSession.__init__]
        session_lib.BaseSession.__init__ = _base_init
        intercept.install()
        _state["installed"] = True


def uninstall() -> None:
    """Make every session stock again (tests); NPU-by-default is switched off too.

    The session classes define no ``__new__`` of their own; deleting ours would leave
    CPython's slot pointing at a "user-defined" ``__new__`` that rejects arguments, so a plain
    ``object.__new__`` call takes its place.
    """
    from tensorflow.python.client import session as session_lib

    with _lock:
        if not _state["installed"]:
            return
        for cls in (session_lib.Session, session_lib.InteractiveSession):
            cls.__new__ = staticmethod(_stock_new)
        session_lib.BaseSession.__init__ = _BASE_INIT.pop()
        intercept.uninstall()
        _state["installed"] = False
        context().npu_by_default = False


def is_installed() -> bool:
    """Whether the hook is in place."""
    return _state["installed"]


def set_npu_by_default(enabled: bool) -> None:
    """Whether sessions without ``NpuOptimizer`` become NPU sessions (``npu_init``'s effect)."""
    context().npu_by_default = enabled


def npu_by_default() -> bool:
    return context().npu_by_default


def has_npu_optimizer(config: Any) -> bool:
    """Whether ``config`` (a ``ConfigProto`` or None) lists the ``NpuOptimizer`` optimizer."""
    if config is None:
        return False
    try:
        optimizers = config.graph_options.rewrite_options.custom_optimizers
    except AttributeError:
        return False
    return any(optimizer.name == NPU_OPTIMIZER for optimizer in optimizers)


def _base_init(self: Any, target: str = "", graph: Any = None, config: Any = None) -> None:
    """``BaseSession.__init__``; a stock session the hook made runs where its instruments set
    (:meth:`~tf2npu.runtime.intercept.Interception.session_target`: a multi-rank job's server),
    and every session runs its ops in the caller's thread while determinism is asked
    (:meth:`~tf2npu.runtime.determinism.Determinism.session_config`)."""
    interception = intercept.interception_of(self)
    if interception is not None:
        target, config = interception.session_target(target, config)
    _BASE_INIT[0](self, target, graph, context().determinism.session_config(config, target))


def _stock_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    return object.__new__(cls)


def _new(cls: type, *args: Any, **kwargs: Any) -> Any:
    picked = _pick(cls, args, kwargs)
    session: Any = object.__new__(picked)
    if picked in _STOCK:  # its runs reach the instruments (runtime.intercept)
        _mark_stock(session, args, kwargs)
    return session


def _mark_stock(session: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Announce a stock session to the instruments and have its runs reach them."""
    from tensorflow.python.framework import ops

    graph = kwargs.get("graph", args[1] if len(args) > 1 else None)
    if graph is None:  # what BaseSession.__init__ will use
        graph = ops.get_default_graph()
    ctx = context()
    info = SessionInfo(ctx.next_session_key(), False, graph, reader=intercept.reader(session))
    intercept.mark(session, intercept.Interception(ctx, info, ctx.instruments))


def _pick(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> type:
    from tensorflow.python.client import session as session_lib

    from tf2npu.runtime.session import NpuInteractiveSession, NpuSession

    swaps = {session_lib.Session: NpuSession, session_lib.InteractiveSession: NpuInteractiveSession}
    if cls not in swaps:
        return cls
    config = kwargs.get("config", args[2] if len(args) > 2 else None)
    ctx = context()
    npu = ctx.settings.npu and (has_npu_optimizer(config) or ctx.npu_by_default)
    return swaps[cls] if npu else cls

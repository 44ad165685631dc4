"""Make ``import tensorflow`` give a TF 2.15 script the TF 1.15 API it was written for.

:func:`activate` does three things, once per process:

1. ``tf.compat.v1.disable_v2_behavior()``. In TF 2.15 this turns off eager execution, v2
   control flow (``cond``/``while_loop`` build Switch/Merge/Enter... again), resource variables
   by default (``tf.get_variable`` makes reference ``VariableV2`` ops again), v2 TensorShape
   (``shape[i]`` is a ``Dimension``) and v2 tensor equality, and it selects the v1 ``tf.data``
   and summary APIs: exactly TF 1.15's defaults.
2. Imports the packages whose modules say ``import tensorflow as tf`` and expect the TF 2
   API (the Estimator, including its TPU part, and Keras) *before* the swap below, so that
   they keep binding the real TensorFlow module.
3. Replaces ``sys.modules["tensorflow"]`` by a module whose attributes are those of
   ``tf.compat.v1`` plus ``contrib``. Its ``__path__`` stays the real package path, so
   ``tensorflow.python...`` and ``tensorflow.core...`` imports work unchanged;
   ``tensorflow.compat.v1`` is that same module, so ``import tensorflow.compat.v1 as tf``
   also sees ``tf.contrib`` (as TF 1.15's did), and ``tensorflow.<api>`` entries
   (``tensorflow.keras``, ``tensorflow.train``...) point at the v1 API modules.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from tf2npu.compat.contrib import module as contrib_module
from tf2npu.compat.moved import module as moved_module

_SWAPPED = ("tensorflow", "tensorflow.compat", "tensorflow.compat.v1")


class _State:
    """What :func:`deactivate` restores. One instance per process."""

    active = False
    saved: dict[str, types.ModuleType | None] = {}  # noqa: RUF012 - replaced, never mutated
    finder: contrib_module.ContribFinder | None = None
    moved_finder: moved_module.MovedFinder | None = None
    attributes: list[tuple[type, str]] = []  # noqa: RUF012 - replaced, never mutated
    module_attributes: list[tuple[types.ModuleType, str, object]] = []  # noqa: RUF012
    v2_was_enabled = True


class Tf1Module(types.ModuleType):
    """The ``tensorflow`` module under ``tf2npu run``: the TF 1.15 view of TF 2.15."""

    def __init__(self, real: types.ModuleType, v1: Any, contrib: types.ModuleType) -> None:
        super().__init__("tensorflow", real.__doc__)
        self.__path__ = list(real.__path__)
        self.__file__ = real.__file__
        self.__spec__ = real.__spec__
        self.__version__ = real.__version__
        self.contrib = contrib
        self.compat = _CompatModule(real.compat, self)
        self._tf2npu_v1 = v1

    def __getattr__(self, name: str) -> Any:
        if name == "_tf2npu_v1":
            raise AttributeError(name)
        try:
            return getattr(self._tf2npu_v1, name)
        except AttributeError:
            pass
        # TF 1.15 left its imported subpackages (tf.python, tf.core) reachable as attributes.
        sub = sys.modules.get(f"tensorflow.{name}")
        if sub is not None and not name.startswith("_"):
            return sub
        raise AttributeError(
            f"module 'tensorflow' has no attribute {name!r} (under tf2npu run it is "
            f"TF 2.15's tf.compat.v1 plus tf.contrib; see docs/tf1-compat.md)"
        )

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(self._tf2npu_v1)))


class _CompatModule(types.ModuleType):
    """``tensorflow.compat`` whose ``v1`` is the TF 1.15 view; everything else is TF 2.15's."""

    def __init__(self, real_compat: types.ModuleType, tf1: Tf1Module) -> None:
        super().__init__("tensorflow.compat", real_compat.__doc__)
        self.__path__ = list(getattr(real_compat, "__path__", []))
        self.__spec__ = real_compat.__spec__
        self.v1 = tf1
        self._tf2npu_real = real_compat

    def __getattr__(self, name: str) -> Any:
        if name == "_tf2npu_real":
            raise AttributeError(name)
        return getattr(self._tf2npu_real, name)


def _preload(v1: Any) -> None:
    """Import modules that use the TF 2 API while ``tensorflow`` is still the real module."""
    _ = v1.estimator.Estimator, v1.estimator.tpu.TPUEstimator
    _ = v1.keras.layers.Dense, v1.layers.Dense, v1.nn.rnn_cell.LSTMCell
    import tensorflow.python.ops.lookup_ops
    import tensorflow.python.ops.summary_ops_v2  # noqa: F401


def _api_aliases(v1: Any) -> dict[str, types.ModuleType]:
    """``sys.modules`` entries making ``import tensorflow.<api>`` give the v1 API module.

    The real package path also holds TF 2.15's v2 API directories (``tensorflow/_api/v2``,
    ``keras/api/_v2``, the v2 Estimator API). Without these entries ``import tensorflow.train``
    or ``from tensorflow.keras import layers`` would import the v2 module and, worse, Python
    would then set it as ``tf.train``/``tf.keras`` on the TF1 module. Names that are real
    packages already imported (``tensorflow.lite``, ``tensorflow.distribute``) stay as they are.
    """
    aliases: dict[str, types.ModuleType] = {}
    for name in dir(v1):
        if name.startswith("_") or name in ("compat", "contrib"):
            continue
        api = getattr(v1, name)
        key = f"tensorflow.{name}"
        if not isinstance(api, types.ModuleType) or key in sys.modules:
            continue
        aliases[key] = api
        prefix = f"{api.__name__}."
        for loaded, module in list(sys.modules.items()):
            if loaded.startswith(prefix) and module is not None:
                aliases.setdefault(f"{key}.{loaded[len(prefix) :]}", module)
    return aliases


def activate() -> None:
    """Give scripts run after this call the TF 1.15 environment; a second call does nothing.

    Example:
        >>> activate()
        >>> import tensorflow as tf
        >>> tf.contrib.layers.layer_norm  # doctest: +ELLIPSIS
        <function layer_norm at ...>
    """
    if _State.active:
        return
    import tensorflow as real_tf
    from tensorflow.python import tf2
    from tensorflow.python.util import deprecation

    v1 = real_tf.compat.v1
    _State.v2_was_enabled = tf2.enabled()
    with deprecation.silence():  # TF 1.15 printed no "non-resource variables" warning
        v1.disable_v2_behavior()
    _preload(v1)
    contrib_entries = contrib_module.build()
    tf1 = Tf1Module(real_tf, v1, contrib_entries[contrib_module.PREFIX])
    added = {**_api_aliases(v1), **contrib_entries, **moved_module.package_entries()}
    _State.saved = {name: sys.modules.get(name) for name in (*_SWAPPED, *added)}
    sys.modules.update(added)
    sys.modules["tensorflow"] = tf1
    sys.modules["tensorflow.compat"] = tf1.compat
    sys.modules["tensorflow.compat.v1"] = tf1
    _State.finder = contrib_module.ContribFinder()
    sys.meta_path.insert(0, _State.finder)
    # TF 1.15-era module paths TF 2.15 dropped (keras.layers.merge, ...ops.threadpool).
    _State.moved_finder = moved_module.MovedFinder()
    sys.meta_path.insert(0, _State.moved_finder)
    _State.attributes = moved_module.install_attributes()
    _State.module_attributes = moved_module.install_module_attributes()
    _State.active = True


def deactivate() -> None:
    """Undo :func:`activate` (for tests; scripts run under tf2npu never call it).

    Restores the swapped ``sys.modules`` entries and removes the contrib modules and finder.
    v2 behaviour is re-enabled only if it was enabled before :func:`activate`. Modules a script
    imported meanwhile keep the ``tf`` they bound, so prefer running tests in a subprocess.
    """
    if not _State.active:
        return
    for name, previous in _State.saved.items():
        if previous is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous
    for name in [n for n in sys.modules if n.startswith(contrib_module.PREFIX + ".")]:
        del sys.modules[name]  # aliases imported later (tensorflow.contrib.slim → tf_slim)
    for finder in (_State.finder, _State.moved_finder):
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
    for cls, attr in _State.attributes:
        delattr(cls, attr)
    moved_module.uninstall_module_attributes(_State.module_attributes)
    if _State.v2_was_enabled:
        sys.modules["tensorflow"].compat.v1.enable_v2_behavior()
    _State.saved, _State.finder, _State.active = {}, None, False
    _State.moved_finder, _State.attributes, _State.module_attributes = None, [], []


def is_active() -> bool:
    """Whether :func:`activate` is in force in this process."""
    return _State.active

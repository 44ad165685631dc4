"""``TF2NPU_DROPOUT_OFF=1``: every dropout the script builds keeps every element.

Two runs of a script with dropout draw different masks unless both draw from one seeded
generator in one order, and an original and its migration never do: ``tf.nn.dropout`` becomes
``npu_ops.dropout``, whose mask op draws differently. ``tf2npu verify --dropout-off`` therefore
runs both scripts with dropout switched off, as if each call said ``rate=0`` / ``keep_prob=1``:

* ``tf.nn.dropout`` (v1 and v2 API) returns its input;
* Keras ``Dropout`` layers (and ``tf.layers.dropout``, ``SpatialDropout*``, which build one)
  get ``rate=0``, so their ``call`` is the identity;
* ``npu_ops.dropout`` and ``npu_aicore_ops.dropout_v3`` return their input.

Installed before the script runs (:func:`install`), so the graph is built without dropout: no
random op is created, and the rest of the graph is the same in both scripts.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from typing import Any

from tf2npu.config.env import DROPOUT_OFF_ENV
from tf2npu.errors import UsageError

__all__ = ["DROPOUT_OFF_ENV", "dropout_off_from_env", "install", "uninstall"]

_SAVED: dict[tuple[Any, str], Any] = {}
_FUNCTIONS = (
    ("tensorflow", "compat.v1.nn", "dropout"),
    ("tensorflow", "compat.v2.nn", "dropout"),
    ("tensorflow", "nn", "dropout"),  # what `import tensorflow as tf` gives the script
    ("npu_bridge.estimator.npu_ops", "", "dropout"),
    ("npu_bridge.estimator.npu_aicore_ops", "", "dropout_v3"),
)
"""(module to import, attribute path in it, function). Attributes, not ``import_module``:
importing ``tensorflow.nn`` would bind the v2 ``nn`` over the script's v1 ``tf.nn``."""


def dropout_off_from_env(env: Mapping[str, str]) -> bool:
    """Whether ``TF2NPU_DROPOUT_OFF`` asks for it (``1``; unset, empty or ``0``: no).

    Raises:
        UsageError: any other value.
    """
    value = env.get(DROPOUT_OFF_ENV, "").strip()
    if value not in ("", "0", "1"):
        raise UsageError(
            f"{DROPOUT_OFF_ENV}={value!r}: use 1 to switch every dropout off, 0 or unset not to"
        )
    return value == "1"


def install() -> list[str]:
    """Switch dropout off (idempotent); returns what was replaced, as ``module.name``."""
    replaced = []
    for module_name, path, name in _FUNCTIONS:
        module = functools.reduce(getattr, path.split(".") if path else [], _load(module_name))
        if (module, name) in _SAVED or not hasattr(module, name):
            continue
        original = getattr(module, name)
        _SAVED[(module, name)] = original
        setattr(module, name, _identity(original))
        replaced.append(".".join(filter(None, (module_name, path, name))))
    replaced += _keras_rate_zero()
    return replaced


def _load(name: str) -> Any:
    return importlib.import_module(name)


def _identity(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def dropout(x: Any, *args: Any, **kwargs: Any) -> Any:
        return x

    return dropout


def _keras_rate_zero() -> list[str]:
    from keras.src.layers.regularization import dropout as keras_dropout

    cls = keras_dropout.Dropout
    if (cls, "__init__") in _SAVED:
        return []
    original = cls.__init__
    _SAVED[(cls, "__init__")] = original

    @functools.wraps(original)
    def init(self: Any, rate: Any, *args: Any, **kwargs: Any) -> None:
        original(self, 0.0, *args, **kwargs)

    cls.__init__ = init
    return ["keras Dropout(rate=...)"]


def uninstall() -> None:
    """Put every replaced function back (tests)."""
    for (owner, name), original in _SAVED.items():
        setattr(owner, name, original)
    _SAVED.clear()

"""``tf.contrib.framework.nest``: TF 1.15's ``tensorflow.python.util.nest`` on TF 2.15.

TF 1.15's contrib exported the whole private nest module, ``is_sequence`` included (NMT's GNMT
cell calls ``tf.contrib.framework.nest.is_sequence``). TF 2.15 keeps that module with the
function renamed ``is_nested``; ``tf.compat.v1.nest`` has only five of its names. :data:`NEST`
is a module with every public name of TF 2.15's ``tensorflow.python.util.nest`` plus TF 1.15's
``is_sequence``, the same function as ``is_nested``.
"""

from __future__ import annotations

import types

from tensorflow.python.util import nest as _nest


def _build() -> types.ModuleType:
    module = types.ModuleType("tensorflow.contrib.framework.nest", __doc__)
    for name in dir(_nest):
        if not name.startswith("_"):
            setattr(module, name, getattr(_nest, name))
    module.is_sequence = _nest.is_nested  # type: ignore[attr-defined]
    return module


NEST = _build()

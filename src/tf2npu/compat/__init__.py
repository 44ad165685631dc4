"""The TF 1.15 environment that ``tf2npu run`` gives a script on TF 2.15.

:func:`activate` makes ``import tensorflow`` yield the v1 API with v2 behaviour disabled and
adds a ``tf.contrib`` whose common symbols resolve to TF 2.15 equivalents (see
``docs/tf1-compat.md``). This package imports TensorFlow only inside :func:`activate`, so
importing it stays cheap and TF-free.
"""

from __future__ import annotations

from tf2npu.compat.errors import ContribAttributeError, ContribImportError, MovedImportError
from tf2npu.compat.tf1 import activate, deactivate, is_active

__all__ = [
    "ContribAttributeError",
    "ContribImportError",
    "MovedImportError",
    "activate",
    "deactivate",
    "is_active",
]

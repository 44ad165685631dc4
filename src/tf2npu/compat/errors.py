"""Errors raised for ``tf.contrib`` symbols that ``tf2npu run`` does not provide.

Two classes because Python asks two different questions: attribute access must raise an
``AttributeError`` (so ``hasattr(tf.contrib.layers, "batch_norm")`` answers False instead of
crashing), and ``import tensorflow.contrib.slim`` must raise an ``ImportError`` (so
``try: import ... except ImportError`` fallbacks in scripts keep working). Both are also
:class:`Tf2NpuError`, so ``tf2npu run`` prints the advice without a traceback.
"""

from __future__ import annotations

from tf2npu.errors import Tf2NpuError


class ContribAttributeError(Tf2NpuError, AttributeError):
    """``tf.contrib.<module>.<name>`` (or ``tf.contrib.<module>``) that is not provided."""


class ContribImportError(Tf2NpuError, ImportError):
    """``import tensorflow.contrib.<module>`` of a module that is not provided."""


class MovedImportError(Tf2NpuError, ImportError):
    """A TF 1.15-era private path or name (``tensorflow.python...``, ``keras.layers.<old>``)
    that TF 2.15 no longer has and tf2npu run cannot map to the same object.

    An ``ImportError`` (not an ``AttributeError``) because scripts reach these names with
    ``from <module> import <name>``, where Python would replace an ``AttributeError`` by a
    bare "cannot import name" and lose the advice.
    """

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

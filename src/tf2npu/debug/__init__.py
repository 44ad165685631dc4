"""Debugging tools that read what a run left on disk: dumps, graphs, comparisons, overflow.

Everything in this package imports without TensorFlow: a user compares two dump trees, or
reads an overflow dump, on any machine. The runtime side that *writes* dumps lives in
:mod:`tf2npu.runtime.dump`. One sub-package per tool: :mod:`.compare`, :mod:`.overflow`,
:mod:`.bisect`, :mod:`.verify`, :mod:`.profile`, :mod:`.doctor`; the runs that bisect and
verify start are :mod:`.trials`, and :mod:`.records` reads what they recorded. See
``docs/debugging.md``.
"""

"""``tf2npu overflow``: the first overflowing ops of an overflow dump, and their fix (TF-free).

:mod:`.opdebug` reads the ``Opdebug`` records (raw or converted), :mod:`.analysis` finds the
overflows, :mod:`.fix` says which op types move to float32, :mod:`.report` writes the text and
the summary file. See ``docs/overflow.md``.
"""

"""``tf2npu compare``: two dump trees, tensor by tensor, as msaccucmp compares them (TF-free).

:mod:`.matching` pairs the tensors, :mod:`.metrics` holds msaccucmp's algorithms and
:mod:`.tolerance` the verdicts' bounds; :mod:`.trees` runs the comparison, :mod:`.advisor` is
msaccucmp's expert advisor over its rows, and :mod:`.report` / :mod:`.page` are its CSV, JSON
and HTML views. See ``docs/debugging.md``.
"""

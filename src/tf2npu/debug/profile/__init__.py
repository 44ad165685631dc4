"""``tf2npu profile``'s analysis: a profile's raw data in, msprof's tables, advice and a page out
(TF-free).

:mod:`.raw` is the raw data the runtime writes, :mod:`.tables` msprof's tables from it,
:mod:`.phases` where each step's time went, :mod:`.advice` the advisor's rules,
:mod:`.timeline` and :mod:`.page` the HTML, :mod:`.report` the analysis that ties them. See
``docs/profile.md``.
"""

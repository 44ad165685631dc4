"""``tf2npu bisect``: the fewest fusions, or op types and nodes kept in float32, that explain a
difference (TF-free driver; trials are ``tf2npu run`` children).

:mod:`.search` holds the trial configurations and the searches, :mod:`.lab` runs trials,
:mod:`.metric` measures them; :mod:`.fusion` and :mod:`.precision` are the two bisections;
:mod:`.report` and :mod:`.page` write the fix files, the JSON, the text and ``bisect.html``.
See ``docs/debugging.md``.
"""

"""``tf2npu verify``: does a migrated script still train like the original? (TF-free driver;
the runs are ``tf2npu run`` children.)

:mod:`.checks` plans the runs and judges them, :mod:`.page` draws ``verify.html``. See
``docs/verify.md``.
"""

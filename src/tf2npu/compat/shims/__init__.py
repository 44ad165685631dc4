"""Stand-ins for tools users copy next to their scripts, found only when the script has none.

A vendor tool such as ``precision_tool`` is not installed but copied beside the training
script, and the script imports it by its top-level name. Under ``tf2npu run`` a script without
its copy still finds ours (:mod:`.fallback`); a copy of the real tool anywhere on ``sys.path``
always wins, because ours is looked up only after every normal finder has failed. Nothing here
is a top-level package in site-packages, so plain ``python`` never sees it.
"""

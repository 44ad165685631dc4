"""The precision decision: which float32 device nodes run in float16 (or bfloat16), and the casts.

:mod:`.modes` maps ``precision_mode(_v2)`` onto a policy, :mod:`.signature` reads where a node
carries float32 tensors, :mod:`.classify` decides per node, :mod:`.casts` rewrites the graph.
The pass that runs them is :mod:`tf2npu.graph.passes.precision`; ``docs/precision.md`` is the
user-facing description.
"""

from tf2npu.graph.precision.casts import rewrite
from tf2npu.graph.precision.classify import KEEP_DTYPE_ATTR, Judged, Verdict, classify
from tf2npu.graph.precision.modes import MODES, Mode, Policy, mode_named

__all__ = [
    "KEEP_DTYPE_ATTR",
    "MODES",
    "Judged",
    "Mode",
    "Policy",
    "Verdict",
    "classify",
    "mode_named",
    "rewrite",
]

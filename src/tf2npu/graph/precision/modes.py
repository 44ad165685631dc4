"""The precision modes as data: which policy each ``precision_mode(_v2)`` value applies.

Both spellings map onto four policies (seed 004, reference §2.2):

* ``keep`` — every node keeps its dtype (``force_fp32``, ``must_keep_origin_dtype``,
  ``origin``; the cube and HiFloat8 modes change only kernel internals or dtypes TensorFlow has
  no name for, so the graph keeps its dtypes there too);
* ``fallback`` — a float32 node runs in the lower dtype only when its device kernel has no
  float32 variant (``allow_fp32_to_fp16``, the training default; ``allow_fp32_to_bf16``);
* ``force`` — every float32 node with a lower-dtype kernel runs lower (``force_fp16``, ``fp16``);
* ``mixed`` — the allow / deny / gray / clear lists decide (``allow_mix_precision*``,
  ``mixed_float16``, ``mixed_bfloat16``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tf2npu.dtypes import DT_BFLOAT16, DT_HALF
from tf2npu.errors import UnknownNameError

__all__ = ["MODES", "Mode", "Policy", "mode_named"]


class Policy(enum.Enum):
    KEEP = "keep"
    FALLBACK = "fallback"
    FORCE = "force"
    MIXED = "mixed"


@dataclass(frozen=True, slots=True)
class Mode:
    """One mode value: its policy, the lower dtype, and a note for modes we only approximate."""

    name: str
    policy: Policy
    lower: str = "float16"
    note: str = ""

    @property
    def lower_enum(self) -> int:
        """The ``DataType`` value of :attr:`lower`."""
        return DT_BFLOAT16 if self.lower == "bfloat16" else DT_HALF

    @property
    def tag(self) -> str:
        """The name tag of lowered clones (``fp16`` / ``bf16``); casts use ``to_<tag>``."""
        return "bf16" if self.lower == "bfloat16" else "fp16"


_CUBE = "cube ops convert inside the kernel; the graph's dtypes do not change"
_HIF8 = "HiFloat8 has no TensorFlow dtype; the graph keeps its dtypes"

MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode("force_fp32", Policy.KEEP),
        Mode("must_keep_origin_dtype", Policy.KEEP),
        Mode("origin", Policy.KEEP),
        Mode("cube_fp16in_fp32out", Policy.KEEP, note=_CUBE),
        Mode("cube_hif8", Policy.KEEP, note=_HIF8),
        Mode("mixed_hif8", Policy.KEEP, note=_HIF8),
        Mode("allow_fp32_to_fp16", Policy.FALLBACK),
        Mode("allow_fp32_to_bf16", Policy.FALLBACK, "bfloat16"),
        Mode("force_fp16", Policy.FORCE),
        Mode("fp16", Policy.FORCE),
        Mode("allow_mix_precision", Policy.MIXED),
        Mode("allow_mix_precision_fp16", Policy.MIXED),
        Mode("mixed_float16", Policy.MIXED),
        Mode("allow_mix_precision_bf16", Policy.MIXED, "bfloat16"),
        Mode("mixed_bfloat16", Policy.MIXED, "bfloat16"),
    )
}
"""Every ``precision_mode`` and ``precision_mode_v2`` value, by name."""


def mode_named(name: str) -> Mode:
    """The mode called ``name``.

    Raises:
        UnknownNameError: ``name`` is no precision mode (the message lists the valid ones).
    """
    found = MODES.get(name)
    if found is None:
        raise UnknownNameError("precision_mode", name, tuple(MODES))
    return found

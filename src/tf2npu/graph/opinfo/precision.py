"""Mixed-precision classes of ops (TF AMP and Ascend list semantics)."""

from __future__ import annotations

from enum import Enum


class PrecisionClass(Enum):
    """Where an op sits in ``allow_mix_precision``'s lists; values are the TSV spellings."""

    ALLOW = "allow"
    """White list: compute-bound, safe in fp16; cast to fp16."""
    DENY = "deny"
    """Black list: numerically sensitive; kept in fp32, and the fp32 spreads forward through
    gray and clear ops."""
    GRAY = "gray"
    """Runs in fp16 only when its float inputs already are (or come from allow ops)."""
    CLEAR = "clear"
    """Numerically neutral (data movement, comparisons): follows its neighbours."""

"""Precision classes of ops under mixed precision (the vendor's white / black / gray lists)."""

from __future__ import annotations

import enum


class PrecisionClass(enum.Enum):
    """How ``allow_mix_precision`` treats an op type."""

    ALLOW = "allow"
    """White list: compute-bound, safe in float16; float32 inputs are lowered to float16."""
    DENY = "deny"
    """Black list: numerically sensitive; runs in float32 (float16 inputs are cast up), and the
    float32 spreads forward through gray and clear ops."""
    GRAY = "gray"
    """Gray list: follows its inputs (float16 if an upstream op is float16)."""
    CLEAR = "clear"
    """In no list: numerically neutral pass-through (Reshape, Identity): follows its neighbours."""


LIST_NAMES = {
    "white-list": PrecisionClass.ALLOW,
    "black-list": PrecisionClass.DENY,
    "gray-list": PrecisionClass.GRAY,
}
"""``modify_mixlist`` list names and the class an op added to them gets."""

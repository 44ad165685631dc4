"""Errors a session raises at run time when its graph cannot run as the adapter would run it."""

from __future__ import annotations

from tf2npu.errors import Tf2NpuError

__all__ = ["LoopError"]


class LoopError(Tf2NpuError):
    """``iterations_per_loop`` > 1 is used where the adapter cannot offload the loop."""

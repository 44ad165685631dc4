"""Tensor dumps (work in progress in this commit series)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tf2npu.config.options import NpuOptions
    from tf2npu.runtime.context import RuntimeContext
    from tf2npu.runtime.instruments import RunInstrument


def session_dump(options: NpuOptions, ctx: RuntimeContext) -> RunInstrument | None:
    return None

"""Runtime settings: what ``tf2npu run`` (or a test) asks of every NPU session.

They live in the :class:`~tf2npu.runtime.context.RuntimeContext` (the one piece of process-wide
state), as a frozen dataclass swapped as a whole by :func:`configure`, so a session sees one
consistent value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from tf2npu.config.options import Value
from tf2npu.config.overrides import EngineOverrides

__all__ = ["DEFAULT_EXECUTION", "EXECUTION_MODES", "RuntimeSettings"]

#: How device clusters (GeOps) execute: ``host`` = TensorFlow's CPU kernels, ``xla`` = each
#: GeOp compiled as one XLA cluster on the CPU.
EXECUTION_MODES = ("host", "xla")
DEFAULT_EXECUTION = EXECUTION_MODES[0]
"""GeOps run as TensorFlow's CPU kernels unless ``--execution xla`` says otherwise."""


@dataclass(frozen=True)
class RuntimeSettings:
    """What every NPU session created from now on uses."""

    npu: bool = True
    """False (``--no-npu``): every session is a stock session, NpuOptimizer or not."""
    overrides: Mapping[str, Value] = field(default_factory=lambda: MappingProxyType({}))
    """Options set on the command line; they win over the session's own ``parameter_map``."""
    execution: str = DEFAULT_EXECUTION
    """One of :data:`EXECUTION_MODES`."""
    report_dir: Path | None = None
    """Where run artifacts go (``check_result.tf.json``, dumps); None = current directory."""
    strict_options: bool = False
    """True (``--strict-options``): an unknown ``parameter_map`` key is an error, not ignored."""
    engine: EngineOverrides = field(default_factory=EngineOverrides)
    """A trial's fusion instances off and nodes kept in float32 (``--fusion-instances``,
    ``--keep-fp32``, or their environment variables)."""

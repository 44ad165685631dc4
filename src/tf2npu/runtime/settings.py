"""Runtime settings: what ``tf2npu run`` (or a test) asks of every NPU session.

They live in the :class:`~tf2npu.runtime.context.RuntimeContext` (the one piece of process-wide
state), as a frozen dataclass swapped as a whole by :func:`configure`, so a session sees one
consistent value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from tf2npu.config.options import Value
from tf2npu.config.overrides import EngineOverrides
from tf2npu.config.sources import from_cli
from tf2npu.errors import UsageError

__all__ = ["EXECUTION_MODES", "RuntimeSettings", "configure", "current"]

#: How device clusters (GeOps) execute: ``host`` = TensorFlow's CPU kernels, ``xla`` = each
#: GeOp compiled as one XLA cluster on the CPU.
EXECUTION_MODES = ("host", "xla")


@dataclass(frozen=True)
class RuntimeSettings:
    """What every NPU session created from now on uses."""

    npu: bool = True
    """False (``--no-npu``): every session is a stock session, NpuOptimizer or not."""
    overrides: Mapping[str, Value] = field(default_factory=lambda: MappingProxyType({}))
    """Options set on the command line; they win over the session's own ``parameter_map``."""
    execution: str = "host"
    """One of :data:`EXECUTION_MODES`."""
    report_dir: Path | None = None
    """Where run artifacts go (``check_result.tf.json``, dumps); None = current directory."""
    strict_options: bool = False
    """True (``--strict-options``): an unknown ``parameter_map`` key is an error, not ignored."""
    engine: EngineOverrides = field(default_factory=EngineOverrides)
    """A trial's fusion instances off and nodes kept in float32 (``--fusion-instances``,
    ``--keep-fp32``, or their environment variables)."""


def current() -> RuntimeSettings:
    """The settings in force."""
    from tf2npu.runtime.context import context

    return context().settings


def configure(
    *,
    npu: bool | None = None,
    options: Iterable[str] | None = None,
    execution: str | None = None,
    report_dir: str | Path | None = None,
    strict_options: bool | None = None,
    engine: EngineOverrides | None = None,
) -> RuntimeSettings:
    """Change the settings in force (only the arguments given); returns the new settings.

    Args:
        npu: False runs every session stock (``--no-npu``).
        options: ``KEY=VALUE`` strings as ``--option`` takes them (replace earlier overrides).
        execution: ``host`` or ``xla``.
        report_dir: directory for run artifacts.
        strict_options: True makes unknown ``parameter_map`` keys an error.
        engine: a trial's engine overrides (:mod:`tf2npu.config.overrides`).

    Raises:
        UsageError: an unknown execution mode.
        tf2npu.errors.ConfigError: a bad ``KEY=VALUE`` (unknown option, wrong type).
    """
    from tf2npu.runtime.context import context

    changes: dict[str, object] = {}
    if npu is not None:
        changes["npu"] = npu
    if options is not None:
        changes["overrides"] = MappingProxyType(dict(from_cli(options)))
    if execution is not None:
        if execution not in EXECUTION_MODES:
            raise UsageError(
                f"--execution {execution!r} is not a mode; use one of: {', '.join(EXECUTION_MODES)}"
            )
        changes["execution"] = execution
    if report_dir is not None:
        changes["report_dir"] = Path(report_dir)
    if strict_options is not None:
        changes["strict_options"] = strict_options
    if engine is not None:
        changes["engine"] = engine
    ctx = context()
    ctx.settings = replace(ctx.settings, **changes)  # type: ignore[arg-type]
    return ctx.settings


def reset() -> None:
    """Back to the defaults (tests)."""
    use(RuntimeSettings())


def use(settings: RuntimeSettings) -> None:
    """Put ``settings`` in force as they are (tests restore what they found)."""
    from tf2npu.runtime.context import context

    context().settings = settings

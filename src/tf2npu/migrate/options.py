"""Options of a migration run, validated once at the boundary."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tf2npu.errors import UsageError

PRECISION_MODES = (
    "allow_fp32_to_fp16",
    "force_fp16",
    "force_fp32",
    "must_keep_origin_dtype",
    "allow_mix_precision",
    "cube_fp16in_fp32out",
    "allow_mix_precision_fp16",
    "allow_mix_precision_bf16",
    "allow_fp32_to_bf16",
)
"""The values the Ascend adapter accepts for ``precision_mode``."""


class Distributed(enum.Enum):
    """How distributed training in the scripts is migrated."""

    AUTO = "auto"
    """Horovod is migrated when a file uses it; tf.distribute strategies are reported."""
    NONE = "none"
    """Nothing distributed is rewritten; every distributed use is reported."""
    HOROVOD = "horovod"
    """Horovod is migrated to the NPU collective API (and reported where it is not used)."""
    TF_STRATEGY = "tf_strategy"
    """tf.distribute strategies become ``NPUStrategy`` where that is meaningful."""


@dataclass(frozen=True, slots=True)
class LossScale:
    """``--loss-scale``: ``none``, ``fixed:<N>`` or ``dynamic``."""

    mode: str = "none"
    value: float = 0.0

    @classmethod
    def parse(cls, text: str) -> LossScale:
        if text in ("none", "dynamic"):
            return cls(text)
        if text.startswith("fixed:"):
            raw = text[len("fixed:") :]
            try:
                value = float(raw)
            except ValueError:
                value = 0.0
            if value >= 1:
                return cls("fixed", value)
            raise UsageError(
                f"--loss-scale fixed:{raw}: the scale must be a number >= 1 "
                "(FixedLossScaleManager rejects smaller ones); e.g. --loss-scale fixed:1024"
            )
        raise UsageError(
            f"--loss-scale {text!r} is not valid; use none, fixed:<N> (e.g. fixed:1024) or dynamic"
        )

    def __str__(self) -> str:
        return f"fixed:{self.value:g}" if self.mode == "fixed" else self.mode


@dataclass(frozen=True, slots=True)
class MigrateOptions:
    """What the user asked of the rewrite (the source tree itself lives in the driver)."""

    precision_mode: str | None = None
    mix_compile: bool = False
    loss_scale: LossScale = LossScale()
    distributed: Distributed = Distributed.AUTO
    entry: str | None = None
    """Path (relative to the migrated root, ``/`` separators) of the entry script, if named."""
    keep_horovod_import: bool = False
    """Keep the Horovod import statements even when no Horovod use is left."""
    horovod_holders: tuple[str, ...] = ()
    """Project globals that hold the Horovod module, as ``<module>.<global>=<prefix>``; found
    by :func:`tf2npu.migrate.project.horovod_holders` before the files are migrated."""

    def __post_init__(self) -> None:
        if self.precision_mode is not None and self.precision_mode not in PRECISION_MODES:
            raise UsageError(
                f"--precision-mode {self.precision_mode!r} is not a precision mode the Ascend "
                f"adapter accepts; use one of: {', '.join(PRECISION_MODES)}"
            )

    def as_dict(self) -> dict[str, object]:
        return {
            "precision_mode": self.precision_mode,
            "mix_compile": self.mix_compile,
            "loss_scale": str(self.loss_scale),
            "distributed": self.distributed.value,
            "entry": self.entry,
            "keep_horovod_import": self.keep_horovod_import,
            "horovod_holders": list(self.horovod_holders),
        }

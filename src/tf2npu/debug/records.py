"""Read the run records ``tf2npu run --record`` leaves in its report folder (TF-free).

A recorded run writes two files (see ``docs/verify.md``):

* ``steps.jsonl`` — one JSON object per session run that fetched at least one float scalar:
  ``{"run", "signature", "train", "step", "npu", "scalars": {name: float | null},
  "nonfinite": [names]}``; a non-finite value is ``null`` in ``scalars`` and its name is in
  ``nonfinite``.
* ``variables.npz`` — the trainable variables of the last session that closed (or was still
  open at exit) holding any, keyed by variable name without ``:0``.

:func:`loss_series` turns the step records into the one series tools compare: the loss the
script fetched per training step.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tf2npu.errors import ConfigError, UsageError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "STEPS_FILE",
    "VARIABLES_FILE",
    "StepRecord",
    "final_loss",
    "loss_name",
    "loss_series",
    "read_steps",
    "read_variables",
]

STEPS_FILE = "steps.jsonl"
VARIABLES_FILE = "variables.npz"
_FIX = "record a run with `tf2npu run --record --report-dir DIR SCRIPT` (or TF2NPU_RECORD=1)"


@dataclass(frozen=True)
class StepRecord:
    """One session run that fetched float scalars."""

    run: int
    """0-based index of the run among the process's recorded-or-not runs."""
    signature: int
    """The run signature's number (``RunSignature.number``): the same in NPU and stock runs."""
    train: bool
    """Whether the run applied an optimizer (a training step)."""
    step: int
    """Training steps so far, this run included."""
    npu: bool
    """Whether an NPU session ran it."""
    scalars: Mapping[str, float | None] = field(default_factory=dict)
    """Client tensor name -> value (None when it was NaN or Inf), in fetch order."""
    nonfinite: tuple[str, ...] = ()
    """The names whose value was NaN or Inf."""

    def value(self, name: str) -> float:
        """The scalar ``name`` as a float: NaN when it was not finite."""
        number = self.scalars[name]
        return math.nan if number is None else number


def read_steps(directory: str | Path) -> list[StepRecord]:
    """The step records of the run recorded in ``directory``, in run order.

    Raises:
        UsageError: ``directory`` holds no ``steps.jsonl``.
        ConfigError: a line of it is not a step record (names the file, line and fix).
    """
    path = Path(directory) / STEPS_FILE
    if not path.is_file():
        raise UsageError(f"{str(path)!r} does not exist: no recorded run there; {_FIX}")
    records = []
    with path.open(encoding="utf-8") as stream:
        for number, line in enumerate(stream, 1):
            if line.strip():
                records.append(_parse(line, path, number))
    return records


def _parse(line: str, path: Path, number: int) -> StepRecord:
    try:
        data = json.loads(line)
        scalars = data["scalars"]
        if not isinstance(scalars, dict):
            raise TypeError("scalars is not an object")
        return StepRecord(
            run=int(data["run"]),
            signature=int(data["signature"]),
            train=bool(data["train"]),
            step=int(data["step"]),
            npu=bool(data["npu"]),
            scalars={str(k): None if v is None else float(v) for k, v in scalars.items()},
            nonfinite=tuple(str(name) for name in data.get("nonfinite", ())),
        )
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
        why = f"no key {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
        if isinstance(exc, RecursionError):
            why = "JSON nested too deep"
        raise ConfigError(
            f"{path}:{number}: not a step record ({why}); the file is written by "
            f"`tf2npu run --record`, re-record the run rather than editing it"
        ) from None


def read_variables(directory: str | Path) -> dict[str, np.ndarray[Any, Any]]:
    """The recorded trainable variables, name (without ``:0``) -> value.

    Raises:
        UsageError: ``directory`` holds no ``variables.npz``.
        ConfigError: the file is not a readable ``.npz`` archive.
    """
    import numpy as np  # not at the CLI's start-up

    path = Path(directory) / VARIABLES_FILE
    if not path.is_file():
        raise UsageError(
            f"{str(path)!r} does not exist: the run recorded no trainable variables (no "
            f"session held any, or it was not recorded); {_FIX}"
        )
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise ConfigError(f"{path}: not a variables archive ({exc}); re-record the run") from None


def loss_name(records: Sequence[StepRecord]) -> str | None:
    """The fetched scalar that stands for the loss in ``records``.

    The first name containing ``loss`` (case-insensitive), in the order first fetched; else
    the first scalar fetched. None when no record has a scalar.
    """
    names = list(dict.fromkeys(name for record in records for name in record.scalars))
    for name in names:
        if "loss" in name.lower():
            return name
    return names[0] if names else None


def loss_series(steps: Sequence[StepRecord]) -> list[float]:
    """The loss the script fetched per training step (NaN where it was not finite).

    The series is the :func:`loss_name` scalar of every training run that fetched it. A script
    that fetches nothing while it trains and evaluates at the end gets the same scalar from
    its last evaluation instead: the runs of the signature of the last non-training run.
    """
    train = [record for record in steps if record.train]
    name = loss_name(train)
    if name is not None:
        return [record.value(name) for record in train if name in record.scalars]
    evaluation = [record for record in steps if not record.train and record.scalars]
    if not evaluation:
        return []
    last = evaluation[-1].signature
    final = [record for record in evaluation if record.signature == last]
    name = loss_name(final) or ""
    return [record.value(name) for record in final if name in record.scalars]


def final_loss(steps: Sequence[StepRecord]) -> float | None:
    """The last value of :func:`loss_series` (NaN when it was not finite); None if empty."""
    series = loss_series(steps)
    return series[-1] if series else None

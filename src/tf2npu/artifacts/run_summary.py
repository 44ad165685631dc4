"""``run_summary.json``'s ``loss_scale`` and ``precision``: written by the runtime, read by doctor,
bisect and the CLI.

``precision`` is a list of :class:`PrecisionRow` (one per user op the precision pass judged).

``loss_scale`` is ``null`` unless an ``NPULossScaleOptimizer`` step ran; else::

    {"scale": 1024.0, "skipped_steps": 6,
     "warmup": {"skipped_steps": 5, "first_scale": 16384.0, "last_scale": 1024.0}}

``scale`` is the loss scale after the latest loss-scaled step, ``skipped_steps`` how many steps
were skipped because a gradient was not finite. ``warmup`` (``null`` when there was none) is the
run's first steps, skipped one after the other while the dynamic scale came down from a start
too high for the model, up to the first step that was applied: ``first_scale`` and
``last_scale`` are the scales after the first and the last of them. That is how a dynamic loss
scale finds its level, not an overflow the model has: a warm-up that never ends (no step was
applied) is not recorded as one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "LOSS_SCALE",
    "NAMED_REASONS",
    "PRECISION",
    "REASONS",
    "SUMMARY_FILE",
    "LossScale",
    "PrecisionRow",
    "Warmup",
    "WarmupTracker",
    "describe_error",
    "precision_groups",
    "precision_rows",
    "read_summary",
]

SUMMARY_FILE = "run_summary.json"
"""The run summary's file name in a run's report folder (every writer and reader uses this)."""

LOSS_SCALE = "loss_scale"
"""The summary key."""


@dataclass(frozen=True, slots=True)
class Warmup:
    """The leading run of skipped steps while the scale came down."""

    skipped_steps: int
    first_scale: float
    last_scale: float

    def to_json(self) -> dict[str, Any]:
        return {
            "skipped_steps": self.skipped_steps,
            "first_scale": self.first_scale,
            "last_scale": self.last_scale,
        }

    @classmethod
    def from_json(cls, value: object) -> Warmup | None:
        """The warm-up in ``value``, or None when it is absent or not of this shape."""
        if not isinstance(value, dict):
            return None
        skipped = _count(value.get("skipped_steps"))
        first, last = _number(value.get("first_scale")), _number(value.get("last_scale"))
        if skipped is None or skipped < 1 or first is None or last is None:
            return None
        return cls(skipped, first, last)


@dataclass(frozen=True, slots=True)
class LossScale:
    """The loss scaling of one run."""

    scale: float | None
    """None when the file held no number (a hand-edited or damaged summary)."""
    skipped_steps: int
    warmup: Warmup | None = None

    @property
    def skipped_after_warmup(self) -> int:
        """Skipped steps once the warm-up was over."""
        return self.skipped_steps - (self.warmup.skipped_steps if self.warmup else 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "skipped_steps": self.skipped_steps,
            "warmup": self.warmup.to_json() if self.warmup else None,
        }

    @classmethod
    def from_json(cls, value: object) -> LossScale | None:
        """The object of a summary's ``loss_scale`` (None for ``null`` or a non-object).

        Readers meet hand-edited and damaged files: a field of the wrong type reads as absent
        (``skipped_steps`` 0, ``scale`` None, no warm-up), never as an exception.
        """
        if not isinstance(value, dict):
            return None
        count = _count(value.get("skipped_steps")) or 0
        warmup = Warmup.from_json(value.get("warmup"))
        if warmup is not None and warmup.skipped_steps > count:
            warmup = None  # more warm-up skips than skips: not a record this writer made
        return cls(_number(value.get("scale")), count, warmup)


class WarmupTracker:
    """Follows the loss-scaled steps of a run to find its warm-up (the writer's side)."""

    def __init__(self) -> None:
        self._skipped = 0
        self._first: float | None = None
        self._last: float | None = None
        self._open = True
        self._ended = False

    def step(self, scale: float, *, skipped: bool) -> None:
        """One loss-scaled step ran: the scale after it, and whether it was skipped."""
        if not self._open:
            return
        if skipped and (self._last is None or scale <= self._last):
            self._skipped += 1
            self._first = scale if self._first is None else self._first
            self._last = scale
            return
        self._open = False
        self._ended = not skipped  # an applied step ends it; a rising scale is no warm-up

    @property
    def warmup(self) -> Warmup | None:
        """The warm-up, once a step was applied after it (None: none, or never ended)."""
        if not self._ended or not self._skipped:
            return None
        assert self._first is not None and self._last is not None
        return Warmup(self._skipped, self._first, self._last)


def _count(value: object) -> int | None:
    """A count (a non-negative int that is no bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


PRECISION = "precision"
"""The summary key of the per-op precision rows (:class:`PrecisionRow`)."""

REASONS: dict[str, str] = {
    "allow_list": "allow list",
    "mixlist_allow": "white list by modify_mixlist",
    "deny_list": "deny list",
    "mixlist_deny": "black list by modify_mixlist",
    "deny_spread": "follows a deny-list op",
    "follows_lowered": "follows its lower-precision input",
    "no_lowered_input": "no lower-precision input",
    "no_fp32_kernel": "no float32 kernel",
    "fp32_kernel": "has a float32 kernel",
    "force_lower": "precision_mode forces it lower",
    "origin_dtype": "precision_mode keeps float32",
    "keep_dtype_scope": "keep_dtype_scope",
    "keep_fp32": "kept float32 by a bisect trial",
    "control_flow": "control flow forwards its dtype",
    "no_fp16_kernel": "no float16 kernel",
    "no_bf16_kernel": "no bfloat16 kernel",
    "unknown_signature": "signature unknown",
    "list_dtype": "takes a dtype list",
    "fixed_dtype": "float32 by op definition",
    "variable_dtype": "float32 variable reference",
    "dtype_not_allowed": "dtype excluded by the op",
}
"""The reason codes the precision pass records (``graph/precision/classify.py`` and
``signature.py``), with the words the terminal summary uses. A code not listed here (a blocker
of the signature reader) is shown as it is."""


@dataclass(frozen=True, slots=True)
class PrecisionRow:
    """One user op whose dtype the precision pass decided, as ``run_summary.json`` lists it::

        {"op": "bert/l0/MatMul", "op_type": "MatMulV2", "tf_type": "MatMul",
         "dtype": "float16", "reason": "allow_list", "detail": "MatMul is in the allow list",
         "where": "train.py:41 in layer", "graph": 1}

    ``op`` is the user's node name, ``op_type`` the GE type (the name a ``modify_mixlist``
    uses), ``tf_type`` the TensorFlow op type, ``dtype`` the dtype it runs in, ``reason`` a code
    of :data:`REASONS` and ``detail`` the pass's sentence. ``where`` is the script line that
    created the op, recorded for the ops that run in a lower dtype in a recorded run
    (``--record``, bisect trials; ``""`` otherwise or when unknown); ``graph`` the number of
    the session graph compile.
    """

    op: str
    op_type: str
    tf_type: str
    dtype: str
    reason: str
    detail: str = ""
    where: str = ""
    graph: int = 0

    @property
    def lowered(self) -> bool:
        """Runs in a dtype lower than float32 (the ops ``bisect precision`` works on)."""
        return self.dtype in ("float16", "bfloat16")

    @property
    def reason_text(self) -> str:
        """The reason in words (the code itself when it is not one of :data:`REASONS`)."""
        return REASONS.get(self.reason, self.reason)

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "op_type": self.op_type,
            "tf_type": self.tf_type,
            "dtype": self.dtype,
            "reason": self.reason,
            "detail": self.detail,
            "where": self.where,
            "graph": self.graph,
        }

    @classmethod
    def from_json(cls, value: object) -> PrecisionRow | None:
        """The row in ``value``; None when it is no object or lacks a string ``op``/``dtype``."""
        if not isinstance(value, dict):
            return None
        op, dtype = value.get("op"), value.get("dtype")
        if not isinstance(op, str) or not op or not isinstance(dtype, str) or not dtype:
            return None
        tf_type = _text(value.get("tf_type"))
        return cls(
            op,
            _text(value.get("op_type")) or tf_type,
            tf_type,
            dtype,
            _text(value.get("reason")),
            _text(value.get("detail")),
            _text(value.get("where")),
            _count(value.get("graph")) or 0,
        )


def precision_rows(summary: object) -> list[PrecisionRow]:
    """The precision rows of a read ``run_summary.json`` (rows not of this shape are skipped;
    none for a summary without the key, written before it existed)."""
    if not isinstance(summary, dict):
        return []
    rows = summary.get(PRECISION)
    if not isinstance(rows, list):
        return []
    found = (PrecisionRow.from_json(row) for row in rows)
    return [row for row in found if row is not None]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


NAMED_REASONS = frozenset({"mixlist_allow", "mixlist_deny", "keep_dtype_scope", "keep_fp32"})
"""Reasons that are the user's own choice (a list edit, a scope, a trial): reports name the ops."""


def precision_groups(
    rows: Iterable[PrecisionRow],
) -> list[tuple[str, str, list[PrecisionRow]]]:
    """``(dtype, reason, rows)`` per dtype and reason: lower dtypes first, then larger groups
    (what the terminal summary and the ``graph inspect`` page count)."""
    groups: dict[tuple[str, str], list[PrecisionRow]] = {}
    for row in rows:
        groups.setdefault((row.dtype, row.reason), []).append(row)
    order = sorted(groups.items(), key=lambda kv: (kv[0][0] == "float32", -len(kv[1]), kv[0]))
    return [(dtype, reason, members) for (dtype, reason), members in order]


def describe_error(error: object) -> str:
    """The ``error`` section of a failed run (see docs/run.md) as one line for a report.

    >>> describe_error({"kind": "exception", "type": "ValueError", "message": "bad n",
    ...                 "where": "train.py:9"})
    'ValueError: bad n (train.py:9)'
    >>> describe_error({"kind": "exit", "type": "SystemExit", "message": "", "where": None})
    'the script called sys.exit with a failure status'
    """
    if not isinstance(error, dict):
        return f"(the run summary's error section is {error!r}, not an object)"
    kind, message, where = error.get("kind"), _text(error.get("message")), error.get("where")
    if kind == "usage":
        text = message
    elif kind == "exit":
        text = message or "the script called sys.exit with a failure status"
    elif kind == "write":
        return message
    else:
        text = f"{_text(error.get('type'))}: {message}" if message else _text(error.get("type"))
    return f"{text} ({where})" if isinstance(where, str) and where else text


def read_summary(report_dir: Path) -> dict[str, Any]:
    """``run_summary.json`` of the run that reported into ``report_dir``; {} when it has none
    (the run died before writing it) or it is not a JSON object."""
    try:
        data = json.loads((report_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}

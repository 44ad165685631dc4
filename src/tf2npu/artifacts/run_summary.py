"""``run_summary.json``: :class:`RunSummary`, written by the runtime, read by verify, bisect,
doctor, the rank launcher and the CLI; its sections ``loss_scale`` and ``precision`` in detail.

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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "LOSS_SCALE",
    "NAMED_REASONS",
    "PRECISION",
    "REASONS",
    "SCHEMA_VERSION",
    "SUMMARY_FILE",
    "DeterminismReport",
    "DumpRecord",
    "InjectedFault",
    "JobSummary",
    "LossScale",
    "NonFinite",
    "PrecisionRow",
    "ProfileRecord",
    "Race",
    "RankRecord",
    "RecordFiles",
    "RunError",
    "RunSummary",
    "UnmatchedInstance",
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


def read_summary(report_dir: Path) -> RunSummary | None:
    """``run_summary.json`` of the run that reported into ``report_dir``; None when it has
    none (the run died before writing it) or it is not a JSON object."""
    try:
        data = json.loads((report_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return RunSummary.from_json(data) if isinstance(data, dict) else None


# -- the whole file ---------------------------------------------------------------------------

SCHEMA_VERSION = 1
"""``run_summary.json``'s ``schema_version``: a key is only ever added within a version."""

LIST_PARTS = frozenset({"dumps", "profiles"})
"""Fields several contributors add items to (one dump folder, one profile each)."""


@dataclass(frozen=True, slots=True)
class RunError:
    """The ``error`` section: why a run failed (docs/run.md)."""

    kind: str
    """``exception``, ``usage``, ``exit``, ``interrupted`` or ``write``."""
    type: str
    message: str
    where: str | None = None
    """``FILE:LINE`` of the innermost frame in the user's code (None: unknown)."""

    def describe(self) -> str:
        """The error as one line for a report (see :func:`describe_error`)."""
        return describe_error(self.to_json())

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "type": self.type, "message": self.message, "where": self.where}

    @classmethod
    def from_json(cls, value: object) -> RunError | None:
        """The error in ``value`` (None for ``null`` or a non-object); a field of the wrong
        type reads as empty."""
        if not isinstance(value, dict):
            return None
        where = value.get("where")
        return cls(
            _text(value.get("kind")),
            _text(value.get("type")),
            _text(value.get("message")),
            where if isinstance(where, str) and where else None,
        )


@dataclass(frozen=True, slots=True)
class NonFinite:
    """The ``nonfinite`` section: when a fetched scalar float was first NaN or Inf."""

    first_step: int
    fetches: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"first_step": self.first_step, "fetches": list(self.fetches)}

    @classmethod
    def from_json(cls, value: object) -> NonFinite | None:
        if not isinstance(value, dict):
            return None
        step = _count(value.get("first_step"))
        return cls(step or 0, _texts(value.get("fetches")))


@dataclass(frozen=True, slots=True)
class DumpRecord:
    """One item of ``dumps``: a dump folder the run wrote."""

    path: str
    files: int
    bytes: int
    complete: bool = True
    error: str = ""
    """Why the dump was cut short (a full disk); ``""`` when it is complete."""
    statistics: str = ""
    """For a ``dump_data=stats`` dump, what measured its float tensors (the statistics op, or
    TensorFlow's reductions and why); ``""`` for a tensor dump."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "files": self.files, "bytes": self.bytes}
        if self.statistics:
            data["statistics"] = self.statistics
        if self.complete:
            return data | {"complete": True}
        return data | {"complete": False, "error": self.error}

    @classmethod
    def from_json(cls, value: object) -> DumpRecord | None:
        if not isinstance(value, dict) or not isinstance(value.get("path"), str):
            return None
        complete = value.get("complete") is not False
        return cls(
            value["path"],
            _count(value.get("files")) or 0,
            _count(value.get("bytes")) or 0,
            complete,
            "" if complete else _text(value.get("error")),
            _text(value.get("statistics")),
        )


@dataclass(frozen=True, slots=True)
class ProfileRecord:
    """One item of ``profiles``: a profile the run wrote."""

    path: str
    traced_runs: int
    findings: Mapping[str, int]
    """Advice count by severity."""
    complete: bool

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "traced_runs": self.traced_runs,
                "findings": dict(self.findings), "complete": self.complete}  # fmt: skip

    @classmethod
    def from_json(cls, value: object) -> ProfileRecord | None:
        if not isinstance(value, dict) or not isinstance(value.get("path"), str):
            return None
        findings = value.get("findings")
        counts = {
            str(k): n
            for k, n in (findings.items() if isinstance(findings, dict) else ())
            if _count(n) is not None
        }
        return cls(
            value["path"],
            _count(value.get("traced_runs")) or 0,
            counts,
            value.get("complete") is True,
        )


@dataclass(frozen=True, slots=True)
class DeterminismReport:
    """The ``deterministic`` section: who asked for reproducible runs and what stands in
    the way (docs/verify.md#reproducible-runs-deterministic)."""

    requested_by: str
    reproducible: bool
    op_determinism: bool
    schedule: str | None
    problems: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"requested_by": self.requested_by, "reproducible": self.reproducible,
                "op_determinism": self.op_determinism, "schedule": self.schedule,
                "problems": list(self.problems)}  # fmt: skip

    @classmethod
    def from_json(cls, value: object) -> DeterminismReport | None:
        if not isinstance(value, dict):
            return None
        schedule = value.get("schedule")
        return cls(
            _text(value.get("requested_by")),
            value.get("reproducible") is True,
            value.get("op_determinism") is True,
            schedule if isinstance(schedule, str) else None,
            _texts(value.get("problems")),
        )


@dataclass(frozen=True, slots=True)
class UnmatchedInstance:
    """One item of ``fusion_instances_unmatched``: a rule, or one instance by its root, that
    a trial switched off and no compile had."""

    rule: str
    root: str | None = None

    def describe(self) -> str:
        return self.rule if self.root is None else f"{self.rule}@{self.root}"

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule} if self.root is None else {"rule": self.rule, "root": self.root}

    @classmethod
    def from_json(cls, value: object) -> UnmatchedInstance | None:
        if not isinstance(value, dict) or not isinstance(value.get("rule"), str):
            return None
        root = value.get("root")
        return cls(value["rule"], root if isinstance(root, str) else None)


@dataclass(frozen=True, slots=True)
class InjectedFault:
    """One item of ``injected_faults``: a drill's fault spec and the nodes it corrupted."""

    spec: str
    applied_to: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"spec": self.spec, "applied_to": list(self.applied_to)}

    @classmethod
    def from_json(cls, value: object) -> InjectedFault | None:
        if isinstance(value, str):  # an early writer listed the specs alone
            return cls(value, ())
        if not isinstance(value, dict) or not isinstance(value.get("spec"), str):
            return None
        return cls(value["spec"], _texts(value.get("applied_to")))


@dataclass(frozen=True, slots=True)
class Race:
    """One item of ``races``: a variable read and assigned in one run, unordered (docs/run.md,
    Variable races); ``*_at`` is ``file:line in function`` of the user's code, or ``""``."""

    variable: str
    read: str
    read_op: str
    read_at: str
    write: str
    write_op: str
    write_at: str
    message: str
    fix: str

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _RACE_KEYS}

    @classmethod
    def from_json(cls, value: object) -> Race | None:
        if not isinstance(value, dict):
            return None
        return cls(*(_text(value.get(name)) for name in _RACE_KEYS))


_RACE_KEYS = (
    "variable", "read", "read_op", "read_at", "write", "write_op", "write_at", "message", "fix",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class RecordFiles:
    """The ``record`` section: where ``--record`` wrote its files."""

    steps: str
    page: str
    variables: str | None
    """None when no session had trainable variables."""
    stopped_at_step: int | None
    """Where a step limit stopped the script (None: it was not stopped)."""

    def to_json(self) -> dict[str, Any]:
        return {"steps": self.steps, "page": self.page, "variables": self.variables,
                "stopped_at_step": self.stopped_at_step}  # fmt: skip

    @classmethod
    def from_json(cls, value: object) -> RecordFiles | None:
        if not isinstance(value, dict):
            return None
        variables = value.get("variables")
        return cls(
            _text(value.get("steps")),
            _text(value.get("page")),
            variables if isinstance(variables, str) else None,
            _count(value.get("stopped_at_step")),
        )


@dataclass(frozen=True)
class RunSummary:
    """``run_summary.json`` as a value (every key is documented in docs/run.md).

    The writer (:func:`tf2npu.runtime.job.run`) builds it from the parts its contributors hand
    in (:meth:`from_parts`: the run statistics, each instrument's own section, the job's status,
    error and dumps); :meth:`to_json` is the file's object, its keys in the documented order.
    Readers (verify, bisect, doctor, the rank launcher, the CLI) get one from
    :meth:`from_json`, which never raises: files are hand-edited, damaged or older than a key,
    and a field that is missing or of the wrong type reads as its default. Nothing outside this
    module reads the file's keys by name (``tests/artifacts/test_run_summary.py``).
    """

    schema_version: int = SCHEMA_VERSION
    sessions: int = 0
    stock_sessions: int = 0
    graphs_compiled: int = 0
    geops: int = 0
    host_ops: int = 0
    casts_inserted: int = 0
    fusions: Mapping[str, int] = field(default_factory=dict)
    """Fusion rule → times it fired."""
    steps: int = 0
    nonfinite: NonFinite | None = None
    loss_scale: LossScale | None = None
    precision: tuple[PrecisionRow, ...] = ()
    wall_seconds: float = 0.0
    options: Mapping[str, Any] = field(default_factory=dict)
    """Option name → value (bool, int or string) the user set."""
    options_without_effect: tuple[str, ...] = ()
    options_unknown: tuple[str, ...] = ()
    exit_status: int | None = None
    """None only in a file that lacks it (a summary always written by a run has it)."""
    error: RunError | None = None
    job_environment: Mapping[str, str] = field(default_factory=dict)
    dumps: tuple[DumpRecord, ...] = ()
    profiles: tuple[ProfileRecord, ...] = ()
    deterministic: DeterminismReport | None = None
    """None unless something asked for reproducible runs."""
    fusion_instances_unmatched: tuple[UnmatchedInstance, ...] = ()
    injected_faults: tuple[InjectedFault, ...] = ()
    races: tuple[Race, ...] = ()
    write_errors: tuple[str, ...] = ()
    record: RecordFiles | None = None
    """None unless the run was recorded."""
    distributed: Mapping[str, Any] | None = None
    """A rank's ``{rank, size, loss, collectives}``; the key is left out of a one-device run."""

    @property
    def complete(self) -> bool:
        """Every artifact of the run was written."""
        return not self.write_errors

    @property
    def lowered(self) -> tuple[PrecisionRow, ...]:
        """The precision rows of the ops run in a dtype lower than float32."""
        return tuple(row for row in self.precision if row.lowered)

    def to_json(self) -> dict[str, Any]:
        """The file's object (the keys in this class's field order)."""
        data: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if name == "distributed" and value is None:
                continue
            data[name] = _plain(value)
        return data

    @classmethod
    def from_json(cls, data: object) -> RunSummary:
        """The summary in ``data`` (a read ``run_summary.json``); tolerant, see the class."""
        if not isinstance(data, dict):
            return cls(exit_status=None)
        return cls(
            schema_version=_count(data.get("schema_version")) or SCHEMA_VERSION,
            sessions=_count(data.get("sessions")) or 0,
            stock_sessions=_count(data.get("stock_sessions")) or 0,
            graphs_compiled=_count(data.get("graphs_compiled")) or 0,
            geops=_count(data.get("geops")) or 0,
            host_ops=_count(data.get("host_ops")) or 0,
            casts_inserted=_count(data.get("casts_inserted")) or 0,
            fusions=_counts(data.get("fusions")),
            steps=_count(data.get("steps")) or 0,
            nonfinite=NonFinite.from_json(data.get("nonfinite")),
            loss_scale=LossScale.from_json(data.get(LOSS_SCALE)),
            precision=tuple(precision_rows(data)),
            wall_seconds=_number(data.get("wall_seconds")) or 0.0,
            options=_object(data.get("options")) or {},
            options_without_effect=_texts(data.get("options_without_effect")),
            options_unknown=_texts(data.get("options_unknown")),
            exit_status=_status(data.get("exit_status")),
            error=RunError.from_json(data.get("error")),
            job_environment=_strings(data.get("job_environment")),
            dumps=_items(DumpRecord.from_json, data.get("dumps")),
            profiles=_items(ProfileRecord.from_json, data.get("profiles")),
            deterministic=DeterminismReport.from_json(data.get("deterministic")),
            fusion_instances_unmatched=_items(
                UnmatchedInstance.from_json, data.get("fusion_instances_unmatched")
            ),
            injected_faults=_items(InjectedFault.from_json, data.get("injected_faults")),
            races=_items(Race.from_json, data.get("races")),
            write_errors=_texts(data.get("write_errors")),
            record=RecordFiles.from_json(data.get("record")),
            distributed=_object(data.get("distributed")),
        )

    @classmethod
    def first_unreadable(cls, data: Mapping[str, Any]) -> str | None:
        """``KEY = VALUE`` of the first value in ``data`` that is not even of the kind the
        writer writes there: a number, string or bool where an object or a list belongs, which
        :meth:`from_json` reads as the default. None when there is none. What reads as absent by
        design is not judged: a field of the right kind with a wrong value (a section's
        own tolerant reading, such as a damaged ``loss_scale.warmup``), list items dropped,
        keys this reader does not know (a newer writer's). For a reader that reports a damaged
        file rather than reading past it (``tf2npu doctor``)."""
        back = cls.from_json(dict(data)).to_json()
        for name in _FIELDS:
            if name in data and name in back:
                found = _unread(data[name], back[name], name)
                if found is not None:
                    return found
        return None

    @classmethod
    def from_parts(cls, parts: Iterable[Mapping[str, Any]]) -> RunSummary:
        """The summary of a run from its contributors' parts (field name → its JSON value):
        a field is contributed once, except the lists of :data:`LIST_PARTS`, whose items add
        up in the order given.

        Raises:
            ValueError: a part names no field, or two parts contribute one field (a
                contributor's bug, not the user's).
        """
        merged: dict[str, Any] = {}
        for part in parts:
            for name, value in part.items():
                if name not in _FIELDS:
                    raise ValueError(f"run summary part {name!r} is no field of RunSummary")
                if name in LIST_PARTS:
                    merged.setdefault(name, []).extend(value)
                elif name in merged:
                    raise ValueError(f"run summary field {name!r} contributed twice")
                else:
                    merged[name] = value
        return cls.from_json(merged)


_FIELDS = tuple(f.name for f in fields(RunSummary))


def _unread(given: Any, back: Any, where: str) -> str | None:
    """Where ``given`` (the file's value) is a scalar and ``back`` (what reading it gave) an
    object or a list, looking into both as far as they have the same shape."""
    if isinstance(given, dict) and isinstance(back, dict):
        pairs = [
            (f"{where}.{key}", value, back[key]) for key, value in given.items() if key in back
        ]
    elif isinstance(given, list) and isinstance(back, list) and len(given) == len(back):
        pairs = [
            (f"{where}[{i}]", value, read)
            for i, (value, read) in enumerate(zip(given, back, strict=True))
        ]
    elif isinstance(back, dict | list) and given is not None and not isinstance(given, dict | list):
        return f"{where} = {given!r}"
    else:
        return None
    for place, value, read in pairs:
        found = _unread(value, read, place)
        if found is not None:
            return found
    return None


def _plain(value: Any) -> Any:
    """A field's value as JSON (a section's ``to_json``, tuples as lists, mappings copied)."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _status(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _object(value: object) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _texts(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _strings(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def _counts(value: object) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {str(k): n for k, n in value.items() if _count(n) is not None}


T = TypeVar("T")


def _items(parse: Callable[[object], T | None], value: object) -> tuple[T, ...]:
    if not isinstance(value, list):
        return ()
    found = (parse(item) for item in value)
    return tuple(item for item in found if item is not None)


# -- a multi-rank job's summary -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RankRecord:
    """One item of a job summary's ``per_rank``: how the rank ended and what it ran."""

    rank: int
    status: int | None
    """Exit status (``128 + n`` for signal ``n``); None when it never ended (a file only)."""
    signal: str | None
    stopped: bool
    """The launcher stopped it (after another rank failed, or at the job timeout)."""
    error: str | None
    collective: str | None
    """``HcomAllReduce 'node'`` when its error names a collective."""
    seconds: float
    steps: int | None
    """Its run summary's ``steps``; None when it wrote no summary."""
    loss: float | None
    collectives: Mapping[str, Mapping[str, int]]
    """Op type → ``{count, bytes, tensors}`` (its run summary's ``distributed``)."""
    report_dir: str

    @property
    def collective_count(self) -> int:
        return sum(int(f.get("count", 0)) for f in self.collectives.values())

    @property
    def bytes_sent(self) -> int:
        return sum(int(f.get("bytes", 0)) for f in self.collectives.values())

    @property
    def tensors_carried(self) -> int:
        """Tensors the collectives carried (more than their count when fused)."""
        return sum(int(f.get("tensors", f.get("count", 0))) for f in self.collectives.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "status": self.status,
            "signal": self.signal,
            "stopped": self.stopped,
            "error": self.error,
            "collective": self.collective,
            "seconds": self.seconds,
            "steps": self.steps,
            "loss": self.loss,
            "collectives": {op: dict(figures) for op, figures in self.collectives.items()},
            "report_dir": self.report_dir,
        }

    @classmethod
    def from_json(cls, value: object) -> RankRecord | None:
        if not isinstance(value, dict) or _count(value.get("rank")) is None:
            return None
        text = {k: value.get(k) if isinstance(value.get(k), str) else None
                for k in ("signal", "error", "collective")}  # fmt: skip
        return cls(
            value["rank"],
            _status(value.get("status")),
            text["signal"],
            value.get("stopped") is True,
            text["error"],
            text["collective"],
            _number(value.get("seconds")) or 0.0,
            _count(value.get("steps")),
            _number(value.get("loss")),
            _collectives(value.get("collectives")),
            _text(value.get("report_dir")),
        )


@dataclass(frozen=True)
class JobSummary:
    """The ``run_summary.json`` of a multi-rank job (``tf2npu run --ranks``): in the job's report
    folder, beside the ranks' folders, each of which holds that rank's :class:`RunSummary`
    (docs/distributed.md). Written by :mod:`tf2npu.runtime.distributed.launch`, printed by the
    CLI; tolerant :meth:`from_json` as :class:`RunSummary`'s."""

    ranks: int
    """The job's size (``per_rank`` lists the ranks this launcher started: with
    ``--server-id``, this server's)."""
    exit_status: int | None
    failed_rank: int | None
    timed_out: bool
    message: str | None
    wall_seconds: float
    per_rank: tuple[RankRecord, ...]
    collectives: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """The ranks' collectives added up, op type → ``{count, bytes, tensors}``."""
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def of_ranks(
        cls,
        per_rank: Iterable[RankRecord],
        *,
        size: int,
        exit_status: int,
        failed_rank: int | None,
        timed_out: bool,
        message: str | None,
        wall_seconds: float,
    ) -> JobSummary:
        """The summary of ranks that ended so; ``collectives`` is their total."""
        ranks = tuple(per_rank)
        total: dict[str, dict[str, int]] = {}
        for rank in ranks:
            for op, figures in rank.collectives.items():
                into = total.setdefault(op, {"count": 0, "bytes": 0, "tensors": 0})
                count = int(figures.get("count", 0))
                into["count"] += count
                into["bytes"] += int(figures.get("bytes", 0))
                into["tensors"] += int(figures.get("tensors", count))
        return cls(
            size, exit_status, failed_rank, timed_out, message, wall_seconds, ranks,
            dict(sorted(total.items())),
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "ranks": self.ranks,
            "exit_status": self.exit_status,
            "failed_rank": self.failed_rank,
            "timed_out": self.timed_out,
            "message": self.message,
            "wall_seconds": self.wall_seconds,
            "per_rank": [rank.to_json() for rank in self.per_rank],
            "collectives": {op: dict(figures) for op, figures in self.collectives.items()},
        }

    @classmethod
    def from_json(cls, data: object) -> JobSummary:
        if not isinstance(data, dict):
            data = {}
        failed = data.get("failed_rank")
        message = data.get("message")
        return cls(
            _count(data.get("ranks")) or 0,
            _status(data.get("exit_status")),
            failed if _count(failed) is not None else None,
            data.get("timed_out") is True,
            message if isinstance(message, str) else None,
            _number(data.get("wall_seconds")) or 0.0,
            _items(RankRecord.from_json, data.get("per_rank")),
            _collectives(data.get("collectives")),
            _count(data.get("schema_version")) or SCHEMA_VERSION,
        )


def _collectives(value: object) -> dict[str, dict[str, int]]:
    """Op type → ``{count, bytes, tensors}`` as a summary lists collectives."""
    if not isinstance(value, dict):
        return {}
    return {str(op): _counts(figures) for op, figures in value.items()}

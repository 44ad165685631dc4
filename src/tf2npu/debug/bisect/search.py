"""The machinery of ``tf2npu bisect``: trial configurations, resumable trials, and the searches.

A bisection runs the user's script many times, each time in a fresh process with one engine
override (fusion rules or instances off, op types or nodes kept in float32), and judges each
run against a reference run with :mod:`~tf2npu.debug.bisect.metric`. This module knows nothing
of processes: a :class:`Lab` runs a :class:`Config` into a folder and reads a finished folder
back (:mod:`tf2npu.debug.bisect.lab` is the real one; tests pass fakes). The drivers are
:mod:`~tf2npu.debug.bisect.fusion` and :mod:`~tf2npu.debug.bisect.precision`.

**Resuming.** Every finished trial is written to ``bisect_state.json`` in the output folder,
keyed by its configuration (:meth:`Config.key`). A bisection started again with the same
script, arguments and options takes finished trials from there instead of running them again
(their evidence is read back from their folders), so an interrupted bisection resumes where it
stopped; a trial that was cut off is run again.

**Searches.** :func:`halve` finds one culprit among candidates by switching half of them off
at a time: ``ceil(log2(n))`` trials when exactly one candidate is at fault (it assumes so, and
the drivers verify its answer with one more trial). :func:`minimal_set` finds a smallest set
whose fix restores the metric when several candidates may be needed.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from tf2npu.atomic import write_text_atomic
from tf2npu.config.jsonfile import parse_json
from tf2npu.debug.bisect.metric import Evidence, Metric, distance, headline
from tf2npu.errors import ConfigError, UsageError
from tf2npu.fs import read_regular

__all__ = [
    "STATE_FILE",
    "TRIALS_DIR",
    "Bench",
    "Config",
    "Judge",
    "Lab",
    "Store",
    "Trial",
    "halve",
    "log2_runs",
    "minimal_set",
]

STATE_FILE = "bisect_state.json"
TRIALS_DIR = "trials"
SCHEMA_VERSION = 1
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Config:
    """One trial's engine overrides (everything else is the user's command line).

    ``fusion_off`` entries are ``(rule, root)``; ``root`` ``""`` turns the whole rule off.
    """

    fusion_off: tuple[tuple[str, str], ...] = ()
    precision_mode: str = ""
    """The ``precision_mode`` option for this trial, ``""`` for the user's."""
    black_list: tuple[str, ...] = ()
    """GE op types the trial's ``modify_mixlist`` adds to the black list."""
    keep_fp32: tuple[str, ...] = ()
    """Nodes the trial keeps in float32 (``TF2NPU_KEEP_FP32``)."""
    rerun: bool = False
    """A check of a written fix: run again even when an identical trial ran before."""

    def key(self) -> str:
        """A stable text key: equal configurations have equal keys, whatever their order."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "fusion_off": [list(entry) for entry in sorted(set(self.fusion_off))],
            "precision_mode": self.precision_mode,
            "black_list": sorted(set(self.black_list)),
            "keep_fp32": sorted(set(self.keep_fp32)),
        }
        if self.rerun:
            data["rerun"] = True
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Config:
        return cls(
            fusion_off=tuple((str(r), str(n)) for r, n in data.get("fusion_off", [])),
            precision_mode=str(data.get("precision_mode", "")),
            black_list=tuple(str(t) for t in data.get("black_list", [])),
            keep_fp32=tuple(str(n) for n in data.get("keep_fp32", [])),
            rerun=bool(data.get("rerun", False)),
        )


class Lab(Protocol):
    """Runs trials: each :meth:`run` is a fresh process of the user's script."""

    def run(self, config: Config, folder: Path) -> Evidence:
        """Run the script with ``config`` applied; its report goes into ``folder`` (empty)."""

    def load(self, folder: Path, status: int, seconds: float) -> Evidence:
        """The evidence of a trial that finished earlier into ``folder``."""


@dataclass(frozen=True, slots=True)
class Record:
    """A finished trial as ``bisect_state.json`` keeps it."""

    number: int
    label: str
    config: Config
    folder: str
    """Relative to the output folder."""
    status: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "label": self.label,
            "config": self.config.to_json(),
            "folder": self.folder,
            "status": self.status,
            "seconds": round(self.seconds, 3),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        return cls(
            int(data["number"]),
            str(data["label"]),
            Config.from_json(data["config"]),
            str(data["folder"]),
            int(data["status"]),
            float(data["seconds"]),
        )


class Store:
    """``bisect_state.json``: the finished trials of one bisection, keyed by configuration."""

    def __init__(self, out: Path, identity: Mapping[str, Any]) -> None:
        self.out = out
        self.identity = dict(identity)
        self.records: dict[str, Record] = {}
        self._load()

    @property
    def path(self) -> Path:
        return self.out / STATE_FILE

    def get(self, config: Config) -> Record | None:
        return self.records.get(config.key())

    def next_folder(self, label: str) -> tuple[int, str]:
        """The number and folder (relative) of the next new trial."""
        number = 1 + max((r.number for r in self.records.values()), default=0)
        return number, f"{TRIALS_DIR}/{number:02d}-{label}"

    def add(self, record: Record) -> None:
        self.records[record.config.key()] = record
        data = {
            "schema_version": SCHEMA_VERSION,
            "identity": self.identity,
            "trials": {key: r.to_json() for key, r in self.records.items()},
        }
        self.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.path, json.dumps(data, indent=1, sort_keys=True) + "\n")

    def _load(self) -> None:
        if not self.path.exists():
            return
        try:
            data = parse_json(read_regular(self.path).decode("utf-8"), STATE_FILE)
            identity = data["identity"]  # type: ignore[index]
            trials = [Record.from_json(t) for t in data["trials"].values()]  # type: ignore[index]
        except (
            OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError, ConfigError,
        ) as err:  # fmt: skip
            raise UsageError(
                f"--out {str(self.out)!r} holds a {STATE_FILE} that cannot be read ({err}); "
                f"delete it to start the bisection afresh, or give another --out"
            ) from None
        if identity != self.identity:
            raise UsageError(
                f"--out {str(self.out)!r} holds the state of another bisection "
                f"({_differs(identity, self.identity)}); give another --out, or delete "
                f"{STATE_FILE} there to start afresh"
            )
        self.records = {r.config.key(): r for r in trials}


def _differs(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    keys = sorted(k for k in {*old, *new} if old.get(k) != new.get(k))
    key = keys[0] if keys else "identity"
    return f"{key} was {old.get(key)!r}, now {new.get(key)!r}"


@dataclass(frozen=True)
class Judge:
    """Whether a trial matches the reference run, within the tolerance."""

    metric: Metric
    tolerance: float
    reference: Evidence

    def distance(self, evidence: Evidence) -> float:
        return distance(evidence, self.reference, self.metric)

    def matches(self, evidence: Evidence) -> bool:
        return self.distance(evidence) <= self.tolerance


@dataclass
class Trial:
    """One trial of this bisection: what it ran, what it recorded, how it was judged."""

    label: str
    config: Config
    folder: Path
    evidence: Evidence
    resumed: bool
    """Taken from ``bisect_state.json``, not run by this invocation."""
    distance: float | None = None
    matches: bool | None = None

    def judge(self, judge: Judge) -> bool:
        self.distance = judge.distance(self.evidence)
        self.matches = self.distance <= judge.tolerance
        return self.matches

    def to_json(self, metric: Metric) -> dict[str, Any]:
        return {
            "label": self.label,
            "config": self.config.to_json(),
            "folder": str(self.folder),
            "status": self.evidence.status,
            "seconds": round(self.evidence.seconds, 3),
            "metric": headline(self.evidence, metric),
            "distance": _json_float(self.distance),
            "matches": self.matches,
            "resumed": self.resumed,
        }


def _json_float(value: float | None) -> float | str | None:
    """JSON has no infinity: an infinite distance is written ``"inf"``."""
    if value is None or math.isfinite(value):
        return value
    return "inf" if value > 0 else "-inf"


@dataclass
class Bench:
    """Runs the trials of one bisection through a :class:`Lab`, reusing finished ones."""

    lab: Lab
    store: Store
    progress: Callable[[Trial], None] = lambda trial: None
    trials: list[Trial] = field(default_factory=list)
    """Every trial this bisection used, in order (resumed ones included)."""

    def trial(self, label: str, config: Config) -> Trial:
        """The trial of ``config``: from the store when it finished before, else run now."""
        for done in self.trials:
            if done.config.key() == config.key():
                return done
        record = self.store.get(config)
        if record is not None and _has_evidence(self.store.out / record.folder):
            folder = self.store.out / record.folder
            evidence = self.lab.load(folder, record.status, record.seconds)
            trial = Trial(record.label, config, folder, evidence, resumed=True)
        else:  # new, or finished before but its folder was deleted since: (re-)run it
            label = self._distinct(label) if record is None else record.label
            number, relative = (
                self.store.next_folder(label) if record is None else (record.number, record.folder)
            )
            folder = self.store.out / relative
            if folder.exists():  # a trial cut off before it finished: start it again
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            evidence = self.lab.run(config, folder)
            record = Record(number, label, config, relative, evidence.status, evidence.seconds)
            self.store.add(record)
            trial = Trial(label, config, folder, evidence, resumed=False)
        self.trials.append(trial)
        self.progress(trial)
        return trial

    def _distinct(self, label: str) -> str:
        """``label``, or ``label-2``, ``label-3``, ... when a trial of this bisection (or one
        stored before) has it: two trials never share a label in the progress and the report."""
        taken = {t.label for t in self.trials} | {r.label for r in self.store.records.values()}
        if label not in taken:
            return label
        return next(f"{label}-{n}" for n in itertools.count(2) if f"{label}-{n}" not in taken)

    @property
    def runs(self) -> int:
        """Trials this bisection used (each one process, whether run now or before)."""
        return len(self.trials)


def _has_evidence(folder: Path) -> bool:
    """Whether a finished trial's folder still holds what it recorded (a deleted or emptied
    folder would read as a run with no fusions and no loss: a wrong verdict)."""
    try:
        return folder.is_dir() and next(folder.iterdir(), None) is not None
    except OSError:
        return False


def log2_runs(count: int) -> int:
    """``ceil(log2(count))``: the trials :func:`halve` needs for ``count`` candidates."""
    return math.ceil(math.log2(count)) if count > 1 else 0


def halve(candidates: Sequence[T], fixed_without: Callable[[Sequence[T]], bool]) -> T:
    """The one candidate at fault, assuming exactly one is.

    ``fixed_without(part)`` runs a trial with ``part`` switched off and says whether that
    restores the metric. Each step switches off the first half (the larger one when the count
    is odd); if that restores the metric the culprit is in it, else in the other half. Uses
    ``ceil(log2(len(candidates)))`` trials; the caller verifies the answer.

    >>> halve("abcde", lambda part: "d" in part)
    'd'
    """
    if not candidates:
        raise ValueError("halve needs at least one candidate")
    part = list(candidates)
    while len(part) > 1:
        first, second = part[: (len(part) + 1) // 2], part[(len(part) + 1) // 2 :]
        part = first if fixed_without(first) else second
    return part[0]


def minimal_set(
    candidates: Sequence[T], restores: Callable[[Sequence[T]], bool], *, known_good: bool = True
) -> tuple[T, ...]:
    """A smallest set of candidates whose fix restores the metric (none can be left out).

    Assumes fixing more never hurts (monotone) and that fixing all of ``candidates`` restores
    the metric (``known_good``: the caller checked it). Each round binary-searches the shortest
    prefix that, with the candidates found so far, restores the metric; its last element is
    needed. Rounds continue over the prefix before it until the found ones alone restore it.
    ``m`` needed candidates out of ``n`` cost at most ``(m + 1) * ceil(log2(n + 1))`` trials.

    >>> minimal_set("abcdef", lambda s: "b" in s and "e" in s)
    ('b', 'e')
    """
    found: list[int] = []  # indices into candidates
    hi = len(candidates)  # candidates[:hi] with the found ones restores the metric
    if not known_good and not restores(list(candidates)):
        raise ValueError("fixing every candidate does not restore the metric")
    while hi > 0:
        lo = 0
        while lo < hi:
            mid = (lo + hi) // 2
            if restores([*candidates[:mid], *(candidates[i] for i in sorted(found))]):
                hi = mid
            else:
                lo = mid + 1
        if hi == 0:
            break
        found.append(hi - 1)
        hi -= 1
    return tuple(candidates[i] for i in sorted(found))

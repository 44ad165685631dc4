"""Compare two dump trees tensor by tensor: msaccucmp's values plus a verdict (TF-free).

:func:`compare_trees` pairs the tensors (:mod:`.matching`), then loads one pair at a
time (memory-mapped when large), computes the chosen msaccucmp algorithms
(:mod:`tf2npu.debug.compare.metrics`) and judges the pair against its tolerance
(:mod:`.tolerance`), and drops the data before the next pair: memory holds one pair,
whatever the size of the trees. The result is a :class:`CompareReport` of :class:`TensorDiff`
values; the CSV, JSON and terminal views are in :mod:`tf2npu.debug.compare.report` and the CLI.

Verdicts:

``pass``
    every element within ``atol + rtol*|truth|``, NaN/Inf at the same places on both sides.
``fail``
    an element outside it, a NaN/Inf on one side only, or a different number of elements.
``unmatched``
    no counterpart in the other tree (or no dump file at all for a graph op).
``error``
    a file that cannot be read as a numeric ``.npy`` array.

The *required tolerance* of a compared tensor is the smallest ``atol`` with which it would pass
at its ``rtol``: ``max(0, max_i(|x_i - y_i| - rtol*|y_i|))`` over the elements finite on both
sides; ``inf`` when NaN/Inf differ; NaN when nothing was compared. A tensor passes exactly when
its required tolerance is at most its ``atol``.

The *first divergent op* is the first op, in execution order, with an output that fails while
none of its inputs fails: inputs are judged by the op's own input dumps where there are some,
else by the outputs feeding them (through the graph JSON). It is where a difference starts,
not where it is inherited (:meth:`CompareReport.first_divergence`).
"""

from __future__ import annotations

import functools
import io
import math
import os
import re
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tf2npu.artifacts.dump import ge_dtype, load_nano_tensor
from tf2npu.debug.compare.matching import OpNode, Plan, TensorFile, TensorPair, Unit, plan_compare
from tf2npu.debug.compare.metrics import (
    ALGORITHMS,
    CHUNK,
    MetricResult,
    PairStats,
    is_scalar_shape,
    measure,
    results,
)
from tf2npu.debug.compare.tolerance import Tolerance, Tolerances, coarsest
from tf2npu.fs import open_regular

__all__ = [
    "ERROR",
    "FAIL",
    "OVERFLOW_MAX_VALUE",
    "PASS",
    "UNMATCHED",
    "CompareReport",
    "Divergence",
    "TensorDiff",
    "UnitResult",
    "compare_plan",
    "compare_trees",
    "diff_pair",
    "read_npy",
]

PASS, FAIL, UNMATCHED, ERROR = "pass", "fail", "unmatched", "error"
OVERFLOW_MAX_VALUE = 65504.0
"""A float16 tensor with an element this large in magnitude (or infinite) has overflowed."""
MMAP_MIN_BYTES = 1 << 20
"""Files at least this large are memory-mapped; smaller ones are read (cheaper to open)."""
NAN = "NaN"
DEFAULT_TOLERANCES = Tolerances()
"""No ``--tolerance`` rule: every tensor is judged by its dtype's default."""


@dataclass(frozen=True, slots=True)
class TensorDiff:
    """One compared tensor: the pair, msaccucmp's values and messages, and the verdict.

    Truthy unless the tensor fails its tolerance (Polygraphy's convention: a diff is "ok").
    """

    pair: TensorPair
    left_dtype: str
    """GE dtype name of the first tree's data (``DT_FLOAT16``), ``NaN`` when absent."""
    right_dtype: str
    shape: tuple[int, ...] | None
    """The first tree's tensor shape (the second's when the first has none)."""
    metrics: tuple[MetricResult, ...]
    overflow: str
    """``YES``/``NO`` for a float16 first-tree tensor, else ``NaN`` ("" when not detected)."""
    messages: tuple[str, ...]
    """``CompareFailReason``: msaccucmp's messages."""
    verdict: str
    reason: str
    tolerance: Tolerance | None = None
    judged_as: str | None = None
    """The numpy dtype the tensor was judged as (see :mod:`tf2npu.debug.compare.tolerance`)."""
    required: float = math.nan
    """The required tolerance (module docstring)."""
    bytes_read: int = 0

    def __bool__(self) -> bool:
        return self.verdict != FAIL

    def metric(self, name: str) -> MetricResult | None:
        """The value of algorithm ``name``, if it was computed."""
        return next((m for m in self.metrics if m.name == name), None)


# -- one pair ---------------------------------------------------------------------------------


def diff_pair(
    pair: TensorPair,
    algorithms: Sequence[str] = ALGORITHMS,
    tolerances: Tolerances = DEFAULT_TOLERANCES,
    *,
    overflow_detection: bool = False,
) -> TensorDiff:
    """Load, measure and judge one pair; the data are dropped on return."""
    left = _load(pair.left)
    right = _load(pair.right)
    problem = next((p for p in (left, right) if isinstance(p, str)), None)
    x = left if isinstance(left, np.ndarray) else None
    y = right if isinstance(right, np.ndarray) else None
    base = _Base(pair, algorithms, x, y, overflow_detection)
    if problem is not None:
        return base.diff(ERROR, problem)
    if x is None or y is None:
        return base.diff(UNMATCHED, _unmatched_reason(pair))
    return _compared(base, x, y, tolerances)


@dataclass(slots=True)
class _Base:
    """What every diff of a pair has, whatever its verdict."""

    pair: TensorPair
    algorithms: Sequence[str]
    x: np.ndarray[Any, Any] | None
    y: np.ndarray[Any, Any] | None
    overflow_detection: bool
    messages: list[str] = field(default_factory=list)

    def diff(
        self,
        verdict: str,
        reason: str,
        *,
        metrics: tuple[MetricResult, ...] = (),
        tolerance: Tolerance | None = None,
        judged_as: str | None = None,
        required: float = math.nan,
    ) -> TensorDiff:
        metrics = metrics or tuple(MetricResult(name, math.nan, NAN) for name in self.algorithms)
        notes = [self.pair.note] if self.pair.note else []
        messages = tuple(dict.fromkeys([*notes, *self.messages, *_metric_messages(metrics)]))
        shape = _shape(self.x if self.x is not None else self.y)
        compared = verdict in (PASS, FAIL)
        return TensorDiff(
            self.pair, _dtype(self.x), _dtype(self.y), shape, metrics, self._overflow(),
            messages, verdict, reason, tolerance, judged_as, required,
            _nbytes(self.x) + _nbytes(self.y) if compared else 0,
        )  # fmt: skip

    def _overflow(self) -> str:
        if not self.overflow_detection:
            return ""
        if self.x is None or self.x.dtype != np.float16:
            return NAN
        flat = self.x.ravel(order="K")  # a view whatever the memory order
        with np.errstate(invalid="ignore"):  # NaN compares False: only |x| >= 65504 counts
            for start in range(0, flat.size, CHUNK):
                if (np.abs(flat[start : start + CHUNK]) >= OVERFLOW_MAX_VALUE).any():
                    return "YES"
        return "NO"


def _compared(
    base: _Base, x: np.ndarray[Any, Any], y: np.ndarray[Any, Any], tolerances: Tolerances
) -> TensorDiff:
    pair = base.pair
    if x.dtype.kind not in "biuf" or y.dtype.kind not in "biuf":
        return base.diff(ERROR, f"dtypes {x.dtype} and {y.dtype}: only numbers are compared")
    if x.size != y.size:
        base.messages.append(
            f"The my output dump data size ({x.size}) in {_file(pair.left)!r} does not match "
            f"the ground truth dump data size ({y.size}) in {_file(pair.right)!r}."
        )
        reason = f"sizes differ: {_shape_text(x.shape)} has {x.size} elements, truth "
        reason += f"{_shape_text(y.shape)} {y.size}"
        return base.diff(FAIL, reason, required=math.inf)
    judged = _judged(pair.left, pair.right, x, y)
    tolerance = tolerances.resolve((*pair.user_names, pair.op_name), judged)
    stats = measure(x, y, base.algorithms, rtol=tolerance.rtol, atol=tolerance.atol)
    metrics = results(
        stats,
        base.algorithms,
        scalar=is_scalar_shape(x.shape),
        x_file=_file(pair.left),
        y_file=_file(pair.right),
        boolean=x.dtype == np.bool_ and y.dtype == np.bool_,
    )
    verdict, reason, required = _judge(stats, tolerance, x.shape)
    if x.shape != y.shape:
        reason = f"shapes differ ({_shape_text(x.shape)} vs {_shape_text(y.shape)}), compared "
        reason += f"element by element in order; {reason}"
    return base.diff(
        verdict, reason, metrics=metrics, tolerance=tolerance, judged_as=judged, required=required
    )


def _judge(
    stats: PairStats, tolerance: Tolerance, shape: tuple[int, ...]
) -> tuple[str, str, float]:
    """Verdict, reason and required tolerance from the closeness part of ``stats``."""
    of = f"of {stats.size}"
    if stats.mismatched:
        where = _position(stats.first_mismatch, shape)
        return FAIL, (
            f"{stats.mismatched} {of} elements NaN/Inf on one side only; first at {where}: "
            f"{stats.mismatch_x:.6g} vs {stats.mismatch_y:.6g}"
        ), math.inf  # fmt: skip
    required = max(stats.max_excess, 0.0)
    bound = f"{tolerance.text()} ({tolerance.source})"
    if stats.violations:
        where = _position(stats.worst, shape)
        return FAIL, (
            f"{stats.violations} {of} elements outside {bound}; worst at {where}: "
            f"{stats.worst_x:.6g} vs {stats.worst_y:.6g}"
        ), required  # fmt: skip
    reason = f"within {bound}" if stats.size else "no elements"
    if not stats.finite:
        reason += "; NaN/Inf at the same places on both sides"
    return PASS, reason, required


def _judged(
    left: TensorFile | None,
    right: TensorFile | None,
    x: np.ndarray[Any, Any],
    y: np.ndarray[Any, Any],
) -> str | None:
    """The dtype the pair is judged as: None (exact) unless one side holds floats."""
    if x.dtype.kind != "f" and y.dtype.kind != "f":
        return None
    carried = [side.carried for side in (left, right) if side is not None]
    return coarsest([_dtype_name(x.dtype), _dtype_name(y.dtype), *carried])


@functools.cache
def _dtype_name(dtype: np.dtype[Any]) -> str:
    """``dtype.name``, remembered (numpy computes the name on every access)."""
    return dtype.name


@functools.cache
def _ge_name(dtype: np.dtype[Any]) -> str:
    return ge_dtype(dtype)


def _unmatched_reason(pair: TensorPair) -> str:
    if pair.left is None and pair.right is None:
        return "no dump file for this op"
    if pair.right is None:
        return "no counterpart in the second tree"
    return "no tensor in the first tree"


def _load(side: TensorFile | None) -> np.ndarray[Any, Any] | str | None:
    """The array of ``side`` (memory-mapped when large), or why it cannot be read."""
    if side is None:
        return None
    if side.member is not None:
        try:
            return load_nano_tensor(side.path, *side.member)
        except (OSError, ValueError, KeyError) as exc:
            return f"cannot read {side.member[0]} {side.member[1]} of {str(side.path)!r}: {exc}"
    try:
        with open_regular(side.path) as stream:
            small = os.fstat(stream.fileno()).st_size < MMAP_MIN_BYTES
            data = read_npy(stream.read()) if small else None
        if data is None:  # numpy maps a file by its name only
            data = np.load(side.path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        return f"cannot read {str(side.path)!r}: {exc}"
    if not isinstance(data, np.ndarray):
        return f"cannot read {str(side.path)!r}: not one array (an .npz archive?)"
    return data


_NPY_MAGIC = b"\x93NUMPY"
_NPY_HEADER = re.compile(
    rb"\{'descr': '([<>|=][a-zA-NP-Z][0-9]*)', 'fortran_order': False, 'shape': \(([0-9, ]*)\), \}"
)


def read_npy(data: bytes) -> np.ndarray[Any, Any]:
    """The array of a ``.npy`` file's bytes (a view of them).

    The header :func:`numpy.save` writes for a plain C-ordered array is parsed with a regular
    expression (``np.load`` evaluates it as Python, which costs more than comparing a small
    pair); any other header goes to :func:`numpy.load`, pickles refused.

    Raises:
        ValueError: not a ``.npy`` file, or fewer bytes than the header announces.
    """
    if data[:6] != _NPY_MAGIC or len(data) < 10:
        raise ValueError("not a .npy file (no NUMPY magic)")
    wide = data[6] >= 2
    start = 12 if wide else 10
    length = int.from_bytes(data[8:start], "little")
    match = _NPY_HEADER.match(data, start, start + length)
    if match is None:
        result = np.load(io.BytesIO(data), allow_pickle=False)
        if not isinstance(result, np.ndarray):
            raise ValueError("not one array")
        return result
    dtype = np.dtype(match[1].decode("ascii"))
    shape = tuple(int(d) for d in match[2].split(b",") if d.strip())
    count = math.prod(shape)
    return np.frombuffer(data, dtype, count, start + length).reshape(shape)


def _metric_messages(metrics: Sequence[MetricResult]) -> list[str]:
    return [m.message for m in metrics if m.message]


def _file(side: TensorFile | None) -> str:
    return "" if side is None else str(side.path)


def _dtype(data: np.ndarray[Any, Any] | None) -> str:
    """The ``DataType`` column: the array's numpy name, as msaccucmp 26.2.0 writes it."""
    return NAN if data is None else _dtype_name(data.dtype)


def _shape(data: np.ndarray[Any, Any] | None) -> tuple[int, ...] | None:
    return None if data is None else tuple(int(d) for d in data.shape)


def _nbytes(data: np.ndarray[Any, Any] | None) -> int:
    return 0 if data is None else int(data.nbytes)


def _shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, shape)) + "]"


def _position(flat: int, shape: tuple[int, ...]) -> str:
    if flat < 0:
        return "?"
    if not shape:
        return "[]"
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]"


# -- whole trees --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Divergence:
    """An op whose output fails while none of its inputs does."""

    unit: Unit
    op: OpNode
    failed: tuple[TensorDiff, ...]
    """Its failing outputs."""
    inputs_agree: int
    """Inputs judged (own input dumps, else the outputs feeding them) that pass."""
    inputs_unknown: int
    """Inputs that could not be judged (not dumped, not matched, or no graph JSON)."""

    @property
    def counterpart_pass_name(self) -> str:
        """The fusion pass that made the failing outputs' counterpart in the second tree (NPU
        vs NPU: seed 001 puts the fusion-on dump second)."""
        return next((d.pair.right.pass_name for d in self.failed if d.pair.right), "")


@dataclass(frozen=True, slots=True)
class UnitResult:
    """The diffs of one compared model at one step, in CSV order."""

    unit: Unit
    diffs: tuple[TensorDiff, ...]

    def divergences(self) -> Iterator[Divergence]:
        """The ops where a difference starts, in execution order."""
        by_op = self._by_op()
        outputs = self._outputs()
        for op in self.unit.ops:
            mine = by_op.get(op.name, [])
            failed = tuple(d for d in mine if d.pair.kind == "output" and d.verdict == FAIL)
            if not failed:
                continue
            states = [_state(d) for _, d in _input_diffs(op, mine, outputs)]
            if False in states:
                continue
            yield Divergence(self.unit, op, failed, states.count(True), states.count(None))

    def input_diffs(self, op: OpNode) -> list[tuple[int, TensorDiff | None]]:
        """Per input slot of ``op``: the diff it is judged by (its own input dump, else the
        output feeding it), or None when neither was compared."""
        return _input_diffs(op, self._by_op().get(op.name, []), self._outputs())

    def output_diffs(self, op: OpNode) -> list[TensorDiff]:
        """The diffs of ``op``'s outputs, in slot order."""
        mine = [d for d in self._by_op().get(op.name, []) if d.pair.kind == "output"]
        return sorted(mine, key=lambda d: d.pair.slot)

    def _by_op(self) -> dict[str, list[TensorDiff]]:
        by_op: dict[str, list[TensorDiff]] = defaultdict(list)
        for diff in self.diffs:
            by_op[diff.pair.op_name].append(diff)
        return by_op

    def _outputs(self) -> dict[tuple[str, int], TensorDiff]:
        return {(d.pair.op_name, d.pair.slot): d for d in self.diffs if d.pair.kind == "output"}


def _input_diffs(
    op: OpNode, mine: list[TensorDiff], outputs: dict[tuple[str, int], TensorDiff]
) -> list[tuple[int, TensorDiff | None]]:
    """Per input slot of ``op``: its own input dump's diff when that was compared, else the
    diff of the output feeding it (through the graph JSON), else whichever exists."""
    own = {d.pair.slot: d for d in mine if d.pair.kind == "input"}
    slots = max(len(op.inputs), max(own, default=-1) + 1)
    found: list[tuple[int, TensorDiff | None]] = []
    for slot in range(slots):
        diff = own.get(slot)
        producer = op.inputs[slot] if slot < len(op.inputs) else None
        if (diff is None or diff.verdict not in (PASS, FAIL)) and producer is not None:
            fed = outputs.get(producer)  # a TensorDiff that fails is falsy: no `or` here
            diff = fed if fed is not None else diff
        found.append((slot, diff))
    return found


def _state(diff: TensorDiff | None) -> bool | None:
    """True passes, False fails, None not judged."""
    return None if diff is None or diff.verdict not in (PASS, FAIL) else bool(diff)


@dataclass(frozen=True, slots=True)
class CompareReport:
    """Everything one comparison found; truthy when no tensor fails and none is unreadable:
    a comparison that could not read a tensor has not shown that the dumps agree."""

    plan: Plan
    algorithms: tuple[str, ...]
    overflow_detection: bool
    units: tuple[UnitResult, ...]
    seconds: float = 0.0

    def __bool__(self) -> bool:
        return not any(d.verdict in (FAIL, ERROR) for d in self.diffs())

    def diffs(self) -> Iterator[TensorDiff]:
        for unit in self.units:
            yield from unit.diffs

    def failed(self) -> Iterator[TensorDiff]:
        return (d for d in self.diffs() if d.verdict == FAIL)

    def counts(self) -> dict[str, int]:
        """Tensors (rows with a tensor on either side) per verdict, and ``compared``."""
        totals = dict.fromkeys((PASS, FAIL, UNMATCHED, ERROR), 0)
        for diff in self.diffs():
            totals[diff.verdict] += 1
        totals["compared"] = totals[PASS] + totals[FAIL]
        return totals

    def divergences(self) -> list[Divergence]:
        """Every op where a difference starts (units in order, then execution order)."""
        return [d for unit in self.units for d in unit.divergences()]

    def first_divergence(self) -> Divergence | None:
        """The first op whose outputs fail while its inputs agree, or None."""
        return next((d for unit in self.units for d in unit.divergences()), None)

    @property
    def bytes_read(self) -> int:
        return sum(d.bytes_read for d in self.diffs())


def compare_plan(
    plan: Plan,
    algorithms: Sequence[str] = ALGORITHMS,
    tolerances: Tolerances = DEFAULT_TOLERANCES,
    *,
    overflow_detection: bool = False,
) -> CompareReport:
    """Diff every pair of ``plan``, one pair in memory at a time."""
    start = time.perf_counter()
    units = tuple(
        UnitResult(
            unit,
            tuple(
                diff_pair(p, algorithms, tolerances, overflow_detection=overflow_detection)
                for p in unit.pairs
            ),
        )
        for unit in plan.units
    )
    seconds = time.perf_counter() - start
    return CompareReport(plan, tuple(algorithms), overflow_detection, units, seconds)


def compare_trees(
    left: str | Path,
    right: str | Path,
    *,
    graph_json: str | Path | None = None,
    close_graph_json: str | Path | None = None,
    algorithms: Sequence[str] = ALGORITHMS,
    tolerances: Tolerances = DEFAULT_TOLERANCES,
    overflow_detection: bool = False,
) -> CompareReport:
    """Compare dump tree ``left`` (``NPU_DUMP``) with ``right`` (``GOLDEN_DUMP``).

    Raises:
        UsageError: see :func:`tf2npu.debug.compare.matching.plan_compare`.
    """
    plan = plan_compare(
        Path(left),
        Path(right),
        graph_json=None if graph_json is None else Path(graph_json),
        close_graph_json=None if close_graph_json is None else Path(close_graph_json),
    )
    return compare_plan(plan, algorithms, tolerances, overflow_detection=overflow_detection)

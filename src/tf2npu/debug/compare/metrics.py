"""msaccucmp's ten comparison algorithms, for one pair of tensors at a time (TF-free).

``x`` is the tensor under test (the NPU side, msaccucmp's "my output"), ``y`` the reference
(the golden side, its "ground truth"); both are flattened and read as float64. The formulas and
the edge cases are those of reference debug-tools.md §3.3; ε is ``np.finfo(float).eps``:

====  ==========================  ============================================================
 #    name                        value
====  ==========================  ============================================================
 0    CosineSimilarity            Σxy / (‖x‖‖y‖), at most 1. ``1.000000`` and "This tensor is
                                  scalar." when every dimension is 1; ``1.0`` when both norms
                                  are ≤ ε; NaN and "Cannot compare by Cosine Similarity. All
                                  the data is zero in <file>." when one side is all zero
                                  (its norm ≤ ε², as msaccucmp tests ``sqrt(norm) <= ε``)
 1    MaxAbsoluteError            max|x − y|
 2    AccumulatedRelativeError    Σ |x/y − 1| over the elements with |y| > ε
 3    RelativeEuclideanDistance   sqrt(Σ(x − y)² / Σy²); 0 when sqrt(Σy²) ≤ ε
 4    KullbackLeiblerDivergence   each side min-max scaled to [0, 1] (when its range is not
                                  0), floored at float32's ε, made a distribution p = x/Σx,
                                  q = y/Σy; Σ p·log(p/q), 0 when below ε. NaN and "Cannot
                                  compare by KL Divergence. All the data is zero in <file>."
                                  when a side is all zero (both: "... in '<x>' and '<y>'.");
                                  an infinite result says "The data contains 0 in '<y>'."
 5    StandardDeviation           ``(mean_x;std_x),(mean_y;std_y)``, 3 decimals, values below
                                  0.001 in magnitude written as 0
 6    MeanAbsoluteError           mean|x − y|
 7    RootMeanSquareError         sqrt(mean((x − y)²))
 8    MaxRelativeError            max over all elements of |x/y − 1|, 0 where |y| ≤ ε
 9    MeanRelativeError           mean over all elements of the same term
====  ==========================  ============================================================

Values are written with six decimals (``'{:.6f}'``); an unavailable value is ``NaN``. NaN or
Inf in the data propagate as numpy propagates them (a NaN in ``x`` makes every metric but the
relative ones at NaN positions of ``y`` NaN), as in msaccucmp; :class:`PairStats` counts them so
the caller can say why. Two differences from msaccucmp, both deliberate: the arithmetic is
float64 (msaccucmp casts to float32 first), and a KL side that is all zero gives NaN as §3.3
says (msaccucmp floors before testing, so its test never fires and it prints a number).

The data are read in chunks of :data:`CHUNK` elements, each converted to float64 into reused
buffers, so a pair costs two float64 chunks of memory however large it is, and ``x``/``y`` can be
``np.load(..., mmap_mode="r")`` arrays. A second pass over the data is made only for
KullbackLeiblerDivergence and StandardDeviation (they need the minimum, maximum and mean first).

>>> [r.text for r in compare_pair(np.array([1.0, 2.0]), np.array([1.0, 4.0]), ("0", "1"))]
['0.976187', '2.000000']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from tf2npu.errors import UsageError

__all__ = [
    "ALGORITHMS",
    "CHUNK",
    "FLOAT_EPSILON",
    "MetricResult",
    "PairStats",
    "compare_pair",
    "is_scalar_shape",
    "measure",
    "results",
    "select_algorithms",
]

ALGORITHMS: tuple[str, ...] = (
    "CosineSimilarity",
    "MaxAbsoluteError",
    "AccumulatedRelativeError",
    "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence",
    "StandardDeviation",
    "MeanAbsoluteError",
    "RootMeanSquareError",
    "MaxRelativeError",
    "MeanRelativeError",
)
"""The built-in algorithms, in the order whose positions ``-alg`` accepts as indices 0..9."""

FLOAT_EPSILON = float(np.finfo(float).eps)
KL_FLOOR = float(np.finfo(np.float32).eps)
"""KullbackLeiblerDivergence floors the scaled data here, so no probability is 0."""
STD_ZERO = 0.001
"""StandardDeviation writes means and deviations below this (in magnitude) as 0."""
CHUNK = 1 << 16
"""Elements per chunk: two float64 chunks and their temporaries stay in a core's L2 cache."""
NAN_TEXT = "NaN"

_SECOND_PASS = frozenset({"KullbackLeiblerDivergence", "StandardDeviation"})
_RANGE = frozenset({"KullbackLeiblerDivergence"})


def select_algorithms(spec: str | Sequence[str], flag: str = "--alg") -> tuple[str, ...]:
    """The algorithms ``spec`` names: ``all``, or names and indices separated by commas.

    The order given is kept and repeats are dropped, as msaccucmp's ``-alg`` does.

    Raises:
        UsageError: a name or index that is not an algorithm, or nothing named.

    >>> select_algorithms("0,MaxAbsoluteError,7")
    ('CosineSimilarity', 'MaxAbsoluteError', 'RootMeanSquareError')
    """
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    words = [item.strip() for item in items if item.strip()]
    if [word.lower() for word in words] == ["all"]:
        return ALGORITHMS
    chosen: list[str] = []
    for word in words:
        name = _algorithm(word, spec, flag)
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise UsageError(f"{flag} {_shown(spec)}: names no algorithm; {_ALG_FIX}")
    return tuple(chosen)


_ALG_FIX = "give all, or names or indices separated by commas: " + ", ".join(
    f"{i} {name}" for i, name in enumerate(ALGORITHMS)
)


def _algorithm(word: str, spec: str | Sequence[str], flag: str) -> str:
    if word.isdigit() and int(word) < len(ALGORITHMS):
        return ALGORITHMS[int(word)]
    for name in ALGORITHMS:
        if word == name:
            return name
    raise UsageError(f"{flag} {_shown(spec)}: {word!r} is no algorithm; {_ALG_FIX}")


def _shown(spec: str | Sequence[str]) -> str:
    return repr(spec if isinstance(spec, str) else ",".join(spec))


def is_scalar_shape(shape: Sequence[int]) -> bool:
    """msaccucmp's "scalar": every dimension is 1 (a 0-d shape too)."""
    return all(dim == 1 for dim in shape)


class MetricResult(NamedTuple):
    """One algorithm's value for one pair: the number (NaN when unavailable; NaN for
    StandardDeviation, whose four numbers are in ``text``), the CSV cell, and msaccucmp's
    message for ``CompareFailReason`` ("" when none). A tuple: one is made per algorithm and
    pair, and a frozen dataclass costs several times more to make."""

    name: str
    value: float
    text: str
    message: str = ""


@dataclass(slots=True)
class PairStats:
    """What one pass (two for KL and StandardDeviation) over a pair accumulates.

    The ``excess`` fields judge closeness for a caller's ``rtol``/``atol``: an element's excess
    is ``|x - y| - rtol*|y|``; it is within tolerance when its excess is ≤ ``atol``. Elements
    where either side is NaN or Inf count as within tolerance when both sides hold the same
    value (both NaN, or the same infinity) and as ``mismatched`` otherwise.
    """

    size: int = 0
    sum_x: float = 0.0
    sum_y: float = 0.0
    sum_xx: float = 0.0
    sum_yy: float = 0.0
    sum_xy: float = 0.0
    sum_dd: float = 0.0
    sum_ad: float = 0.0
    max_ad: float = -math.inf
    sum_rel: float = 0.0
    max_rel: float = -math.inf
    min_x: float = math.inf
    max_x: float = -math.inf
    min_y: float = math.inf
    max_y: float = -math.inf
    x_nan: int = 0
    x_inf: int = 0
    y_nan: int = 0
    y_inf: int = 0
    mismatched: int = 0
    """Elements where one side is NaN or Inf and the other does not hold the same value."""
    max_excess: float = -math.inf
    """The largest excess over the elements finite on both sides (-inf when there is none)."""
    worst: int = -1
    """Flat position of ``max_excess`` (-1 when none)."""
    worst_x: float = math.nan
    worst_y: float = math.nan
    violations: int = 0
    """Elements finite on both sides whose excess is above ``atol``."""
    first_mismatch: int = -1
    """Flat position of the first mismatched element (-1 when none)."""
    mismatch_x: float = math.nan
    mismatch_y: float = math.nan
    ss_x: float = 0.0
    ss_y: float = 0.0
    kl: float = math.nan

    @property
    def finite(self) -> bool:
        """Neither side holds NaN or Inf."""
        return self.x_nan + self.x_inf + self.y_nan + self.y_inf == 0


def measure(
    x: np.ndarray[Any, Any],
    y: np.ndarray[Any, Any],
    algorithms: Iterable[str] = ALGORITHMS,
    *,
    rtol: float = 0.0,
    atol: float = 0.0,
) -> PairStats:
    """Accumulate :class:`PairStats` for ``x`` (tested) against ``y`` (reference).

    ``x`` and ``y`` must hold the same number of elements (any shapes; they are flattened);
    they may be memory-mapped. Only the passes ``algorithms`` need are made.
    """
    xs, ys = np.ravel(x), np.ravel(y)
    if xs.size != ys.size:
        raise ValueError(f"sizes differ: {xs.size} and {ys.size} elements")
    names = frozenset(algorithms)
    stats = PairStats(size=int(xs.size))
    work = _Workspace.get()
    ranges = bool(names & _RANGE)
    with np.errstate(all="ignore"):  # NaN and Inf propagate; they are counted, not raised
        for start in range(0, xs.size, CHUNK):
            _first_pass(stats, work.load(xs, ys, start), work, start, rtol, atol, ranges)
        if names & _SECOND_PASS and stats.size:
            _second_pass(stats, xs, ys, work, names)
    return stats


class _Workspace:
    """Float64 chunk buffers reused from pair to pair (allocating them per chunk costs more
    than the arithmetic on small pairs, and page faults on large ones). ``x`` and ``y`` are
    the two rows of one buffer, so one call sums, squares or scales both sides."""

    _shared: _Workspace | None = None

    def __init__(self) -> None:
        self.xy = np.empty((2, CHUNK))
        self.scratch = np.empty((2, CHUNK))
        self.d = np.empty(CHUNK)
        self.a = np.empty(CHUNK)
        self.r = np.empty(CHUNK)
        self.mask = np.empty(CHUNK, dtype=bool)

    @classmethod
    def get(cls) -> _Workspace:
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    def load(
        self, xs: np.ndarray[Any, Any], ys: np.ndarray[Any, Any], start: int
    ) -> np.ndarray[Any, Any]:
        """Chunk ``start`` of both sides as the rows of a (2, n) float64 view."""
        stop = min(start + CHUNK, xs.size)
        xy = self.xy[:, : stop - start]
        np.copyto(xy[0], xs[start:stop], casting="unsafe")
        np.copyto(xy[1], ys[start:stop], casting="unsafe")
        return xy


def _first_pass(
    stats: PairStats,
    xy: np.ndarray[Any, Any],
    work: _Workspace,
    start: int,
    rtol: float,
    atol: float,
    ranges: bool,
) -> None:
    xc, yc = xy
    n = xc.size
    d, ay, rel, mask = work.d[:n], work.a[:n], work.r[:n], work.mask[:n]
    stats.sum_xx += float(xc @ xc)  # three dot products beat one (2, n) @ (n, 2) product
    stats.sum_yy += float(yc @ yc)
    stats.sum_xy += float(xc @ yc)
    sum_x, sum_y = xy.sum(axis=1).tolist()
    stats.sum_x, stats.sum_y = stats.sum_x + sum_x, stats.sum_y + sum_y
    np.subtract(xc, yc, out=d)
    dd = float(d @ d)
    stats.sum_dd += dd
    np.abs(d, out=d)  # d is |x - y| from here on
    stats.sum_ad += float(d.sum())
    stats.max_ad = _max(stats.max_ad, float(d.max()))
    np.abs(yc, out=ay)
    np.greater(ay, FLOAT_EPSILON, out=mask)
    finite = math.isfinite(dd)
    if finite:
        np.divide(d, ay, out=rel)  # |x - y| / |y| == |x/y - 1| for finite data
    else:
        np.divide(xc, yc, out=rel)
        np.subtract(rel, 1.0, out=rel)
        np.abs(rel, out=rel)
    # the relative terms are 0 where |y| <= eps (a masked divide is twice as slow as this)
    np.logical_not(mask, out=mask)
    np.copyto(rel, 0.0, where=mask)
    stats.sum_rel += float(rel.sum())
    stats.max_rel = _max(stats.max_rel, float(rel.max()))
    if ranges:
        (low_x, low_y), (high_x, high_y) = xy.min(axis=1).tolist(), xy.max(axis=1).tolist()
        stats.min_x, stats.min_y = _min(stats.min_x, low_x), _min(stats.min_y, low_y)
        stats.max_x, stats.max_y = _max(stats.max_x, high_x), _max(stats.max_y, high_y)
    if finite:
        _closeness(stats, xc, yc, d, ay, start, rtol, atol)
    else:
        _closeness_nonfinite(stats, xc, yc, d, ay, start, rtol, atol)


def _closeness(
    stats: PairStats,
    xc: np.ndarray[Any, Any],
    yc: np.ndarray[Any, Any],
    ad: np.ndarray[Any, Any],
    ay: np.ndarray[Any, Any],
    start: int,
    rtol: float,
    atol: float,
) -> None:
    """Excess over the tolerance, all elements finite. ``ay`` is overwritten."""
    excess = ay
    if rtol:
        np.multiply(ay, -rtol, out=excess)
        np.add(excess, ad, out=excess)
    else:
        np.copyto(excess, ad)
    top = float(excess.max())
    if top > atol:
        stats.violations += int(np.count_nonzero(excess > atol))
    if top > stats.max_excess:
        at = int(excess.argmax())
        stats.max_excess, stats.worst = top, start + at
        stats.worst_x, stats.worst_y = float(xc[at]), float(yc[at])


def _closeness_nonfinite(
    stats: PairStats,
    xc: np.ndarray[Any, Any],
    yc: np.ndarray[Any, Any],
    ad: np.ndarray[Any, Any],
    ay: np.ndarray[Any, Any],
    start: int,
    rtol: float,
    atol: float,
) -> None:
    """The same where some element is NaN or Inf: counted, and judged by equality."""
    x_nan, y_nan = np.isnan(xc), np.isnan(yc)
    x_inf, y_inf = np.isinf(xc), np.isinf(yc)
    stats.x_nan += int(np.count_nonzero(x_nan))
    stats.y_nan += int(np.count_nonzero(y_nan))
    stats.x_inf += int(np.count_nonzero(x_inf))
    stats.y_inf += int(np.count_nonzero(y_inf))
    special = x_nan | y_nan | x_inf | y_inf
    same = (x_nan & y_nan) | ((xc == yc) & (x_inf | y_inf))
    mismatched = special & ~same
    count = int(np.count_nonzero(mismatched))
    if count:
        stats.mismatched += count
        if stats.first_mismatch < 0:
            at = int(mismatched.argmax())
            stats.first_mismatch = start + at
            stats.mismatch_x, stats.mismatch_y = float(xc[at]), float(yc[at])
    both = ~special
    if not both.any():
        return
    excess = np.where(both, ad - rtol * ay, -np.inf)
    top = float(excess.max())
    if top > atol:
        stats.violations += int(np.count_nonzero(excess > atol))
    if top > stats.max_excess:
        at = int(excess.argmax())
        stats.max_excess, stats.worst = top, start + at
        stats.worst_x, stats.worst_y = float(xc[at]), float(yc[at])


def _second_pass(
    stats: PairStats,
    xs: np.ndarray[Any, Any],
    ys: np.ndarray[Any, Any],
    work: _Workspace,
    names: frozenset[str],
) -> None:
    std, kl = "StandardDeviation" in names, "KullbackLeiblerDivergence" in names
    means = np.array([[stats.sum_x], [stats.sum_y]]) / stats.size
    # KL scales each side to [0, 1] by its minimum and range; a side of range 0 stays as it is
    spans = (stats.max_x - stats.min_x, stats.max_y - stats.min_y)
    lows = (stats.min_x, stats.min_y)
    low = np.array([[lows[i] if spans[i] != 0 else 0.0] for i in (0, 1)])
    span = np.array([[spans[i] if spans[i] != 0 else 1.0] for i in (0, 1)])
    totals = np.zeros(2)
    weighted = 0.0
    for start in range(0, xs.size, CHUNK):
        # One chunk in all: the first pass left it in the buffer.
        xy = work.xy[:, : xs.size] if xs.size <= CHUNK else work.load(xs, ys, start)
        scratch = work.scratch[:, : xy.shape[1]]
        if std:
            np.subtract(xy, means, out=scratch)
            stats.ss_x += float(scratch[0] @ scratch[0])
            stats.ss_y += float(scratch[1] @ scratch[1])
        if kl:
            weighted += _kl_chunk(xy, low, span, scratch, work.d[: xy.shape[1]], totals)
    if kl:
        # Σ (p/P)·log((p/P)/(q/Q)) = (Σ p·log(p/q))/P + log(Q/P), since Σ p/P = 1.
        total_p, total_q = totals.tolist()
        ratio = total_q / total_p if total_p else math.nan
        stats.kl = weighted / total_p + math.log(ratio) if ratio > 0 else math.nan


def _kl_chunk(
    xy: np.ndarray[Any, Any],
    low: np.ndarray[Any, Any],
    span: np.ndarray[Any, Any],
    scratch: np.ndarray[Any, Any],
    log: np.ndarray[Any, Any],
    totals: np.ndarray[Any, Any],
) -> float:
    """One chunk of KL: scale and floor both sides, add their sums to ``totals``, and return
    Σ p·log(p/q) over the chunk (p, q not yet divided by their totals)."""
    np.subtract(xy, low, out=scratch)
    np.divide(scratch, span, out=scratch)
    np.maximum(scratch, KL_FLOOR, out=scratch)
    totals += scratch.sum(axis=1)
    p, q = scratch
    np.divide(p, q, out=log)
    np.log(log, out=log)
    return float(p @ log)


def _max(a: float, b: float) -> float:
    """max that propagates NaN, as numpy's reductions do."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)


def _min(a: float, b: float) -> float:
    return math.nan if math.isnan(a) or math.isnan(b) else min(a, b)


# -- from statistics to msaccucmp's values -------------------------------------------------


def results(
    stats: PairStats,
    algorithms: Sequence[str] = ALGORITHMS,
    *,
    scalar: bool = False,
    x_file: str = "",
    y_file: str = "",
    boolean: bool = False,
) -> tuple[MetricResult, ...]:
    """The values of ``algorithms`` from ``stats``; ``scalar`` is :func:`is_scalar_shape` of
    the tensor, ``x_file``/``y_file`` name the files in messages; ``boolean``: both tensors
    are bool, for which msaccucmp computes the cosine only (:data:`_BOOL_FAILURES`)."""
    if stats.size == 0:
        return tuple(_empty(name, x_file, y_file) for name in algorithms)
    if boolean:
        return tuple(_bool(name, stats, scalar, x_file, y_file) for name in algorithms)
    return tuple(_VALUES[name](stats, scalar, x_file, y_file) for name in algorithms)


_BOOL_FAILURES = {
    "RelativeEuclideanDistance": (
        "Failed to execute 'compare' in 'RelativeEuclideanDistance'. numpy boolean subtract, "
        "the `-` operator, is not supported, use the bitwise_xor, the `^` operator, or the "
        "logical_xor function instead."
    ),
}
"""msaccucmp 26.2.0 on two bool tensors (``algorithm_manager.py``): the cosine is computed,
RelativeEuclideanDistance is tried and fails in numpy, every other algorithm is refused."""


def _bool(name: str, stats: PairStats, scalar: bool, x_file: str, y_file: str) -> MetricResult:
    if name == "CosineSimilarity":
        return _VALUES[name](stats, scalar, x_file, y_file)
    message = _BOOL_FAILURES.get(name, f"Algorithm {name} does not support Boolean types.")
    return MetricResult(name, math.nan, NAN_TEXT, message)


_EMPTY: dict[str, tuple[float, str]] = {
    "CosineSimilarity": (1.0, "1.0"),
    "AccumulatedRelativeError": (0.0, "0.000000"),
    "RelativeEuclideanDistance": (0.0, "0.000000"),
    "StandardDeviation": (math.nan, "(nan;nan),(nan;nan)"),
    "MeanAbsoluteError": (math.nan, "nan"),
    "RootMeanSquareError": (math.nan, "nan"),
    "MeanRelativeError": (math.nan, "nan"),
}
"""What msaccucmp 26.2.0 writes for two empty tensors (measured: ``msaccucmp.py compare`` on a
shape ``(0,)`` pair, tests/interop/); the three algorithms missing here fail on an empty array
(numpy's ``max`` of nothing) and write ``NaN`` with its message."""
_EMPTY_FAILURE = (
    "Failed to execute 'compare' in '{}'. zero-size array to reduction operation maximum "
    "which has no identity"
)


def _empty(name: str, x_file: str, y_file: str) -> MetricResult:
    if name in _EMPTY:
        value, text = _EMPTY[name]
        return MetricResult(name, value, text)
    return MetricResult(name, math.nan, NAN_TEXT, _EMPTY_FAILURE.format(name))


def _number(name: str, value: float, message: str = "") -> MetricResult:
    return MetricResult(name, value, NAN_TEXT if math.isnan(value) else f"{value:.6f}", message)


def _cosine(stats: PairStats, scalar: bool, x_file: str, y_file: str) -> MetricResult:
    name = "CosineSimilarity"
    if scalar:
        return MetricResult(name, 1.0, "1.000000", "This tensor is scalar.")
    norm_x, norm_y = math.sqrt(stats.sum_xx), math.sqrt(stats.sum_yy)
    if norm_x <= FLOAT_EPSILON and norm_y < FLOAT_EPSILON:
        return MetricResult(name, 1.0, "1.0")
    for norm, file in ((norm_x, x_file), (norm_y, y_file)):
        if math.sqrt(norm) <= FLOAT_EPSILON:
            message = f"Cannot compare by Cosine Similarity. All the data is zero in {file}."
            return MetricResult(name, math.nan, NAN_TEXT, message)
    product = norm_x * norm_y
    value = stats.sum_xy / product if product and not math.isnan(product) else math.nan
    return _number(name, value if math.isnan(value) else min(value, 1.0))


def _kl(stats: PairStats, scalar: bool, x_file: str, y_file: str) -> MetricResult:
    name = "KullbackLeiblerDivergence"
    zero_x, zero_y = stats.sum_xx == 0, stats.sum_yy == 0
    prefix = "Cannot compare by KL Divergence. All the data is zero in "
    if zero_x and zero_y:
        return MetricResult(name, math.nan, NAN_TEXT, f"{prefix}{x_file!r} and {y_file!r}.")
    if zero_x or zero_y:
        return MetricResult(name, math.nan, NAN_TEXT, f"{prefix}{x_file if zero_x else y_file}.")
    value = 0.0 if abs(stats.kl) < FLOAT_EPSILON else stats.kl
    message = ""
    if value == math.inf:
        message = f"Cannot compare by KL Divergence. The data contains 0 in {y_file!r}."
    return _number(name, value, message)


def _std(stats: PairStats, scalar: bool, x_file: str, y_file: str) -> MetricResult:
    n = stats.size
    figures = (
        stats.sum_x / n,
        math.sqrt(stats.ss_x / n) if stats.ss_x >= 0 else math.nan,
        stats.sum_y / n,
        math.sqrt(stats.ss_y / n) if stats.ss_y >= 0 else math.nan,
    )
    shown = [0.0 if abs(v) < STD_ZERO else v for v in figures]
    return MetricResult(
        "StandardDeviation", math.nan, "({:.3f};{:.3f}),({:.3f};{:.3f})".format(*shown)
    )


def _red(stats: PairStats, scalar: bool, x_file: str, y_file: str) -> MetricResult:
    if math.sqrt(stats.sum_yy) <= FLOAT_EPSILON:
        return _number("RelativeEuclideanDistance", 0.0)
    ratio = stats.sum_dd / stats.sum_yy
    return _number("RelativeEuclideanDistance", math.sqrt(ratio) if ratio >= 0 else math.nan)


_Value = Callable[[PairStats, bool, str, str], MetricResult]


def _simple(name: str, attribute: str, *, mean: bool = False, root: bool = False) -> _Value:
    def value(stats: PairStats, scalar: bool, x_file: str, y_file: str) -> MetricResult:
        figure = getattr(stats, attribute)
        if mean:
            figure /= stats.size
        if root:
            figure = math.sqrt(figure) if figure >= 0 else math.nan
        return _number(name, figure)

    return value


_VALUES: dict[str, _Value] = {
    "CosineSimilarity": _cosine,
    "MaxAbsoluteError": _simple("MaxAbsoluteError", "max_ad"),
    "AccumulatedRelativeError": _simple("AccumulatedRelativeError", "sum_rel"),
    "RelativeEuclideanDistance": _red,
    "KullbackLeiblerDivergence": _kl,
    "StandardDeviation": _std,
    "MeanAbsoluteError": _simple("MeanAbsoluteError", "sum_ad", mean=True),
    "RootMeanSquareError": _simple("RootMeanSquareError", "sum_dd", mean=True, root=True),
    "MaxRelativeError": _simple("MaxRelativeError", "max_rel"),
    "MeanRelativeError": _simple("MeanRelativeError", "sum_rel", mean=True),
}


def compare_pair(
    x: np.ndarray[Any, Any],
    y: np.ndarray[Any, Any],
    algorithms: str | Sequence[str] = ALGORITHMS,
    *,
    x_file: str = "",
    y_file: str = "",
) -> tuple[MetricResult, ...]:
    """The values of ``algorithms`` (names or indices, see :func:`select_algorithms`) for one
    pair; the scalar test uses ``x``'s shape."""
    names = select_algorithms(algorithms)
    stats = measure(x, y, names)
    boolean = np.asarray(x).dtype == np.bool_ and np.asarray(y).dtype == np.bool_
    return results(
        stats, names, scalar=is_scalar_shape(np.shape(x)), x_file=x_file, y_file=y_file,
        boolean=boolean,
    )  # fmt: skip

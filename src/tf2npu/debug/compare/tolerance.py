"""How close two tensors must be to agree: per-dtype defaults and ``--tolerance`` rules (TF-free).

A tensor agrees with its reference when every element satisfies ``|x - y| <= atol + rtol*|y|``
(``x`` the NPU side, ``y`` the reference, as :func:`numpy.isclose`), and NaN/Inf sit at the same
places on both sides with the same values. The tolerance comes from the last ``--tolerance``
rule whose pattern matches the tensor, else from the default of the dtype the tensor is
*judged as*: the coarsest floating-point dtype among the two files' dtypes and, where the graph
JSON tells, the dtypes the NPU computed it through (a float32 output of a cast from float16
carries float16 rounding, so it is judged as float16). Integer and boolean tensors must be equal.

>>> Tolerances.parse(["dense/*=1e-3,1e-2"]).resolve(("dense/MatMul",), "float16").source
"--tolerance 'dense/*=1e-3,1e-2'"
>>> default_tolerance("float16")
Tolerance(atol=0.01, rtol=0.01, source='float16 default')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from tf2npu.errors import UsageError

__all__ = [
    "DEFAULTS",
    "PRECISION_BITS",
    "Tolerance",
    "ToleranceRule",
    "Tolerances",
    "coarsest",
    "default_tolerance",
]

PRECISION_BITS = {"bfloat16": 8, "float16": 11, "float32": 24, "float64": 53}
"""Significand bits of the floating-point dtypes (numpy names): fewer is coarser."""


@dataclass(frozen=True, slots=True)
class Tolerance:
    """``|x - y| <= atol + rtol*|y|`` per element; ``source`` says where the numbers came from."""

    atol: float
    rtol: float
    source: str

    def text(self) -> str:
        """``atol 0.01 + rtol 0.01·|truth|`` (for reasons)."""
        return f"{self.atol:g} + {self.rtol:g}·|truth|"


DEFAULTS = {
    "float64": Tolerance(1e-8, 1e-7, "float64 default"),
    "float32": Tolerance(1e-5, 1e-4, "float32 default"),
    "float16": Tolerance(1e-2, 1e-2, "float16 default"),
    "bfloat16": Tolerance(5e-2, 5e-2, "bfloat16 default"),
}
"""Defaults per judged dtype. float32 allows for the reordered long sums of another kernel
(~1e-5 relative after a few layers); float16 for about ten roundings of its 2^-11 unit
(activations of magnitude ~1 show 1e-3 after a few layers); bfloat16 scales that by its
8x coarser unit. Anything else is compared exactly."""
EXACT = Tolerance(0.0, 0.0, "exact (not a float dtype)")


def default_tolerance(dtype: str) -> Tolerance:
    """The default for a tensor judged as numpy dtype name ``dtype``."""
    return DEFAULTS.get(dtype, EXACT)


def coarsest(dtypes: Iterable[str | None]) -> str | None:
    """The floating-point dtype with the fewest significand bits among ``dtypes`` (numpy
    names; others ignored), or None when none is one.

    >>> coarsest(["float32", "int32", "float16"])
    'float16'
    """
    floats = [d for d in dtypes if d in PRECISION_BITS]
    return min(floats, key=PRECISION_BITS.__getitem__) if floats else None


@dataclass(frozen=True, slots=True)
class ToleranceRule:
    """One ``--tolerance PATTERN=ATOL,RTOL``: an :func:`fnmatch.fnmatchcase` pattern over op
    names (``*`` also matches ``/``)."""

    pattern: str
    atol: float
    rtol: float
    text: str

    @classmethod
    def parse(cls, text: str) -> ToleranceRule:
        """Read ``PATTERN=ATOL,RTOL``.

        Raises:
            UsageError: no ``=``, an empty pattern, not two numbers, or a negative or
                non-finite number.
        """
        pattern, equals, numbers = text.rpartition("=")
        if not equals or not pattern:
            raise UsageError(f"--tolerance {text!r}: {_FIX}")
        parts = numbers.split(",")
        if len(parts) != 2:
            raise UsageError(f"--tolerance {text!r}: {numbers!r} is not ATOL,RTOL; {_FIX}")
        atol, rtol = _number(text, "ATOL", parts[0]), _number(text, "RTOL", parts[1])
        return cls(pattern, atol, rtol, text)

    def matches(self, names: Sequence[str]) -> bool:
        return any(fnmatchcase(name, self.pattern) for name in names)


_FIX = "give PATTERN=ATOL,RTOL, e.g. --tolerance 'dense/*=1e-3,1e-2'"


def _number(text: str, label: str, part: str) -> float:
    try:
        value = float(part)
    except ValueError:
        raise UsageError(
            f"--tolerance {text!r}: {label} {part!r} is not a number; {_FIX}"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(
            f"--tolerance {text!r}: {label} {part!r} must be a finite number >= 0; {_FIX}"
        )
    return value


@dataclass(frozen=True, slots=True)
class Tolerances:
    """The ``--tolerance`` rules in the order given (the last matching one wins)."""

    rules: tuple[ToleranceRule, ...] = ()

    @classmethod
    def parse(cls, texts: Iterable[str]) -> Tolerances:
        """Read every ``PATTERN=ATOL,RTOL`` (see :meth:`ToleranceRule.parse`)."""
        return cls(tuple(ToleranceRule.parse(text) for text in texts))

    def resolve(self, names: Sequence[str], judged: str | None) -> Tolerance:
        """The tolerance of a tensor standing for op ``names``, judged as dtype ``judged``."""
        for rule in reversed(self.rules):
            if rule.matches(names):
                return Tolerance(rule.atol, rule.rtol, f"--tolerance {rule.text!r}")
        return EXACT if judged is None else default_tolerance(judged)

"""msaccucmp's expert advisor over a comparison's rows (TF-free; reference debug-tools.md §3.6).

Three checks run in order and the first that matches gives the advice:

1. **FP16 Overflow**: the first row whose ``OverFlow`` is ``YES``.
2. **Input Inconsistent**: for each graph input node in turn (ops of type ``Data`` or
   ``Placeholder``), the first row of that node (``NPUDump`` equal to its name) whose
   ``CosineSimilarity`` is below 0.99.
3. **Global Consistency**: over the rows with a cosine value, none below 0.99 means all is
   well; else the first such row is named, and the advice depends on whether the *last* row
   with a cosine is below 0.99 too (the final result is off) or not (only inner tensors are).

Nothing matches (no cosine computed, no value) -> ``NA`` on all three lines. The summary has
msaccucmp's three lines, ``Detection Type: ...``, ``Operator Index: ...``, ``Expert Advice: ...``,
and is written as ``advisor_summary.txt``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tf2npu.atomic import write_text_atomic

__all__ = [
    "ACCURACY_THRESHOLD",
    "SUMMARY_FILE",
    "Advice",
    "AdvisorRow",
    "advise",
    "write_summary",
]

ACCURACY_THRESHOLD = 0.99
SUMMARY_FILE = "advisor_summary.txt"
NA = "NA"

OVERFLOW_DETECTION = "FP16 Overflow"
INPUT_DETECTION = "Input Inconsistent"
CONSISTENCY_DETECTION = "Global Consistency"

OVERFLOW_SUGGEST = "Float16 data overflow occurs. Rectify the fault and perform comparison again."
INPUT_SUGGEST = (
    "The input data of NPUDump is inconsistent with that of GroundTruth. Use the same data "
    "or check the data preprocessing process."
)
CONSISTENCY_SUGGEST = (
    "All data in the comparison result meets the accuracy requirements. If data accuracy of "
    "the model is still not up to standard in practical application, please check the "
    "post-processing process of model outputs."
)
PROBLEM_SUGGEST = (
    "The accuracy of some tensors is low, resulting in an unqualified final accuracy. This may "
    "be caused by quantization. Calibrate the data or contact Huawei for further diagnosis. "
)
DEVIATION_SUGGEST = (
    "The accuracy of some tensors is low, while the final accuracy is qualified. This may be "
    "caused by Ascend internal optimization. Ignore or contact Huawei for further diagnosis. "
)


@dataclass(frozen=True, slots=True)
class AdvisorRow:
    """The columns of one result row the advisor reads (cosine NaN: no value)."""

    index: str
    npu_dump: str
    overflow: str
    cosine: float


@dataclass(frozen=True, slots=True)
class Advice:
    """The advisor's finding: detection type, the row's ``Index``, and the advice text."""

    detection_type: str = NA
    operator_index: str = NA
    advice: str = NA

    def lines(self) -> list[str]:
        return [
            f"Detection Type: {self.detection_type}",
            f"Operator Index: {self.operator_index}",
            f"Expert Advice: {self.advice}",
        ]


def advise(
    rows: Sequence[AdvisorRow],
    input_nodes: Iterable[str] = (),
    *,
    overflow_column: bool = True,
    cosine_column: bool = True,
) -> Advice:
    """Run the three checks over ``rows`` (CSV order). ``overflow_column``/``cosine_column``
    say whether the result has those columns; a check whose column is missing is skipped."""
    if overflow_column:
        hit = next((row for row in rows if row.overflow == "YES"), None)
        if hit is not None:
            return Advice(OVERFLOW_DETECTION, hit.index, OVERFLOW_SUGGEST)
    if not cosine_column:
        return Advice()
    valued = [row for row in rows if not math.isnan(row.cosine)]
    if not valued:
        return Advice()
    bad = [row for row in valued if row.cosine < ACCURACY_THRESHOLD]
    for node in input_nodes:
        hit = next((row for row in bad if row.npu_dump == node), None)
        if hit is not None:
            return Advice(INPUT_DETECTION, hit.index, INPUT_SUGGEST)
    if not bad:
        return Advice(CONSISTENCY_DETECTION, NA, CONSISTENCY_SUGGEST)
    final_bad = valued[-1].cosine < ACCURACY_THRESHOLD
    return Advice(
        CONSISTENCY_DETECTION, bad[0].index, PROBLEM_SUGGEST if final_bad else DEVIATION_SUGGEST
    )


def write_summary(advice: Advice, folder: Path) -> Path:
    """Write ``advisor_summary.txt`` (the three lines) into ``folder``; its path."""
    path = folder / SUMMARY_FILE
    write_text_atomic(path, "".join(line + "\n" for line in advice.lines()))
    return path

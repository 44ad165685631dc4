"""msaccucmp's advisor: the order of checks and its three lines."""

from __future__ import annotations

import math
from pathlib import Path

from tf2npu.debug.compare.advisor import (
    CONSISTENCY_SUGGEST,
    DEVIATION_SUGGEST,
    INPUT_SUGGEST,
    OVERFLOW_SUGGEST,
    PROBLEM_SUGGEST,
    Advice,
    AdvisorRow,
    advise,
    write_summary,
)

NAN = math.nan


def row(index: int, name: str, cosine: float, overflow: str = "NO") -> AdvisorRow:
    return AdvisorRow(str(index), name, overflow, cosine)


def test_fp16_overflow_comes_first() -> None:
    rows = [row(0, "x", 0.5), row(1, "a", 1.0, "YES"), row(2, "b", 0.1, "YES")]
    assert advise(rows, ["x"]) == Advice("FP16 Overflow", "1", OVERFLOW_SUGGEST)
    assert advise(rows, ["x"], overflow_column=False).detection_type == "Input Inconsistent"


def test_an_input_node_below_the_threshold_is_input_inconsistent() -> None:
    rows = [row(0, "a", 0.2), row(1, "y", 1.0), row(2, "x", 0.98), row(3, "x", 0.5)]
    assert advise(rows, ["y", "x"]) == Advice("Input Inconsistent", "2", INPUT_SUGGEST)
    assert advise(rows, ["y"]).detection_type == "Global Consistency"


def test_global_consistency_all_good() -> None:
    rows = [row(0, "a", 0.999), row(1, "b", NAN), row(2, "c", 1.0)]
    assert advise(rows) == Advice("Global Consistency", "NA", CONSISTENCY_SUGGEST)


def test_global_consistency_final_result_bad() -> None:
    rows = [row(0, "a", 1.0), row(3, "b", 0.9), row(4, "c", 0.95), row(5, "d", NAN)]
    assert advise(rows) == Advice("Global Consistency", "3", PROBLEM_SUGGEST)


def test_global_consistency_final_result_good() -> None:
    rows = [row(0, "a", 1.0), row(3, "b", 0.9), row(4, "c", 0.995)]
    assert advise(rows) == Advice("Global Consistency", "3", DEVIATION_SUGGEST)


def test_no_cosine_gives_na() -> None:
    assert advise([row(0, "a", NAN)]) == Advice("NA", "NA", "NA")
    assert advise([row(0, "a", 0.1)], cosine_column=False) == Advice()


def test_the_summary_file_has_the_three_lines(tmp_path: Path) -> None:
    path = write_summary(Advice("Global Consistency", "3", PROBLEM_SUGGEST), tmp_path)
    assert path == tmp_path / "advisor_summary.txt"
    assert path.read_text() == (
        "Detection Type: Global Consistency\n"
        "Operator Index: 3\n"
        "Expert Advice: The accuracy of some tensors is low, resulting in an unqualified final "
        "accuracy. This may be caused by quantization. Calibrate the data or contact Huawei for "
        "further diagnosis. \n"
    )

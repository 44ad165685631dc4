"""Distances between a trial and its reference, on literal losses and variables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf2npu.debug.bisect.metric import Evidence, Metric, NoMetricError, distance, headline

LOSS = Metric.LOSS
VARS = Metric.VARIABLES


@pytest.mark.parametrize(
    ("trial", "reference", "expected"),
    [
        ((2.0, 1.0), (2.0, 1.0), 0.0),
        ((2.2, 1.0), (2.0, 1.0), 0.1),  # the worst step counts, not the last
        ((2.0, 1.05), (2.0, 1.0), 0.05),
        ((0.5,), (0.0,), 0.5 / 1e-6),  # a zero loss divides by FLOOR
        ((2.0, None), (2.0, 1.0), math.inf),  # NaN against a number
        ((2.0, None), (2.0, None), 0.0),  # NaN in both runs at the same step
        ((2.0,), (2.0, 1.0), math.inf),  # the trial stopped early
    ],
)
def test_loss_distance(trial: tuple, reference: tuple, expected: float) -> None:
    assert distance(Evidence(loss=trial), Evidence(loss=reference), LOSS) == pytest.approx(expected)


def test_a_reference_without_loss_names_the_fix() -> None:
    with pytest.raises(NoMetricError, match=r"fetched no float scalar .* use --metric variables"):
        distance(Evidence(loss=(1.0,)), Evidence(), LOSS)


def test_variables_distance_is_relative_to_each_variables_largest_value() -> None:
    ref = {"w": np.array([10.0, -20.0]), "b": np.array([0.1])}
    trial = {"w": np.array([10.0, -19.0]), "b": np.array([0.1001])}
    assert distance(Evidence(variables=trial), Evidence(variables=ref), VARS) == pytest.approx(0.05)


@pytest.mark.parametrize(
    "trial",
    [
        {"w": np.array([1.0, 2.0])},  # b missing
        {"w": np.array([1.0, 2.0]), "b": np.array([1.0, 1.0])},  # shape changed
        {"w": np.array([1.0, np.nan]), "b": np.array([1.0])},  # NaN against a number
        None,  # the trial recorded no variables
    ],
)
def test_variables_infinitely_far(trial: dict | None) -> None:
    ref = {"w": np.array([1.0, 2.0]), "b": np.array([1.0])}
    assert distance(Evidence(variables=trial), Evidence(variables=ref), VARS) == math.inf


def test_a_reference_without_variables_names_the_fix() -> None:
    with pytest.raises(NoMetricError, match="no trainable variables: use --metric loss"):
        distance(Evidence(), Evidence(variables={}), VARS)


def test_headline() -> None:
    assert headline(Evidence(loss=(3.0, 1.5)), LOSS) == 1.5
    assert headline(Evidence(), LOSS) is None
    assert headline(Evidence(variables={"w": np.array([1.0, -4.0])}), VARS) == 4.0
    assert Evidence(loss=(1.0, None)).finite is False
    assert Evidence(status=1, loss=(1.0,)).finite is False

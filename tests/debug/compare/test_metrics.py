"""msaccucmp's ten algorithms against a plain numpy reference written from reference §3.3."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tf2npu.debug.compare.metrics import (
    ALGORITHMS,
    CHUNK,
    compare_pair,
    is_scalar_shape,
    measure,
    results,
    select_algorithms,
)
from tf2npu.errors import UsageError

EPS = np.finfo(float).eps
F32_EPS = np.finfo(np.float32).eps


def reference(x: np.ndarray, y: np.ndarray) -> dict[str, float | str]:
    """§3.3 written out directly on whole float64 arrays (no chunks, no shared sums)."""
    shape = np.shape(x)
    x, y = np.ravel(x).astype(np.float64), np.ravel(y).astype(np.float64)
    with np.errstate(all="ignore"):
        nx, ny = np.sqrt(np.sum(x * x)), np.sqrt(np.sum(y * y))
        if all(d == 1 for d in shape) or (nx <= EPS and ny < EPS):
            cosine = 1.0
        elif np.sqrt(nx) <= EPS or np.sqrt(ny) <= EPS:
            cosine = math.nan
        else:
            cosine = min(float(np.sum(x * y) / (nx * ny)), 1.0)
        rel = np.where(np.abs(y) > EPS, np.abs(x / y - 1), 0)
        red = 0.0 if np.sqrt(np.sum(y**2)) <= EPS else np.sqrt(np.sum((x - y) ** 2) / np.sum(y**2))
        values: dict[str, float | str] = {
            "CosineSimilarity": cosine,
            "MaxAbsoluteError": np.max(np.abs(x - y)),
            "AccumulatedRelativeError": np.sum(rel),
            "RelativeEuclideanDistance": red,
            "KullbackLeiblerDivergence": kl_reference(x, y),
            "StandardDeviation": std_reference(x, y),
            "MeanAbsoluteError": np.mean(np.abs(x - y)),
            "RootMeanSquareError": np.sqrt(np.mean((x - y) ** 2)),
            "MaxRelativeError": np.max(rel),
            "MeanRelativeError": np.mean(rel),
        }
    return values


def kl_reference(x: np.ndarray, y: np.ndarray) -> float:
    if not x.any() or not y.any():
        return math.nan

    def pdf(v: np.ndarray) -> np.ndarray:
        span = v.max() - v.min()
        v = (v - v.min()) / span if span != 0 else v
        v = np.maximum(v, F32_EPS)
        return v / v.sum()

    p, q = pdf(x), pdf(y)
    value = float(np.sum(p * np.log(p / q)))
    return 0.0 if abs(value) < EPS else value


def std_reference(x: np.ndarray, y: np.ndarray) -> str:
    figures = [np.mean(x), np.std(x), np.mean(y), np.std(y)]
    return "({:.3f};{:.3f}),({:.3f};{:.3f})".format(
        *(0.0 if abs(v) < 0.001 else v for v in figures)
    )


def expected_text(name: str, want: float, x: np.ndarray, y: np.ndarray) -> str:
    """Six decimals, except msaccucmp's literal ``1.0`` for two all-zero tensors' cosine."""
    norms = np.linalg.norm(np.ravel(x).astype(np.float64)), np.linalg.norm(np.ravel(y))
    both_zero = norms[0] <= EPS and norms[1] < EPS and not is_scalar_shape(np.shape(x))
    return "1.0" if name == "CosineSimilarity" and both_zero else f"{want:.6f}"


def assert_matches(x: np.ndarray, y: np.ndarray) -> None:
    got = {r.name: r for r in compare_pair(x, y)}
    for name, want in reference(x, y).items():
        if isinstance(want, str):
            assert got[name].text == want, name
        elif math.isnan(want):
            assert math.isnan(got[name].value) and got[name].text == "NaN", name
        else:
            assert got[name].value == pytest.approx(want, rel=1e-9, abs=1e-12), name
            if math.isfinite(want):
                assert got[name].text == expected_text(name, got[name].value, x, y), name


finite = st.floats(-1e3, 1e3, allow_nan=False, width=32)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(data=st.data(), shape=st.sampled_from([(7,), (3, 5), (2, 1, 4), (64,), (1, 200)]))
def test_random_float32_pairs_match_the_reference(data, shape) -> None:
    x = data.draw(arrays(np.float32, shape, elements=finite))
    y = data.draw(arrays(np.float32, shape, elements=finite))
    assert_matches(x, y)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_float16_against_float32_matches_the_reference(data) -> None:
    y = data.draw(arrays(np.float32, (33,), elements=st.floats(-60, 60, width=32)))
    x = y.astype(np.float16)
    assert_matches(x, y)


def test_large_pairs_are_chunked_and_still_match() -> None:
    rng = np.random.default_rng(7)
    y = rng.standard_normal(3 * CHUNK + 11)
    x = y + rng.standard_normal(y.size) * 1e-3
    assert_matches(x, y)
    stats = measure(x, y, rtol=0.0, atol=0.0)
    assert stats.worst == int(np.argmax(np.abs(x - y)))
    assert stats.max_excess == np.max(np.abs(x - y))


def test_all_zero_on_both_sides() -> None:
    zero = np.zeros((2, 3), np.float32)
    got = {r.name: r for r in compare_pair(zero, zero, x_file="a.npy", y_file="b.npy")}
    assert (got["CosineSimilarity"].text, got["CosineSimilarity"].message) == ("1.0", "")
    assert got["KullbackLeiblerDivergence"].text == "NaN"
    assert got["KullbackLeiblerDivergence"].message == (
        "Cannot compare by KL Divergence. All the data is zero in 'a.npy' and 'b.npy'."
    )
    assert got["RelativeEuclideanDistance"].text == "0.000000"
    assert got["StandardDeviation"].text == "(0.000;0.000),(0.000;0.000)"


def test_all_zero_on_one_side_names_that_file() -> None:
    zero, ones = np.zeros(4), np.ones(4)
    got = {r.name: r for r in compare_pair(zero, ones, x_file="npu.npy", y_file="gold.npy")}
    assert got["CosineSimilarity"].text == "NaN"
    assert got["CosineSimilarity"].message == (
        "Cannot compare by Cosine Similarity. All the data is zero in npu.npy."
    )
    assert got["KullbackLeiblerDivergence"].message == (
        "Cannot compare by KL Divergence. All the data is zero in npu.npy."
    )
    got = {r.name: r for r in compare_pair(ones, zero, x_file="npu.npy", y_file="gold.npy")}
    assert got["CosineSimilarity"].message.endswith("All the data is zero in gold.npy.")
    # |y| <= eps everywhere: the relative terms are all 0, RED is 0 by definition
    assert [got[n].text for n in ("MaxRelativeError", "RelativeEuclideanDistance")] == [
        "0.000000",
        "0.000000",
    ]


@pytest.mark.parametrize("shape", [(), (1,), (1, 1, 1)])
def test_scalar_shapes_give_cosine_one_with_the_message(shape) -> None:
    x, y = np.full(shape, 3.0), np.full(shape, -5.0)
    cosine = compare_pair(x, y, "CosineSimilarity")[0]
    assert (cosine.value, cosine.text, cosine.message) == (
        1.0,
        "1.000000",
        "This tensor is scalar.",
    )
    assert is_scalar_shape(shape)
    assert not is_scalar_shape((1, 2))


def test_nan_in_the_npu_tensor_propagates_and_is_counted() -> None:
    x = np.array([1.0, np.nan, 3.0])
    y = np.array([1.0, 2.0, 3.0])
    assert_matches(x, y)
    texts = {r.name: r.text for r in compare_pair(x, y)}
    assert texts["MaxAbsoluteError"] == texts["CosineSimilarity"] == "NaN"
    stats = measure(x, y)
    assert (stats.x_nan, stats.y_nan, stats.mismatched, stats.first_mismatch) == (1, 0, 1, 1)
    assert (math.isnan(stats.mismatch_x), stats.mismatch_y) == (True, 2.0)


def test_nan_in_the_golden_tensor_is_skipped_by_the_relative_errors() -> None:
    x = np.array([1.0, 5.0, 3.0])
    y = np.array([2.0, np.nan, 3.0])
    assert_matches(x, y)
    texts = {r.name: r.text for r in compare_pair(x, y)}
    assert texts["AccumulatedRelativeError"] == "0.500000"
    assert texts["MaxAbsoluteError"] == "NaN"


def test_same_nan_and_inf_on_both_sides_are_not_mismatches() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 1.0])
    stats = measure(x, x.copy(), rtol=0.0, atol=0.0)
    assert (stats.x_nan, stats.x_inf, stats.mismatched, stats.violations) == (1, 2, 0, 0)
    assert stats.max_excess == 0.0
    assert not stats.finite
    stats = measure(x, np.array([np.nan, -np.inf, -np.inf, 1.0]))
    assert (stats.mismatched, stats.first_mismatch) == (1, 1)


def test_closeness_counts_elements_beyond_atol_plus_rtol_times_truth() -> None:
    y = np.array([[1.0, 100.0], [0.0, -2.0]])
    x = np.array([[1.05, 100.5], [0.02, -2.0]])
    stats = measure(x, y, rtol=0.01, atol=0.01)
    # excesses: 0.05-0.01=0.04, 0.5-1.0<0, 0.02-0=0.02, 0
    assert stats.violations == 2
    assert stats.max_excess == pytest.approx(0.04)
    assert (stats.worst, stats.worst_x, stats.worst_y) == (0, 1.05, 1.0)


def test_standard_deviation_writes_small_values_as_zero() -> None:
    x = np.array([0.0004, -0.0004])
    y = np.array([10.0, 12.0])
    text = compare_pair(x, y, "StandardDeviation")[0].text
    assert text == "(0.000;0.000),(11.000;1.000)"


def test_empty_tensors_get_msaccucmps_values_and_messages() -> None:
    got = compare_pair(np.zeros(0), np.zeros(0), ALGORITHMS, x_file="a.npy")
    # msaccucmp 26.2.0's row for a shape (0,) pair, column by column
    assert [r.text for r in got] == [
        "1.0", "NaN", "0.000000", "0.000000", "NaN", "(nan;nan),(nan;nan)", "nan", "nan",
        "NaN", "nan",
    ]  # fmt: skip
    assert [r.message for r in got if r.message] == [
        f"Failed to execute 'compare' in '{name}'. zero-size array to reduction operation "
        "maximum which has no identity"
        for name in ("MaxAbsoluteError", "KullbackLeiblerDivergence", "MaxRelativeError")
    ]


def test_bool_tensors_get_the_cosine_only_as_msaccucmp_does() -> None:
    x, y = np.array([True, False, True]), np.array([True, True, True])
    got = compare_pair(x, y, ALGORITHMS)
    # msaccucmp 26.2.0's row for this pair: 0.816497 then NaN, with its messages in order
    assert [r.text for r in got] == ["0.816497"] + ["NaN"] * 9
    assert got[1].message == "Algorithm MaxAbsoluteError does not support Boolean types."
    assert got[3].message.startswith(
        "Failed to execute 'compare' in 'RelativeEuclideanDistance'. numpy boolean subtract"
    )
    # one side bool only: both are compared as numbers
    assert compare_pair(x, y.astype(np.float32), "1")[0].text == "1.000000"


def test_sizes_must_match() -> None:
    with pytest.raises(ValueError, match="sizes differ: 2 and 3 elements"):
        measure(np.zeros(2), np.zeros(3))


def test_only_the_requested_algorithms_in_the_order_given() -> None:
    x, y = np.array([1.0, 2.0]), np.array([1.0, 4.0])
    assert [r.name for r in compare_pair(x, y, "7,0")] == [
        "RootMeanSquareError",
        "CosineSimilarity",
    ]
    stats = measure(x, y, ["MaxAbsoluteError"])
    assert [r.text for r in results(stats, ["MaxAbsoluteError"])] == ["2.000000"]


def test_select_algorithms_takes_names_indices_and_all() -> None:
    assert select_algorithms("all") == ALGORITHMS
    assert select_algorithms(" ALL ") == ALGORITHMS
    assert select_algorithms("9, CosineSimilarity,9") == ("MeanRelativeError", "CosineSimilarity")
    assert select_algorithms(["4"]) == ("KullbackLeiblerDivergence",)
    assert ALGORITHMS.index("StandardDeviation") == 5


@pytest.mark.parametrize(
    ("spec", "bad"), [("0,cosine", "'cosine'"), ("10", "'10'"), ("-1", "'-1'")]
)
def test_select_algorithms_names_the_bad_item_and_lists_the_valid_ones(spec, bad) -> None:
    with pytest.raises(UsageError) as error:
        select_algorithms(spec)
    assert str(error.value).startswith(f"--alg {spec!r}: {bad} is no algorithm; give all, or ")
    assert "0 CosineSimilarity, 1 MaxAbsoluteError" in str(error.value)


def test_select_algorithms_refuses_an_empty_list() -> None:
    with pytest.raises(UsageError, match="--alg ',': names no algorithm"):
        select_algorithms(",")


special = st.one_of(finite, st.sampled_from([np.nan, np.inf, -np.inf, 0.0]))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_nan_and_inf_propagate_as_in_the_reference(data) -> None:
    x = data.draw(arrays(np.float64, (9,), elements=special))
    y = data.draw(arrays(np.float64, (9,), elements=special))
    assert_matches(x, y)

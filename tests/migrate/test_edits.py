"""Text edits: applying them, detecting overlaps, accepting patches, the after-text of a patch."""

from __future__ import annotations

import pytest

from tf2npu.migrate.edits import Edit, Patch, accept, apply_edits, subject_after


def _patch(rule: str, *edits: Edit, subject: tuple[int, int] | None = None) -> Patch:
    if subject is None:
        subject = (min(e.start for e in edits), max(e.end for e in edits))
    return Patch(rule, edits, subject, 1, 1)


# -- apply_edits --------------------------------------------------------------------------------
def test_apply_in_offset_order_whatever_the_given_order() -> None:
    text = "a = f(x)\n"
    edits = [Edit(6, 7, "y"), Edit(0, 1, "b"), Edit(4, 5, "g")]
    assert apply_edits(text, edits) == "b = g(y)\n"


def test_apply_nothing_returns_the_text() -> None:
    assert apply_edits("x = 1\n", []) == "x = 1\n"


def test_apply_insertion_deletion_and_replacement() -> None:
    text = "f(a, b)"
    edits = [Edit(2, 2, "z, "), Edit(3, 6, ""), Edit(0, 1, "g")]
    assert apply_edits(text, edits) == "g(z, a)"


def test_insertions_at_the_same_point_keep_their_order() -> None:
    text = "f()"
    edits = [Edit(2, 2, "a"), Edit(2, 2, "b"), Edit(2, 2, "c")]
    assert apply_edits(text, edits) == "f(abc)"
    assert apply_edits(text, list(reversed(edits))) == "f(cba)"


def test_insertion_at_the_start_of_a_replacement_goes_before_it() -> None:
    assert apply_edits("abc", [Edit(0, 2, "X"), Edit(0, 0, "<")]) == "<Xc"


def test_insertion_at_the_end_of_a_replacement_goes_after_it() -> None:
    assert apply_edits("abc", [Edit(2, 2, ">"), Edit(0, 2, "X")]) == "X>c"


def test_adjacent_replacements_both_apply() -> None:
    assert apply_edits("abcd", [Edit(2, 4, "YY"), Edit(0, 2, "XX")]) == "XXYY"


def test_insert_at_end_of_text() -> None:
    assert apply_edits("x = 1", [Edit(5, 5, "\n")]) == "x = 1\n"


def test_overlapping_edits_are_refused() -> None:
    with pytest.raises(ValueError, match="overlapping edit at offset 1"):
        apply_edits("abcd", [Edit(0, 2, "X"), Edit(1, 3, "Y")])


def test_insertion_inside_a_replacement_is_refused() -> None:
    with pytest.raises(ValueError, match="overlapping edit at offset 2"):
        apply_edits("abcd", [Edit(0, 3, "X"), Edit(2, 2, "Y")])


# -- overlaps -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (Edit(0, 3, ""), Edit(2, 5, ""), True),
        (Edit(0, 3, ""), Edit(3, 5, ""), False),
        (Edit(3, 5, ""), Edit(0, 3, ""), False),
        (Edit(0, 5, ""), Edit(1, 2, ""), True),
        (Edit(1, 2, ""), Edit(1, 2, ""), True),
        (Edit(2, 2, "x"), Edit(2, 2, "y"), False),
        (Edit(0, 3, ""), Edit(0, 0, "x"), False),
        (Edit(0, 3, ""), Edit(3, 3, "x"), False),
        (Edit(0, 3, ""), Edit(1, 1, "x"), True),
        (Edit(1, 1, "x"), Edit(0, 3, ""), True),
        (Edit(4, 4, "x"), Edit(0, 3, ""), False),
    ],
)
def test_overlaps(a: Edit, b: Edit, expected: bool) -> None:
    assert a.overlaps(b) is expected
    assert b.overlaps(a) is expected


def test_patch_conflicts_if_any_edit_pair_overlaps() -> None:
    one = _patch("a", Edit(0, 1, "x"), Edit(10, 12, "y"))
    two = _patch("b", Edit(5, 6, "z"), Edit(11, 11, "w"))
    three = _patch("c", Edit(5, 6, "z"), Edit(12, 12, "w"))
    assert one.conflicts(two)
    assert two.conflicts(one)
    assert not one.conflicts(three)


# -- accept -------------------------------------------------------------------------------------
def test_accept_keeps_order_and_drops_the_later_conflicting_patch() -> None:
    first = _patch("first", Edit(0, 4, "A"))
    second = _patch("second", Edit(2, 6, "B"))
    third = _patch("third", Edit(8, 9, "C"))
    fourth = _patch("fourth", Edit(4, 4, "D"))
    kept, dropped = accept([first, second, third, fourth])
    assert kept == [first, third, fourth]
    assert dropped == [(second, first)]


def test_accept_reports_the_first_kept_patch_it_clashes_with() -> None:
    a = _patch("a", Edit(0, 2, "A"))
    b = _patch("b", Edit(3, 5, "B"))
    c = _patch("c", Edit(1, 4, "C"))
    kept, dropped = accept([a, b, c])
    assert kept == [a, b]
    assert dropped == [(c, a)]


def test_accept_nothing() -> None:
    assert accept([]) == ([], [])


def test_insert_inside_a_replacement_patch_conflicts() -> None:
    replace = _patch("replace", Edit(0, 10, "X"))
    insert_inside = _patch("inside", Edit(5, 5, "Y"))
    insert_at_boundary = _patch("boundary", Edit(10, 10, "Z"))
    kept, dropped = accept([replace, insert_inside, insert_at_boundary])
    assert kept == [replace, insert_at_boundary]
    assert dropped == [(insert_inside, replace)]


# -- subject_after ------------------------------------------------------------------------------
def test_subject_after_applies_only_the_patch_edits_inside_the_subject() -> None:
    text = "y = tf.nn.dropout(x, rate=r)\n"
    patch = _patch(
        "dropout",
        Edit(4, 17, "npu_ops.dropout"),
        Edit(21, 27, "keep_prob=1 - r"),
        subject=(4, 28),
    )
    assert subject_after(text, patch) == "npu_ops.dropout(x, keep_prob=1 - r)"


def test_subject_after_ignores_edits_outside_the_subject() -> None:
    text = "import os\nsess = tf.Session()\n"
    patch = _patch("s", Edit(28, 28, "config=c"), Edit(0, 0, "import x\n"), subject=(17, 29))
    assert subject_after(text, patch) == "tf.Session(config=c)"


def test_subject_after_for_an_insertion_only_subject() -> None:
    patch = _patch("npu_import", Edit(0, 0, "from a import *\n"), subject=(0, 0))
    assert subject_after("x = 1\n", patch) == "from a import *\n"

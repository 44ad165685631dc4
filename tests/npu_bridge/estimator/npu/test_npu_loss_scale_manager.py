"""Loss-scale managers: literal scale / counter sequences over scripted finite and inf steps."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu.npu_loss_scale_manager import (  # noqa: E402
    ExponentialUpdateLossScaleManager,
    FixedLossScaleManager,
)

pytestmark = pytest.mark.tf

F, N = True, False  # a finite step, a non-finite (inf/nan) step


def _run(make, steps) -> list[tuple[float, int, int]]:
    """(scale, good, bad) after each step of ``steps``."""
    with tf.Graph().as_default():
        manager = make()
        finite = tf.compat.v1.placeholder(tf.bool, [])
        update = manager.update_loss_scale(finite)
        state = [manager.get_loss_scale(), manager._num_good_steps, manager._num_bad_steps]
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            out = []
            for step in steps:
                sess.run(update, {finite: step})
                scale, good, bad = sess.run(state)
                out.append((float(scale), int(good), int(bad)))
            return out


def test_defaults_grow_and_shrink() -> None:
    got = _run(lambda: ExponentialUpdateLossScaleManager(1024, 3), [F, F, F, N, N, F, N, F, F, N])
    assert got == [
        (1024.0, 1, 0),
        (1024.0, 2, 0),
        (2048.0, 0, 0),  # third finite step: grow, reset
        (2048.0, 0, 1),
        (1638.4000244140625, 0, 0),  # second inf: * 0.8 in float32, reset
        (1638.4000244140625, 1, 0),
        (1638.4000244140625, 0, 1),  # inf resets good
        (1638.4000244140625, 1, 1),  # finite keeps bad
        (1638.4000244140625, 2, 1),
        (1310.7200927734375, 0, 0),  # bad reaches 2 across finite steps
    ]


def test_custom_ratios_and_floor_at_one() -> None:
    got = _run(
        lambda: ExponentialUpdateLossScaleManager(
            4, 1, decr_every_n_nan_or_inf=1, incr_ratio=4, decr_ratio=0.25
        ),
        [F, N, N, N, N, F],
    )
    assert got == [(16.0, 0, 0), (4.0, 0, 0), (1.0, 0, 0), (1.0, 0, 0), (1.0, 0, 0), (4.0, 0, 0)]


def test_growth_stops_below_float32_limit() -> None:
    got = _run(lambda: ExponentialUpdateLossScaleManager(2.0**126, 1), [F, F, F])
    assert got == [(2.0**127, 0, 0), (2.0**127, 0, 0), (2.0**127, 0, 0)]


def test_variables_are_non_trainable_globals() -> None:
    with tf.Graph().as_default():
        ExponentialUpdateLossScaleManager(8, 2)
        names = sorted(v.op.name for v in tf.compat.v1.global_variables())
        assert names == ["bad_steps", "good_steps", "loss_scale"]
        assert tf.compat.v1.trainable_variables() == []


def test_fixed_manager() -> None:
    with tf.Graph().as_default():
        manager = FixedLossScaleManager(128)
        update = manager.update_loss_scale(tf.constant(False))
        assert update.type == "NoOp"
        assert manager.get_enable_overflow_check() is True
        with tf.compat.v1.Session() as sess:
            assert sess.run(manager.get_loss_scale()) == 128.0
        assert (
            FixedLossScaleManager(1, enable_overflow_check=False).get_enable_overflow_check()
            is False
        )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: FixedLossScaleManager(0.5),
            r"FixedLossScaleManager\(loss_scale=0.5\): the loss scale must be a number >= 1",
        ),
        (lambda: FixedLossScaleManager("8"), r"loss_scale='8'"),
        (
            lambda: ExponentialUpdateLossScaleManager(0, 2),
            r"init_loss_scale=0\): give a number > 0",
        ),
        (
            lambda: ExponentialUpdateLossScaleManager(8, 0),
            r"incr_every_n_steps=0\): give a whole number of steps >= 1",
        ),
        (
            lambda: ExponentialUpdateLossScaleManager(8, 2, decr_every_n_nan_or_inf=1.5),
            r"decr_every_n_nan_or_inf=1.5",
        ),
        (
            lambda: ExponentialUpdateLossScaleManager(8, 2, incr_ratio=0.5),
            r"incr_ratio=0.5\): give a number >= 1",
        ),
        (
            lambda: ExponentialUpdateLossScaleManager(8, 2, decr_ratio=0),
            r"decr_ratio=0\): give a number > 0",
        ),
    ],
)
def test_bad_arguments(make, message) -> None:
    with tf.Graph().as_default(), pytest.raises(ValueError, match=message):
        make()

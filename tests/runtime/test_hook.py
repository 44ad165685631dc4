"""Which sessions the hook swaps, and undoing it."""

from __future__ import annotations

import pytest
from tests.runtime.conftest import npu_config, tf

pytestmark = pytest.mark.tf


def test_a_session_without_npu_optimizer_stays_stock() -> None:
    from tf2npu.runtime import run_stats

    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        assert type(sess) is tf.compat.v1.Session
    assert run_stats().stock_sessions == 1 and run_stats().sessions == 0


def test_a_session_with_npu_optimizer_becomes_an_npu_session() -> None:
    from tf2npu.runtime.session import NpuInteractiveSession, NpuSession

    graph = tf.Graph()
    with graph.as_default():
        sess = tf.compat.v1.Session(config=npu_config())
        assert type(sess) is NpuSession
        assert isinstance(sess, tf.compat.v1.Session)
        assert sess.graph is graph
        sess.close()
        interactive = tf.compat.v1.InteractiveSession(config=npu_config())
        assert type(interactive) is NpuInteractiveSession
        assert tf.constant(2.0).eval() == 2.0
        interactive.close()


def test_the_config_may_come_positionally() -> None:
    from tf2npu.runtime.session import NpuSession

    graph = tf.Graph()
    sess = tf.compat.v1.Session("", graph, npu_config())
    assert type(sess) is NpuSession
    sess.close()


def test_no_npu_keeps_every_session_stock() -> None:
    from tf2npu.runtime import configure

    configure(npu=False)
    with tf.Graph().as_default(), tf.compat.v1.Session(config=npu_config()) as sess:
        assert type(sess) is tf.compat.v1.Session


def test_npu_by_default_makes_plain_sessions_npu_sessions() -> None:
    from tf2npu.runtime import make_sessions_npu_by_default
    from tf2npu.runtime.session import NpuSession

    make_sessions_npu_by_default()
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        assert type(sess) is NpuSession
        assert sess.run(tf.constant(3)) == 3


def test_install_is_idempotent_and_uninstall_restores() -> None:
    from tf2npu.runtime import install, is_installed, uninstall

    install()
    install()
    assert is_installed()
    uninstall()
    assert not is_installed()
    with tf.Graph().as_default(), tf.compat.v1.Session(config=npu_config()) as sess:
        assert type(sess) is tf.compat.v1.Session
    install()


def test_a_user_subclass_is_never_swapped() -> None:
    class Mine(tf.compat.v1.Session):
        pass

    with tf.Graph().as_default(), Mine(config=npu_config()) as sess:
        assert type(sess) is Mine


def test_a_bad_option_fails_at_session_creation_naming_it() -> None:
    from tf2npu.errors import ConfigError

    with tf.Graph().as_default(), pytest.raises(ConfigError, match="precision_mode"):
        tf.compat.v1.Session(config=npu_config(precision_mode="fastest"))


def test_command_line_overrides_win_over_the_config() -> None:
    from tf2npu.runtime import configure, run_stats

    configure(options=["precision_mode=force_fp32"])
    with tf.Graph().as_default():
        sess = tf.compat.v1.Session(config=npu_config(precision_mode="allow_mix_precision"))
        assert sess._npu_options.precision_mode == "force_fp32"
        sess.close()
    assert run_stats().options == {"precision_mode": "force_fp32"}


def test_options_without_effect_are_recorded() -> None:
    from tf2npu.runtime import run_stats

    with tf.Graph().as_default():
        tf.compat.v1.Session(config=npu_config(buffer_optimize="off_optimize")).close()
    assert "buffer_optimize" in run_stats().options_without_effect


def test_unknown_keys_are_ignored_recorded_and_warned_once(caplog) -> None:
    from tf2npu.runtime import run_stats

    config = npu_config(sump_mode="all", enable_auto_mix_precision=False)
    with tf.Graph().as_default(), caplog.at_level("WARNING", logger="tf2npu.runtime"):
        for _ in range(2):
            sess = tf.compat.v1.Session(config=config)
            assert sess._npu_options.unknown == ("enable_auto_mix_precision", "sump_mode")
            sess.close()
    assert run_stats().options_unknown == {"enable_auto_mix_precision", "sump_mode"}
    warned = [r.getMessage() for r in caplog.records if "is not an option" in r.getMessage()]
    assert warned == [
        "NpuOptimizer parameter_map['enable_auto_mix_precision'] is not an option of the "
        "adapter (did you mean 'enable_reduce_precision'?); ignored, as the adapter ignores it "
        "(tf2npu run --strict-options makes it an error)",
        "NpuOptimizer parameter_map['sump_mode'] is not an option of the adapter (did you mean "
        "'dump_mode'?); ignored, as the adapter ignores it (tf2npu run --strict-options makes "
        "it an error)",
    ]


def test_strict_options_keeps_unknown_keys_an_error() -> None:
    from tf2npu.errors import UnknownNameError
    from tf2npu.runtime import configure

    configure(strict_options=True)
    with tf.Graph().as_default(), pytest.raises(UnknownNameError, match="'sump_mode'"):
        tf.compat.v1.Session(config=npu_config(sump_mode="all"))

"""The deterministic option: TF's op determinism for seeded graphs, and an honest "no"."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from tests.runtime.conftest import npu_config, tf

from tf2npu.runtime import determinism
from tf2npu.runtime.context import context

pytestmark = pytest.mark.tf


@pytest.fixture
def enabled(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Op determinism is process-wide and makes unseeded random ops errors: record the call."""
    from tensorflow.python.framework import config

    calls: list[bool] = []
    monkeypatch.setattr(config, "enable_op_determinism", lambda: calls.append(True))
    monkeypatch.setattr(determinism, "onednn_enabled", lambda: False)
    return calls


def _graph(seed: int | None) -> Any:
    graph = tf.Graph()
    with graph.as_default():
        if seed is not None:
            tf.compat.v1.set_random_seed(seed)
        tf.constant(1.0, name="c")
    return graph


def test_option_in_a_seeded_npu_session_turns_op_determinism_on(enabled: list[bool]) -> None:
    with tf.compat.v1.Session(graph=_graph(0), config=npu_config(deterministic=1)):
        pass
    assert enabled == [True]
    assert context().determinism.summary() == {
        "requested_by": "deterministic=1",
        "reproducible": True,
        "op_determinism": True,
        "problems": [],
    }


def test_without_the_option_nothing_happens(enabled: list[bool]) -> None:
    with tf.compat.v1.Session(graph=_graph(0), config=npu_config()):
        pass
    with tf.compat.v1.Session(graph=_graph(0)):
        pass
    assert enabled == []
    assert context().determinism.summary() is None


def test_cli_request_covers_stock_sessions_and_says_no_without_a_seed(
    enabled: list[bool], caplog: pytest.LogCaptureFixture
) -> None:
    context().determinism.requested_by = determinism.CLI_FLAG
    with caplog.at_level(logging.WARNING), tf.compat.v1.Session(graph=_graph(None)):
        pass
    with tf.compat.v1.Session(graph=_graph(None)):
        pass
    assert enabled == []
    summary = context().determinism.summary()
    assert summary is not None and summary["reproducible"] is False
    assert summary["problems"] == [
        "the graph has no random seed, so op determinism stays off; " + determinism.SEED_FIX
    ]
    assert caplog.text.count("--deterministic asked for reproducible runs, but the graph") == 1


def test_onednn_on_at_import_is_said_once(
    enabled: list[bool], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(determinism, "onednn_enabled", lambda: True)
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            with tf.compat.v1.Session(graph=_graph(3), config=npu_config(deterministic=1)):
                pass
    summary = context().determinism.summary()
    assert summary is not None
    assert summary["op_determinism"] is True and summary["reproducible"] is False
    assert caplog.text.count("oneDNN kernels were on") == 1

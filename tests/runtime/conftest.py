"""Fixtures for the runtime tests: the session hook installed, settings and counters fresh."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")


@pytest.fixture(autouse=True)
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Hook installed; artifacts (check_result.tf.json, dumps) in a temporary folder."""
    from tf2npu.runtime import configure, install, is_installed, uninstall
    from tf2npu.runtime.context import RuntimeContext, use_context

    was_installed = is_installed()
    install()
    before = use_context(RuntimeContext())
    configure(report_dir=tmp_path_factory.mktemp("artifacts"))
    yield
    if not was_installed:  # importing npu_bridge installs it for the rest of the process
        uninstall()
    use_context(before)


def npu_config(**options: Any) -> Any:
    """A ConfigProto with NpuOptimizer and ``options`` in its parameter_map."""
    from tf2npu.runtime.protos import npu_session_config

    config = npu_session_config(None)
    params = config.graph_options.rewrite_options.custom_optimizers[0].parameter_map
    for key, value in options.items():
        if isinstance(value, bool):
            params[key].b = value
        elif isinstance(value, int):
            params[key].i = value
        else:
            params[key].s = str(value).encode()
    return config

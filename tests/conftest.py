"""Suite-wide fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _runtime_artifacts_in_a_temporary_folder(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """NPU sessions write check_result.tf.json and dumps into the working directory, as the
    adapter does; in tests they go to a temporary folder so the checkout stays clean. Importing
    ``npu_bridge.npu_init`` makes every later session an NPU session (the adapter's side
    effect); each test gets a fresh :class:`~tf2npu.runtime.context.RuntimeContext`, so that is
    undone after it too."""
    from tf2npu.runtime.context import RuntimeContext, use_context
    from tf2npu.runtime.settings import RuntimeSettings

    fresh = RuntimeSettings(report_dir=tmp_path_factory.mktemp("runtime-artifacts"))
    before = use_context(RuntimeContext(settings=fresh))
    yield
    use_context(before)


@pytest.fixture(autouse=True)
def _no_inherited_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-xdist starts its workers with ``COLUMNS=80``, which our consoles honour as the
    user's choice; tests that want a width set it themselves."""
    monkeypatch.delenv("COLUMNS", raising=False)

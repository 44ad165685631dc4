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


# A rank's environment without a running job (tests/client, tests/runtime/distributed): emission
# and config need no server.
_RANK_VARIABLES = (
    "RANK_SIZE",
    "CM_WORKER_SIZE",
    "RANK_ID",
    "POD_NAME",
    "TF2NPU_CLUSTER",
    "HCCL_EXEC_TIMEOUT",
    "HCCL_CONNECT_TIMEOUT",
    "RANK_TABLE_FILE",
)


@pytest.fixture
def rank_one_of_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process believes it is rank 1 of a two-rank job started by the launcher."""
    for name in _RANK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RANK_SIZE", "2")
    monkeypatch.setenv("RANK_ID", "1")
    monkeypatch.setenv("TF2NPU_CLUSTER", "127.0.0.1:1,127.0.0.1:2")
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "30")


@pytest.fixture
def one_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _RANK_VARIABLES:
        monkeypatch.delenv(name, raising=False)


SLOW_SECONDS = 1.0
"""A test that takes longer than this (its call, on a quiet 2-core machine) is marked ``slow``,
so that ``make test-fast`` (``pytest -m "not slow"``) stays a unit-test loop of under 2 minutes."""

_unmarked_slow: list[tuple[str, float]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.duration > SLOW_SECONDS and "slow" not in report.keywords:
        _unmarked_slow.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name the tests that took longer than :data:`SLOW_SECONDS` without the ``slow`` mark.

    Advisory (timings depend on the machine's load): it tells who to mark, it fails nothing.
    """
    if not _unmarked_slow:
        return
    terminalreporter.section("tests over 1 s without @pytest.mark.slow")
    for nodeid, seconds in sorted(_unmarked_slow, key=lambda item: -item[1]):
        terminalreporter.write_line(f"{seconds:6.1f} s  {nodeid}")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that share a module-scoped fixture of their own module run on one xdist worker.

    Such a fixture is made once per worker that runs one of its tests: the examples' 23 runs
    were made twice (once in each worker) when xdist spread their tests over both, 460 s of
    the suite. ``make test`` runs ``pytest -n 2 --dist loadgroup``, which keeps each
    ``xdist_group`` on one worker and spreads everything else as before.
    """
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.module is None:
            continue
        module = item.module.__name__
        for defs in info.name2fixturedefs.values():
            if any(d.scope == "module" and d.func.__module__ == module for d in defs):
                item.add_marker(pytest.mark.xdist_group(name=item.nodeid.split("::")[0]))
                break

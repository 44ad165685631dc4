"""The npu_bridge public surface matches its recorded snapshot (names and signatures)."""

from __future__ import annotations

import difflib

import pytest

pytestmark = pytest.mark.tf


def test_the_public_surface_is_the_recorded_one() -> None:
    pytest.importorskip("tensorflow")
    from tf2npu.testing.surface import SNAPSHOT, render_surface

    recorded = SNAPSHOT.read_text(encoding="utf-8")
    current = render_surface()
    diff = "".join(
        difflib.unified_diff(
            recorded.splitlines(keepends=True),
            current.splitlines(keepends=True),
            "recorded",
            "current",
        )
    )
    assert not diff, (
        "the npu_bridge public surface changed; if intended, record it with "
        "`.venv/bin/python -m tf2npu.testing.surface --write`:\n" + diff
    )

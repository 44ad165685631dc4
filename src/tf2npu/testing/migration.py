"""Run the migration on literal source text and compare with the expected text."""

from __future__ import annotations

from tf2npu.migrate.engine import Migrated, migrate_source
from tf2npu.migrate.model import FileStatus, Finding
from tf2npu.migrate.options import MigrateOptions


def migrate_text(
    before: str, options: MigrateOptions | None = None, path: str = "t.py"
) -> Migrated:
    """Migrate ``before`` (a str, encoded as UTF-8) with every rule."""
    return migrate_source(before.encode("utf-8"), path, options or MigrateOptions())


def assert_migrates(
    before: str, after: str, options: MigrateOptions | None = None, path: str = "t.py"
) -> Migrated:
    """``before`` migrates to exactly ``after``, and migrating ``after`` again changes nothing."""
    first = migrate_text(before, options, path)
    assert first.result.status is not FileStatus.FAILED, first.result.reason
    got = first.output.decode("utf-8")
    assert got == after, f"\n--- expected ---\n{after}\n--- got ---\n{got}"
    again = migrate_source(first.output, path, options or MigrateOptions())
    assert again.output == first.output, "migrating the output again changed it (not idempotent)"
    assert not again.result.changes
    return first


def rule_findings(migrated: Migrated, rule: str) -> list[Finding]:
    return [f for f in migrated.result.findings if f.rule == rule]

"""Regenerate the rule reference in docs/migration.md from the rule registry."""

from __future__ import annotations

from pathlib import Path

from tf2npu.migrate.rule_docs import update

DOC = Path(__file__).resolve().parents[1] / "docs" / "migration.md"


def main() -> None:
    DOC.write_text(update(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"updated {DOC}")


if __name__ == "__main__":
    main()

"""Regenerate the option table in docs/options.md from the option table in tf2npu.config."""

from __future__ import annotations

from pathlib import Path

from tf2npu.config.option_docs import update

DOC = Path(__file__).resolve().parents[1] / "docs" / "options.md"


def main() -> None:
    DOC.write_text(update(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"updated {DOC}")


if __name__ == "__main__":
    main()

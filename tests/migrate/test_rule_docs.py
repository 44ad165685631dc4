"""docs/migration.md shows every rule exactly as the registry defines it."""

from pathlib import Path

from tf2npu.migrate.rule import REGISTRY
from tf2npu.migrate.rule_docs import render_rules, update

DOC = Path(__file__).resolve().parents[2] / "docs" / "migration.md"


def test_docs_are_generated_from_the_current_registry():
    text = DOC.read_text(encoding="utf-8")
    assert update(text) == text, "run: python tools/gen_migration_docs.py"


def test_every_rule_and_example_is_in_the_docs():
    rendered = render_rules()
    for name, rule in REGISTRY.items():
        assert f"### `{name}`" in rendered
        for example in rule.examples:
            assert example.before in rendered and example.after in rendered

"""Every fusion rule is one file with its own test: name = module = test file, as the migration
rules are (tests/migrate/rules/test_rule_examples.py)."""

from __future__ import annotations

from pathlib import Path

import tf2npu
from tf2npu.graph.fusion import RULES, known_rules

known_rules()  # imports the rule modules, which register themselves

RULES_DIR = Path(tf2npu.__file__).parent / "graph" / "fusion" / "rules"
TESTS_DIR = Path(__file__).parent / "rules"


def test_each_rule_lives_in_the_module_of_its_name() -> None:
    assert {name: cls.__module__ for name, cls in RULES.items()} == {
        name: f"tf2npu.graph.fusion.rules.{name}" for name in RULES
    }


def test_each_rule_module_holds_a_registered_rule() -> None:
    modules = {p.stem for p in RULES_DIR.glob("*.py") if not p.stem.startswith("_")}
    assert sorted(modules - set(RULES)) == []


def test_each_rule_has_its_test_file() -> None:
    assert sorted(n for n in RULES if not (TESTS_DIR / f"test_{n}.py").is_file()) == []


def test_each_rule_answers_to_at_least_one_ascend_pass_name_and_no_two_share_one() -> None:
    owners: dict[str, list[str]] = {}
    for name, cls in RULES.items():
        assert cls.aliases, f"{name}: no Ascend pass name in aliases"
        for alias in cls.aliases:
            owners.setdefault(alias, []).append(name)
    assert {a: n for a, n in owners.items() if len(n) > 1} == {}

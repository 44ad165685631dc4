"""Every rule's documented examples are real: each migrates exactly as shown, idempotently."""

import pytest

from tf2npu.migrate.engine import RULE_ORDER
from tf2npu.migrate.rule import REGISTRY
from tf2npu.testing.migration import assert_migrates

CASES = [
    pytest.param(example, id=f"{name}-{i}")
    for name, rule in sorted(REGISTRY.items())
    for i, example in enumerate(rule.examples)
]


@pytest.mark.parametrize("example", CASES)
def test_example_migrates_as_documented(example):
    assert_migrates(example.before, example.after)


def test_rule_order_lists_every_rule_once():
    assert sorted(RULE_ORDER) == sorted(REGISTRY)
    assert len(set(RULE_ORDER)) == len(RULE_ORDER)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_rule_is_documented_and_tested(name, request):
    rule = REGISTRY[name]
    assert rule.__doc__ and rule.summary(), f"rule {name} has no docstring"
    assert rule.examples, f"rule {name} has no examples"
    assert rule.__module__.rsplit(".", 1)[1] == name, "a rule's module is named after the rule"
    test_file = request.path.parent / f"test_{name}.py"
    assert test_file.exists(), f"rule {name} has no test file {test_file.name}"

"""The shared test scripts are Python that names the ops the dump tests look for."""

from __future__ import annotations

import ast

from tf2npu.testing.scripts import DENSE_TRAINING


def test_dense_training_parses_and_names_its_ops() -> None:
    tree = ast.parse(DENSE_TRAINING)
    names = {
        k.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for k in node.keywords
        if k.arg == "name" and isinstance(k.value, ast.Constant)
    }
    assert names == {"x", "w", "b", "y", "loss"}

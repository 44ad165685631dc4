"""tf2npu.compat.contrib.table: the table is consistent, resolves, and matches the docs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tf2npu.compat.contrib import docs, table

DOC = Path(__file__).resolve().parents[2] / "docs" / "tf1-compat.md"


def test_each_symbol_is_listed_once() -> None:
    keys = [(s.module, s.name) for s in table.PROVIDED]
    assert len(keys) == len(set(keys))


def test_not_provided_never_names_a_provided_symbol() -> None:
    provided = {(s.module, s.name) for s in table.PROVIDED}
    modules = set(table.provided_modules())
    for miss in table.NOT_PROVIDED:
        if miss.name is None:
            assert miss.module not in modules, miss
        else:
            assert (miss.module, miss.name) not in provided, miss


def test_bert_and_albert_symbols_are_provided() -> None:
    needed = {
        ("layers", "layer_norm"),
        ("tpu", "TPUEstimator"),
        ("tpu", "TPUEstimatorSpec"),
        ("tpu", "RunConfig"),
        ("tpu", "TPUConfig"),
        ("tpu", "InputPipelineConfig"),
        ("tpu", "CrossShardOptimizer"),
        ("cluster_resolver", "TPUClusterResolver"),
        ("data", "map_and_batch"),
        ("data", "parallel_interleave"),
    }
    assert needed <= {(s.module, s.name) for s in table.PROVIDED}


def test_advice_for_a_missing_symbol_of_a_provided_module() -> None:
    text = table.advice_for("layers", "optimize_loss")
    assert text.startswith("tf.contrib.layers.optimize_loss is not provided by tf2npu run")
    assert "tf.compat.v1.train.<Optimizer>().minimize(loss" in text


def test_advice_for_an_unlisted_symbol_names_the_provided_ones() -> None:
    text = table.advice_for("lookup", "string_to_index")
    assert text.startswith("tf.contrib.lookup.string_to_index is not provided by tf2npu run")
    assert "index_table_from_tensor" in text


def test_advice_for_modules() -> None:
    assert "pip install tf-slim" in table.advice_for("slim", None)
    generic = table.advice_for("gan", None)
    assert generic.startswith("tf.contrib.gan is not provided by tf2npu run")
    assert "layers, tpu, cluster_resolver" in generic
    assert table.advice_for("opt", "AdamWOptimizer").startswith(
        "tf.contrib.opt.AdamWOptimizer is not provided by tf2npu run; TF 2.15 has no tf.contrib.opt"
    )


def test_docs_show_the_current_tables() -> None:
    text = DOC.read_text()
    assert docs.provided_markdown() in text, "regenerate: python -m tf2npu.compat.contrib.docs"
    assert docs.not_provided_markdown() in text
    assert docs.aliases_markdown() in text


@pytest.mark.tf
@pytest.mark.slow
def test_every_target_resolves(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        from tf2npu.compat.contrib import table
        bad = []
        for sym in table.PROVIDED:
            mod = getattr(tf.contrib, sym.module)
            try:
                value = getattr(mod, sym.name)
            except Exception as err:
                bad.append(f"{sym.module}.{sym.name}: {err!r}")
                continue
            if value is None:
                bad.append(f"{sym.module}.{sym.name}: None")
        print("BAD", bad)
    """)
    assert out.strip() == "BAD []"

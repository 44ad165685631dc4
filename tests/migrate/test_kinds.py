"""Conservative kind inference: only provable datasets, supervisors and configs have a kind."""

from __future__ import annotations

import ast

import pytest

from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.kinds import DATASET, NPU_CONFIG, RUN_CONFIG, SUPERVISOR, Kinds


def receivers(src: str, method: str = "batch") -> list[tuple[int, str | None]]:
    """The kind of the receiver of every ``<expr>.<method>(...)`` call, by line."""
    index = ModuleIndex.build(ast.parse(src))
    kinds = Kinds(index)
    return [(m.call.lineno, kinds.of(m.receiver, m.scope)) for m in index.method_calls[method]]


def last_value(src: str) -> str | None:
    """The kind of the module's last statement (an expression)."""
    tree = ast.parse(src)
    index = ModuleIndex.build(tree)
    stmt = tree.body[-1]
    assert isinstance(stmt, ast.Expr)
    return Kinds(index).of(stmt.value, index.scope_at(stmt))


TF = "import tensorflow as tf\n"


# -- datasets -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "factory",
    [
        "tf.data.TFRecordDataset(files)",
        "tf.data.TextLineDataset(files)",
        "tf.data.FixedLengthRecordDataset(files, 8)",
        "tf.data.Dataset.from_tensor_slices(x)",
        "tf.data.Dataset.from_tensors(x)",
        "tf.data.Dataset.from_generator(g, tf.int32)",
        "tf.data.Dataset.range(10)",
        "tf.data.Dataset.zip((a, b))",
        "tf.data.Dataset.list_files(pattern)",
        "tf.data.experimental.make_csv_dataset(p, 32)",
        "tf.data.experimental.CsvDataset(p, [1])",
        "tf.contrib.data.TFRecordDataset(files)",
        "tf.compat.v1.data.TFRecordDataset(files)",
    ],
)
def test_dataset_factories(factory: str) -> None:
    assert receivers(f"{TF}{factory}.batch(2)\n") == [(2, DATASET)]


def test_factory_through_other_import_styles() -> None:
    src = (
        "from tensorflow.data import TFRecordDataset\n"
        "import tensorflow.compat.v1 as v1\n"
        "TFRecordDataset(f).batch(1)\n"
        "v1.data.Dataset.range(3).batch(2)\n"
    )
    assert receivers(src) == [(3, DATASET), (4, DATASET)]


def test_aliased_factory() -> None:
    src = f"{TF}TFR = tf.data.TFRecordDataset\nTFR(f).batch(2)\n"
    assert receivers(src) == [(3, DATASET)]


def test_method_chain() -> None:
    src = f"{TF}tf.data.Dataset.from_tensor_slices(x).map(f).shuffle(8).repeat().batch(2)\n"
    assert receivers(src) == [(2, DATASET)]


def test_apply_keeps_a_dataset() -> None:
    src = (
        f"{TF}ds = tf.data.TFRecordDataset(f).apply(tf.data.experimental.ignore_errors())\n"
        "ds.batch(2)\n"
    )
    assert receivers(src) == [(3, DATASET)]


def test_unknown_method_in_the_chain_loses_the_kind() -> None:
    src = f"{TF}tf.data.TFRecordDataset(f).make_one_shot_iterator().batch(2)\n"
    assert receivers(src) == [(2, None)]


def test_variable_whose_bindings_are_all_datasets() -> None:
    src = (
        f"{TF}"
        "if training:\n"
        "    ds = tf.data.TFRecordDataset(train_files)\n"
        "else:\n"
        "    ds = tf.data.TextLineDataset(eval_files)\n"
        "ds.batch(2)\n"
    )
    assert receivers(src) == [(6, DATASET)]


def test_variable_with_one_non_dataset_binding_is_not_a_dataset() -> None:
    src = f"{TF}ds = tf.data.TFRecordDataset(f)\nds = wrap(ds)\nds.batch(2)\n"
    assert receivers(src) == [(4, None)]


def test_binding_order_does_not_matter() -> None:
    # Flow-insensitive: a non-dataset binding anywhere in the scope spoils the proof.
    src = f"{TF}ds = 3\nds = tf.data.TFRecordDataset(f)\nds.batch(2)\n"
    assert receivers(src) == [(4, None)]


def test_self_reference_is_a_dataset() -> None:
    src = (
        f"{TF}ds = tf.data.TFRecordDataset(f)\n"
        "ds = ds.map(parse)\nds = ds.shuffle(10)\nds.batch(2)\n"
    )
    assert receivers(src) == [(5, DATASET)]


def test_dataset_only_through_a_self_reference_is_not_proven_by_it() -> None:
    # ``ds = ds.map(f)`` alone (ds a parameter) proves nothing.
    src = "def f(ds):\n    ds = ds.map(g)\n    ds.batch(2)\n"
    assert receivers(src) == [(3, None)]


def test_a_failed_guess_is_not_remembered_for_dependent_names() -> None:
    # While ``ds`` is being proven it is assumed a dataset; ``y`` must not keep that guess
    # once one of ds's bindings (``3``) turns out not to be a dataset.
    src = (
        f"{TF}ds = tf.data.TFRecordDataset(f)\n"
        "y = ds.map(g)\n"
        "ds = y.take(1)\n"
        "ds = 3\n"
        "ds.batch(1)\n"
        "y.batch(2)\n"
    )
    assert receivers(src) == [(6, None), (7, None)]


def test_enclosing_scope_variable() -> None:
    src = f"{TF}ds = tf.data.TFRecordDataset(f)\ndef g():\n    ds.batch(2)\n"
    assert receivers(src) == [(4, DATASET)]


def test_annotated_assignment() -> None:
    src = f"{TF}ds: tf.data.Dataset = tf.data.TFRecordDataset(f)\nds.batch(2)\n"
    assert receivers(src) == [(3, DATASET)]


@pytest.mark.parametrize(
    "src",
    [
        "def f(ds):\n    ds.batch(2)\n",
        "class A:\n    def f(self):\n        self.batch(2)\n",
        f"{TF}for ds in datasets:\n    ds.batch(2)\n",
        f"{TF}ds = [tf.data.TFRecordDataset(f)]\nds[0].batch(2)\n",
        f"{TF}ds = tf.data.TFRecordDataset(f)\nds.attr.batch(2)\n",
        "make().batch(2)\n",
        "x.batch(2)\n",
        f"{TF}with tf.data.TFRecordDataset(f) as ds:\n    ds.batch(2)\n",
    ],
)
def test_unprovable_receivers(src: str) -> None:
    assert [kind for _, kind in receivers(src)] == [None]


# -- local functions ----------------------------------------------------------------------------
def test_local_function_returning_a_dataset() -> None:
    src = (
        f"{TF}def input_fn():\n"
        "    ds = tf.data.TFRecordDataset(files)\n"
        "    return ds.repeat()\n"
        "input_fn().batch(2)\n"
    )
    assert receivers(src) == [(5, DATASET)]


def test_local_function_with_several_dataset_returns() -> None:
    src = (
        f"{TF}def input_fn(train):\n"
        "    if train:\n"
        "        return tf.data.TFRecordDataset(a)\n"
        "    return tf.data.TextLineDataset(b)\n"
        "input_fn(True).batch(2)\n"
    )
    assert receivers(src) == [(6, DATASET)]


@pytest.mark.parametrize(
    "other_return", ["return None", "return", "return tf.constant(1)", "return make()"]
)
def test_local_function_with_one_non_dataset_return(other_return: str) -> None:
    src = (
        f"{TF}def input_fn(train):\n"
        "    if train:\n"
        f"        {other_return}\n"
        "    return tf.data.TFRecordDataset(b)\n"
        "input_fn(True).batch(2)\n"
    )
    assert receivers(src) == [(6, None)]


def test_local_function_without_return() -> None:
    assert receivers("def input_fn():\n    pass\ninput_fn().batch(2)\n") == [(3, None)]


def test_returns_of_nested_functions_do_not_count() -> None:
    src = (
        f"{TF}def input_fn():\n"
        "    def parse(x):\n"
        "        return x\n"
        "    return tf.data.TFRecordDataset(f).map(parse)\n"
        "input_fn().batch(2)\n"
    )
    assert receivers(src) == [(6, DATASET)]


def test_function_defined_twice_is_not_trusted() -> None:
    src = (
        f"{TF}def input_fn():\n    return tf.data.TFRecordDataset(f)\n"
        "def input_fn():\n    return 1\n"
        "input_fn().batch(2)\n"
    )
    assert receivers(src) == [(6, None)]


def test_recursion_guard() -> None:
    src = (
        f"{TF}def input_fn(n):\n"
        "    if n:\n"
        "        return input_fn(n - 1)\n"
        "    return tf.data.TFRecordDataset(f)\n"
        "input_fn(3).batch(2)\n"
    )
    assert receivers(src) == [(6, None)]


def test_mutual_recursion_terminates() -> None:
    src = "def a():\n    return b()\ndef b():\n    return a()\na().batch(1)\n"
    assert receivers(src) == [(5, None)]


def test_variable_alias_cycle_terminates() -> None:
    # Code like this raises NameError; inference only has to terminate on it.
    assert len(receivers("a = b\nb = a\na.batch(1)\n")) == 1


def test_function_kind_is_used_through_a_variable() -> None:
    src = (
        f"{TF}def input_fn():\n    return tf.data.TFRecordDataset(f)\n"
        "ds = input_fn()\nds.batch(2)\n"
    )
    assert receivers(src) == [(5, DATASET)]


# -- supervisor, configs ------------------------------------------------------------------------
def test_supervisor() -> None:
    src = f"{TF}sv = tf.train.Supervisor(logdir=d)\nwith sv.managed_session() as s:\n    pass\n"
    assert receivers(src, "managed_session") == [(3, SUPERVISOR)]


def test_supervisor_with_another_binding_is_unproven() -> None:
    src = f"{TF}sv = tf.train.Supervisor(logdir=d)\nsv = None\nsv.managed_session()\n"
    assert receivers(src, "managed_session") == [(4, None)]


@pytest.mark.parametrize("call", ["npu_config_proto()", "npu_session_config(config_proto=c)"])
def test_npu_config_builders(call: str) -> None:
    assert last_value(f"{call}\n") == NPU_CONFIG


def test_npu_config_through_a_variable() -> None:
    assert last_value("cfg = npu_config_proto(config_proto=c)\ncfg\n") == NPU_CONFIG


def test_config_proto_is_not_an_npu_config() -> None:
    assert last_value(f"{TF}tf.ConfigProto()\n") is None


@pytest.mark.parametrize(
    "src",
    [
        f"{TF}tf.estimator.RunConfig(model_dir=d)\n",
        f"{TF}cfg = tf.estimator.RunConfig(model_dir=d)\ncfg\n",
        f"{TF}tf.estimator.RunConfig().replace(save_summary_steps=1)\n",
        f"{TF}cfg = tf.estimator.RunConfig()\ncfg = cfg.replace(keep_checkpoint_max=3)\ncfg\n",
        "NPURunConfig(model_dir=d)\n",
        "NPURunConfig().replace(model_dir=d)\n",
    ],
)
def test_run_config(src: str) -> None:
    assert last_value(src) == RUN_CONFIG


def test_run_config_replace_self_reference_reaches_the_estimator_check() -> None:
    src = (
        f"{TF}cfg = tf.estimator.RunConfig(model_dir=d)\n"
        "cfg = cfg.replace(save_summary_steps=1)\n"
        "ds = tf.data.TFRecordDataset(f)\n"
        "ds = ds.map(g)\n"
        "cfg\n"
    )
    assert last_value(src) == RUN_CONFIG
    assert last_value(src.replace("cfg\n", "ds\n")) == DATASET


def test_run_config_with_a_non_config_binding_is_unproven() -> None:
    src = f"{TF}cfg = tf.estimator.RunConfig()\ncfg = cfg.replace(x=1)\ncfg = None\ncfg\n"
    assert last_value(src) is None


def test_long_chains_of_unproven_variables_stay_fast() -> None:
    lines = ["v0 = make()"] + [f"v{i} = v{i - 1}.map(f)" for i in range(1, 60)]
    src = "\n".join(lines) + "\nv59.batch(2)\n"
    assert receivers(src) == [(61, None)]


def test_replace_on_something_else_is_not_a_run_config() -> None:
    assert last_value("text.replace('a', 'b')\n") is None


def test_is_dataset() -> None:
    tree = ast.parse(f"{TF}tf.data.TFRecordDataset(f)\nother()\n")
    index = ModuleIndex.build(tree)
    kinds = Kinds(index)
    first, second = (s.value for s in tree.body[1:])  # type: ignore[attr-defined]
    assert kinds.is_dataset(first, index.resolver.module)
    assert not kinds.is_dataset(second, index.resolver.module)


def test_other_expressions_have_no_kind() -> None:
    assert last_value("3\n") is None
    assert last_value("a.b\n") is None
    assert last_value("undefined_name\n") is None


@pytest.mark.parametrize(
    "expr",
    [
        "tf.contrib.data.Dataset.from_tensor_slices(x)",
        "tf.data.TFRecordDataset.list_files(p)",
        "tf.data.Dataset.zip((a, b))",
    ],
)
def test_static_factories_through_subclasses_and_contrib(expr: str) -> None:
    source = f"import tensorflow as tf\nd = {expr}.batch(2)\n"
    index = ModuleIndex.build(ast.parse(source))
    [call] = index.method_calls["batch"]
    assert Kinds(index).is_dataset(call.receiver, call.scope)

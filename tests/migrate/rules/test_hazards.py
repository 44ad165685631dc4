"""The hazards rule: each known Ascend hazard is reported exactly, and nothing is ever edited."""

import re
from pathlib import Path

import pytest

from tf2npu.migrate.model import Severity
from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.rules import hazards as rule
from tf2npu.migrate.tables.hazards import BY_ID, HAZARDS, contrib_row
from tf2npu.testing.migration import migrate_text, rule_findings

INFO, WARNING, ERROR = Severity.INFO, Severity.WARNING, Severity.ERROR
MIX = MigrateOptions(mix_compile=True)
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tf1"


def hazard_id(message):
    match = re.match(r"\[([a-z0-9_]+)\] ", message)
    assert match, f"message does not start with a hazard id: {message!r}"
    return match.group(1)


def hazards(before, options=None, *, unchanged=True):
    """(id, line, col, severity) of each hazards finding; the output must equal the input."""
    migrated = migrate_text(before, options)
    if unchanged:
        assert migrated.output == before.encode("utf-8")
    found = rule_findings(migrated, "hazards")
    for finding in found:
        assert hazard_id(finding.message) in BY_ID
        assert finding.fix
    return sorted(
        ((hazard_id(f.message), f.line, f.col, f.severity) for f in found),
        key=lambda h: (h[1], h[2], h[0]),
    )


def finding(before, hazard, options=None):
    """The single finding of ``hazard`` for ``before``."""
    found = [
        f for f in rule_findings(migrate_text(before, options), "hazards")
        if hazard_id(f.message) == hazard
    ]  # fmt: skip
    assert len(found) == 1, [f.message for f in found]
    return found[0]


def only(before, options=None, *, unchanged=True):
    """The single hazards finding of ``before``."""
    migrated = migrate_text(before, options)
    if unchanged:
        assert migrated.output == before.encode("utf-8")
    found = rule_findings(migrated, "hazards")
    assert len(found) == 1, [f.message for f in found]
    return found[0]


# -- lookup tables and variables in the input pipeline (seed 000 cases 01, 02) --------------

TABLE_IN_LAMBDA = (
    "import tensorflow as tf\n"
    "table = tf.lookup.StaticHashTable(initializer, -1)\n"
    "ds = tf.data.TFRecordDataset(files)\n"
    "ds = ds.map(lambda x: table.lookup(x))\n"
)


def test_lookup_table_read_in_a_map_lambda_without_a_config_to_fix_is_an_error():
    assert hazards(TABLE_IN_LAMBDA) == [
        ("mix_compile_recommended", 2, 9, WARNING),
        ("lookup_table_in_pipeline", 4, 23, ERROR),
    ]
    found = finding(TABLE_IN_LAMBDA, "lookup_table_in_pipeline")
    assert found.message == (
        "[lookup_table_in_pipeline] lookup table `table` (tf.lookup.StaticHashTable, line 2) is "
        "used in the input pipeline (the function passed to .map() at line 4): in the default "
        "full-offload mode the NPU runs the table's initialisation on the device while the "
        "pipeline looks it up on the host, so training fails with 'Table not initialized'; "
        "mixed compute was not turned on because tf2npu writes no NPU config in this file (it "
        "builds none, or builds its own NPU config) to turn it on in"
    )
    assert "--mix-compile" in found.fix and "mix_compile_mode=True" in found.fix
    assert migrate_text(TABLE_IN_LAMBDA).result.findings[-1].severity is ERROR


SESSION = "with tf.Session() as sess:\n    sess.run(ds)\n"
SESSION_WITH_MIX_COMPILE = (
    "from npu_bridge.npu_init import *\n"
    "import tensorflow as tf\n"
    "\n"
    "\n"
    "def npu_session_config(config_proto=None):\n"
    '    """npu_config_proto() plus the NPU options chosen when migrating (added by tf2npu)."""\n'
    "    config_proto = npu_config_proto(config_proto=config_proto)\n"
    "    for custom_op in config_proto.graph_options.rewrite_options.custom_optimizers:\n"
    '        if custom_op.name == "NpuOptimizer":\n'
    '            custom_op.parameter_map["mix_compile_mode"].b = True\n'
    "    return config_proto\n"
    "\n"
    "table = tf.lookup.StaticHashTable(initializer, -1)\n"
    "ds = tf.data.TFRecordDataset(files)\n"
    "ds = ds.map(lambda x: table.lookup(x))\n"
    "with tf.Session(config=npu_session_config()) as sess:\n"
    "    sess.run(ds)\n"
)


def test_lookup_table_in_the_pipeline_gets_mix_compile_in_the_session_config():
    migrated = migrate_text(TABLE_IN_LAMBDA + SESSION)
    assert migrated.output.decode() == SESSION_WITH_MIX_COMPILE
    changes = [(c.rule, c.line) for c in migrated.result.changes]
    assert changes == [("npu_import", 1), ("npu_helper", 2), ("session_config", 5)]
    assert 'mix_compile_mode"].b = True' in migrated.result.changes[1].after
    assert hazards(TABLE_IN_LAMBDA + SESSION, unchanged=False) == [
        ("mix_compile_enabled", 4, 23, INFO)
    ]
    found = finding(TABLE_IN_LAMBDA + SESSION, "mix_compile_enabled")
    assert found.message == (
        "[mix_compile_enabled] lookup table `table` (tf.lookup.StaticHashTable, line 2) is used "
        "in the input pipeline (the function passed to .map() at line 4): in the default "
        "full-offload mode the NPU would run the table's initialisation on the device while the "
        "pipeline looks it up on the host ('Table not initialized'), so tf2npu turned mixed "
        "compute on (mix_compile_mode=True) in the NPU config it writes (line 5), the vendor's "
        "fix for this case"
    )
    assert not migrated.result.findings or all(
        f.severity is not ERROR for f in migrated.result.findings
    )


def test_lookup_table_in_the_pipeline_gets_mix_compile_in_the_run_config():
    before = (
        TABLE_IN_LAMBDA
        + "est = tf.estimator.Estimator(model_fn, config=tf.estimator.RunConfig('/tmp/m'))\n"
    )
    migrated = migrate_text(before)
    assert migrated.output.decode().splitlines()[-1] == (
        "est = NPUEstimator(model_fn, config=NPURunConfig(model_dir='/tmp/m', "
        "mix_compile_mode=True))"
    )
    assert [h[0] for h in hazards(before, unchanged=False)] == ["mix_compile_enabled"]


def test_lookup_table_with_iterations_per_loop_is_left_to_the_user():
    before = TABLE_IN_LAMBDA + "cfg = tf.estimator.RunConfig('/tmp/m')\niterations_per_loop = 10\n"
    migrated = migrate_text(before)
    assert b"mix_compile_mode" not in migrated.output
    found = finding(before, "lookup_table_in_pipeline")
    assert found.severity is ERROR
    assert found.message.endswith(
        "mixed compute was not turned on because the file sets iterations_per_loop, and mixed "
        "compute requires it to be 1"
    )


def test_lookup_table_in_a_local_def_passed_by_name():
    before = (
        "import tensorflow as tf\n"
        "def input_fn(files):\n"
        "    table = tf.contrib.lookup.index_table_from_file(vocab)\n"
        "    def parse(line):\n"
        "        words = tf.string_split([line]).values\n"
        "        return table.lookup(words)\n"
        "    return tf.data.TextLineDataset(files).map(parse, num_parallel_calls=4)\n"
    )
    found = hazards(before)
    assert ("lookup_table_in_pipeline", 6, 16, ERROR) in found
    # The string op is in the pipeline (host anyway), so only the table is listed.
    assert ("mix_compile_recommended", 3, 13, WARNING) in found


def test_lookup_table_created_inside_the_map_function():
    before = (
        "import tensorflow as tf\n"
        "def parse(line):\n"
        "    t = tf.contrib.lookup.index_table_from_file('vocab.txt')\n"
        "    return t.lookup(line)\n"
        "ds = tf.data.TextLineDataset(files).map(parse)\n"
    )
    pipeline = [h for h in hazards(before) if h[0].endswith("_in_pipeline")]
    assert pipeline == [("lookup_table_in_pipeline", 3, 9, ERROR)]


def test_lookup_table_in_a_helper_the_map_function_calls():
    before = (
        "import functools\n"
        "import tensorflow as tf\n"
        "table = tf.lookup.StaticHashTable(init, 0)\n"
        "def _decode(record, spec):\n"
        "    return table.lookup(record)\n"
        "def make(files, spec):\n"
        "    d = tf.data.TFRecordDataset(files)\n"
        "    d = d.apply(tf.data.experimental.map_and_batch(\n"
        "        lambda r: _decode(r, spec), batch_size=8, drop_remainder=True))\n"
        "    return d.map(functools.partial(_decode, spec=spec))\n"
    )
    found = [h for h in hazards(before) if h[0] == "lookup_table_in_pipeline"]
    # Reached through map_and_batch first; the partial reaches the same function again.
    assert found == [("lookup_table_in_pipeline", 5, 12, ERROR)]
    message = finding(before, "lookup_table_in_pipeline").message
    assert "tf.data.experimental.map_and_batch() at line 8" in message


def test_lookup_table_with_mix_compile_is_fine():
    assert hazards(TABLE_IN_LAMBDA, MIX) == []


def test_mix_compile_written_in_the_file_counts():
    before = TABLE_IN_LAMBDA + (
        "custom_op = config.graph_options.rewrite_options.custom_optimizers.add()\n"
        'custom_op.parameter_map["mix_compile_mode"].b = True\n'
    )
    assert hazards(before) == []


def test_lookup_table_outside_the_pipeline_only_recommends_mixed_compute():
    before = (
        "import tensorflow as tf\n"
        "table = tf.lookup.StaticHashTable(initializer, -1)\n"
        "ids = table.lookup(words)\n"
    )
    assert hazards(before) == [("mix_compile_recommended", 2, 9, WARNING)]


def test_map_on_an_unproven_receiver_is_not_a_pipeline():
    before = (
        "import tensorflow as tf\n"
        "table = tf.lookup.StaticHashTable(initializer, -1)\n"
        "def run(pool, items):\n"
        "    return pool.map(lambda x: table.lookup(x), items)\n"
    )
    assert [h[0] for h in hazards(before)] == ["mix_compile_recommended"]


def test_variable_fed_to_a_dataset_method_seed_case_02():
    before = (
        "import tensorflow as tf\n"
        "batch_size = tf.Variable(\n"
        "    tf.placeholder(tf.int64, [], 'batch_size'), trainable=False, collections=[])\n"
        "train_dataset = tf.data.TFRecordDataset(files)\n"
        "train_dataset = train_dataset.batch(batch_size, drop_remainder=True)\n"
    )
    found = only(before)
    assert (hazard_id(found.message), found.line, found.col, found.severity) == (
        "variable_in_pipeline", 5, 37, WARNING,
    )  # fmt: skip
    assert "variable `batch_size` (tf.Variable, line 2)" in found.message
    assert "an argument of .batch() at line 5" in found.message
    assert "constant" in found.fix
    # Mixed compute does not help here: still reported.
    assert [h[0] for h in hazards(before, MIX)] == ["variable_in_pipeline"]


def test_variable_created_in_a_map_function():
    before = (
        "import tensorflow as tf\n"
        "def scale(x):\n"
        "    w = tf.get_variable('w', [], initializer=tf.ones_initializer())\n"
        "    return x * w\n"
        "ds = tf.data.Dataset.range(10).map(scale)\n"
    )
    assert hazards(before) == [("variable_in_pipeline", 3, 9, WARNING)]


def test_variable_passed_to_a_user_method_is_fine():
    before = (
        "import tensorflow as tf\n"
        "n = tf.Variable(3)\n"
        "loader.batch(n)\n"
        "loader.map(lambda x: x * n)\n"
    )
    assert hazards(before) == []


# -- py_func ------------------------------------------------------------------------------


def test_py_func_in_the_model():
    before = "import tensorflow as tf\ny = tf.py_func(numpy_fn, [x], tf.float32)\n"
    assert hazards(before) == [
        ("mix_compile_recommended", 2, 5, WARNING),
        ("py_func_host", 2, 5, WARNING),
    ]
    found = finding(before, "py_func_host")
    assert found.message.startswith("[py_func_host] tf.py_func runs Python (op PyFunc)")
    assert "--mix-compile" in found.fix


def test_py_func_with_mix_compile_is_fine():
    before = "import tensorflow as tf\ny = tf.py_func(numpy_fn, [x], tf.float32)\n"
    assert hazards(before, MIX) == []


def test_py_func_through_a_compat_v1_alias():
    before = "import tensorflow.compat.v1 as tf1\ny = tf1.numpy_function(fn, [x], tf1.float32)\n"
    assert ("py_func_host", 2, 5, WARNING) in hazards(before)


def test_py_func_in_the_pipeline_stays_on_the_host():
    before = (
        "import tensorflow as tf\n"
        "ds = tf.data.TFRecordDataset(files)\n"
        "ds = ds.map(lambda x: tf.py_func(clean, [x], tf.string))\n"
    )
    found = only(before)
    assert (hazard_id(found.message), found.line, found.col) == ("py_func_in_pipeline", 3, 23)
    assert found.severity is INFO
    assert "keeps a map whose function calls PyFunc" in found.message


@pytest.mark.parametrize(
    ("call", "api", "op"),
    [
        ("tf.py_func(clean, [x], tf.string, stateful=False)", "tf.py_func(stateful=False)",
         "PyFuncStateless"),
        ("tf.py_func(clean, [x], tf.string, False)", "tf.py_func(stateful=False)",
         "PyFuncStateless"),
        ("tf.py_function(clean, [x], tf.string)", "tf.py_function", "EagerPyFunc"),
    ],
)  # fmt: skip
def test_python_ops_the_dataset_offload_may_move_to_the_device(call, api, op):
    before = (
        "import tensorflow as tf\n"
        "def parse(x):\n"
        f"    return {call}\n"
        "ds = tf.data.TFRecordDataset(files).map(parse)\n"
    )
    found = only(before)
    assert (hazard_id(found.message), found.line, found.col, found.severity) == (
        "py_function_in_pipeline", 3, 12, WARNING,
    )  # fmt: skip
    assert found.message.startswith(f"[py_function_in_pipeline] {api} creates op {op}")
    assert "enable_data_pre_proc=False" in found.fix


def test_python_op_in_an_estimator_pipeline_is_an_error():
    before = (
        "import tensorflow as tf\n"
        "def input_fn():\n"
        "    return tf.data.TFRecordDataset(files).map(lambda x: tf.py_function(f, [x], tf.string))\n"
        "est = tf.estimator.Estimator(model_fn)\n"
    )
    assert hazards(before, unchanged=False) == [("py_function_in_pipeline", 3, 57, ERROR)]


def test_python_op_in_pipeline_without_dataset_offload_is_fine():
    before = (
        "import tensorflow as tf\n"
        "ds = tf.data.TFRecordDataset(files).map(lambda x: tf.py_function(f, [x], tf.string))\n"
        "config = NPURunConfig(enable_data_pre_proc=False)\n"
    )
    assert hazards(before, unchanged=False) == []


def test_users_own_py_func_is_not_reported():
    before = (
        "import tensorflow as tf\n"
        "def py_func(f, args):\n"
        "    return f(*args)\n"
        "y = py_func(fn, [1])\n"
    )
    assert hazards(before) == []


# -- v1 control flow (seed 000 case 03) -------------------------------------------------------

CONTROL_FLOW = (
    "import tensorflow as tf\n"
    "r = tf.cond(p, f1, f2)\n"
    "i, x = tf.while_loop(c, b, [i0, x0],\n"
    "                     shape_invariants=[i0.get_shape(), tf.TensorShape([None, 4])])\n"
)


def test_v1_control_flow_once_per_file_and_dynamic_loops():
    assert hazards(CONTROL_FLOW) == [
        ("v1_control_flow", 2, 5, INFO),
        ("v1_loop_dynamic_shape", 3, 8, WARNING),
    ]
    info = finding(CONTROL_FLOW, "v1_control_flow")
    loop = finding(CONTROL_FLOW, "v1_loop_dynamic_shape")
    assert "(tf.cond, tf.while_loop; lines 2, 3)" in info.message
    assert "[i0.get_shape(), tf.TensorShape([None, 4])]" in loop.message
    for found in (info, loop):
        assert "ENABLE_FORCE_V2_CONTROL=1" in found.fix
        assert "tf.enable_control_flow_v2()" in found.fix
        assert "tf.enable_resource_variables()" in found.fix


def test_loop_with_static_invariants_is_only_noted():
    before = "import tensorflow as tf\nx = tf.while_loop(c, b, [x0], [tf.TensorShape([2, 4])])\n"
    assert hazards(before) == [("v1_control_flow", 2, 5, INFO)]


def test_positional_unknown_rank_invariant():
    before = "import tensorflow as tf\nx = tf.while_loop(c, b, [x0], [tf.TensorShape(None)])\n"
    assert ("v1_loop_dynamic_shape", 2, 5, WARNING) in hazards(before)


@pytest.mark.parametrize(
    "switch",
    ["tf.enable_control_flow_v2()\n", "tf.enable_v2_behavior()\n",
     "os.environ['ENABLE_FORCE_V2_CONTROL'] = '1'\n"],
)  # fmt: skip
def test_v2_control_flow_switched_on_in_the_file(switch):
    # enable_v2_behavior also turns eager execution on: that is its own finding, not this one.
    assert [h for h in hazards(CONTROL_FLOW + switch) if h[0] != "eager_execution"] == []


def test_users_own_while_loop_is_not_reported():
    before = "import tensorflow as tf\ndef while_loop(c, b, v):\n    return v\nwhile_loop(1, 2)\n"
    assert hazards(before) == []


# -- FusedBatchNormV3 under mixed compute (seed 003) -----------------------------------------

BATCH_NORM = (
    "import tensorflow as tf\n"
    "y = tf.layers.batch_normalization(x, training=True)\n"
    "z = tf.keras.layers.BatchNormalization(fused=False)(y)\n"
    "w = tf.nn.fused_batch_norm(z, scale, offset)\n"
)


def test_fused_batch_norm_under_mixed_compute():
    assert hazards(BATCH_NORM, MIX) == [
        ("fused_batch_norm_mix_compile", 2, 5, WARNING),
        ("fused_batch_norm_mix_compile", 4, 5, WARNING),
    ]
    layer, op = rule_findings(migrate_text(BATCH_NORM, MIX), "hazards")
    assert "FusedBatchNormV3" in layer.message
    assert "tf.compat.forward_compatibility_horizon(2019, 5, 1)" in layer.fix
    assert layer.fix.endswith("or pass fused=False")
    assert "fused=False" not in op.fix


def test_batch_norm_without_mixed_compute_is_fine():
    assert hazards(BATCH_NORM) == []


def test_mix_compile_keyword_written_in_the_file_counts():
    before = BATCH_NORM + "config = NPURunConfig(mix_compile_mode=True, iterations_per_loop=1)\n"
    found = hazards(before, unchanged=False)
    assert [h[:2] for h in found] == [
        ("fused_batch_norm_mix_compile", 2),
        ("fused_batch_norm_mix_compile", 4),
    ]


def test_forward_compatibility_horizon_already_used():
    before = BATCH_NORM.replace(
        "y = ", "with tf.compat.forward_compatibility_horizon(2019, 5, 1):\n    y = "
    )
    assert hazards(before, MIX) == []


# -- ReduceSum under mixed precision (seed 000 case 04) ---------------------------------------

REDUCE_SUM = "import tensorflow as tf\na = tf.reduce_sum(x)\nb = tf.math.reduce_sum(y, axis=1)\n"


@pytest.mark.parametrize("mode", ["allow_mix_precision", "allow_mix_precision_fp16"])
def test_reduce_sum_under_fp16_mixed_precision(mode):
    found = only(REDUCE_SUM, MigrateOptions(precision_mode=mode))
    assert (hazard_id(found.message), found.line, found.col, found.severity) == (
        "reduce_sum_fp16", 2, 5, INFO,
    )  # fmt: skip
    assert f"ReduceSum (lines 2, 3) under precision_mode={mode}" in found.message
    assert '{"black-list": {"to-add": ["ReduceSumD"]}}' in found.fix
    assert "modify_mixlist" in found.fix


@pytest.mark.parametrize("mode", [None, "force_fp32", "allow_mix_precision_bf16", "force_fp16"])
def test_reduce_sum_without_fp16_mixed_precision(mode):
    assert hazards(REDUCE_SUM, MigrateOptions(precision_mode=mode)) == []


def test_precision_mode_written_in_the_file_counts():
    before = REDUCE_SUM + (
        'custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")\n'
    )
    assert hazards(before) == [("reduce_sum_fp16", 2, 5, INFO)]


def test_mixlist_already_given():
    before = REDUCE_SUM + 'config = NPURunConfig(modify_mixlist="/home/ops_info.json")\n'
    options = MigrateOptions(precision_mode="allow_mix_precision")
    assert hazards(before, options, unchanged=False) == []


# -- batches without a static shape ---------------------------------------------------------


def test_batch_on_an_unproven_dataset():
    before = (
        "import tensorflow as tf\n"
        "AUTO = tf.data.experimental.AUTOTUNE\n"
        "def input_fn(ds):\n"
        "    return ds.padded_batch(32, padded_shapes=([None], []))\n"
    )
    found = only(before)
    assert (hazard_id(found.message), found.line, found.col, found.severity) == (
        "batch_unproven", 4, 12, INFO,
    )  # fmt: skip
    assert "receiver of .padded_batch()" in found.message
    assert "drop_remainder=True" in found.fix


@pytest.mark.parametrize(
    "call",
    [
        "ds.batch(32, drop_remainder=True)",
        "ds.batch(32, False)",
        "ds.batch(32, 64, 128)",  # not Dataset.batch's signature
        "ds.batch(size=32)",  # nor this
        "ds.batch(*sizes)",
        "ds.batch()",
    ],
)
def test_batch_calls_that_are_not_reported(call):
    before = f"import tensorflow as tf\nAUTO = tf.data.experimental.AUTOTUNE\nx = {call}\n"
    assert hazards(before) == []


def test_queue_batch_is_not_an_unproven_dataset_batch():
    before = (
        "import tensorflow as tf\n"
        "AUTO = tf.data.experimental.AUTOTUNE\n"
        "x = tf.train.batch([a], 8)\n"
    )
    assert hazards(before) == [("queue_input", 3, 5, INFO)]


def test_batch_in_a_file_without_tf_data_is_not_reported():
    before = "import tensorflow as tf\nclass B:\n    pass\nB().batch(3)\n"
    assert hazards(before) == []


def test_proven_dataset_batch_is_the_dataset_batch_rule_s():
    before = "import tensorflow as tf\nds = tf.data.TFRecordDataset(f).batch(32)\n"
    assert hazards(before, unchanged=False) == []


# -- queue-runner input ----------------------------------------------------------------------


def test_queue_runner_input():
    before = (
        "import tensorflow as tf\n"
        "q = tf.train.string_input_producer(files)\n"
        "x, y = tf.train.shuffle_batch([a, b], 32, 1000, 100, allow_smaller_final_batch=True)\n"
        "u = tf.train.batch([a], 32)\n"
    )
    assert hazards(before) == [
        ("queue_input", 2, 5, INFO),
        ("queue_partial_batch", 3, 8, WARNING),
    ]
    info = finding(before, "queue_input")
    assert "tf.train.string_input_producer, tf.train.shuffle_batch, tf.train.batch" in info.message
    assert "lines 2, 3, 4" in info.message


# -- tf.contrib ------------------------------------------------------------------------------


def test_contrib_apis_with_replacements():
    before = (
        "import tensorflow as tf\n"
        "from tensorflow.contrib import slim\n"
        "net = slim.conv2d(x, 64, [3, 3])\n"
        "net = slim.max_pool2d(net, [2, 2])\n"
        "init = tf.contrib.layers.xavier_initializer()\n"
        "y = tf.contrib.layers.layer_norm(net)\n"
        "z = tf.contrib.foo.bar(y)\n"
        "s = tf.contrib.summary.scalar('a', y)\n"
    )
    assert hazards(before) == [
        ("contrib_deprecated", 3, 7, WARNING),
        ("contrib_replaceable", 5, 8, INFO),
        ("contrib_deprecated", 6, 5, WARNING),
        ("contrib_deprecated", 7, 5, WARNING),
    ]  # tf.contrib.summary.scalar: supported, no better API known -> the API report suffices
    slim_, xavier, norm, foo = rule_findings(migrate_text(before), "hazards")
    assert slim_.message.startswith(
        "[contrib_deprecated] tf.contrib.slim.conv2d, tf.contrib.slim.max_pool2d (lines 3, 4): "
        "tf.contrib is deprecated in TF 1.15 and gone in TF 2 (Ascend support list: deprecated)"
    )
    assert "tf_slim" in slim_.fix
    assert "supported" in xavier.message and "tf.glorot_uniform_initializer()" in xavier.fix
    assert "tf.keras.layers.LayerNormalization" in norm.fix
    assert "not listed" in foo.message and "core TensorFlow equivalent" in foo.fix


def test_contrib_apis_another_rule_handles_are_left_to_it():
    before = (
        "import tensorflow as tf\n"
        "r = tf.contrib.cluster_resolver.TPUClusterResolver('x')\n"
        "est = tf.contrib.tpu.TPUEstimator(model_fn=f, use_tpu=False, config=c)\n"
        "q = tf.contrib.tpu.bfloat16_scope()\n"
    )
    found = hazards(before, unchanged=False)
    assert found == [("contrib_deprecated", 4, 5, WARNING)]
    assert "TPU-only" in finding(before, "contrib_deprecated").fix


def test_contrib_row_lookup():
    assert contrib_row("tf.contrib.slim.nets.resnet_v1.resnet_v1_50").api == "tf.contrib.slim"
    assert contrib_row("tf.contrib.rnn.LSTMCell").replacement == "use tf.nn.rnn_cell.LSTMCell"
    assert contrib_row("tf.contrib.tpu.python.tpu.tpu_estimator.TPUEstimator").handled_by
    assert contrib_row("tf.contrib.foo.bar") is None
    # The longer name is its own row, not l1_regularizer's.
    assert contrib_row("tf.contrib.layers.l1_l2_regularizer").replacement == (
        "use tf.keras.regularizers.l1_l2(l1=scale_l1, l2=scale_l2 / 2) (contrib's l2 part uses "
        "tf.nn.l2_loss, which halves the sum)"
    )


# -- GPU-only settings -------------------------------------------------------------------------


def test_gpu_settings_have_no_effect():
    before = (
        "import os\n"
        "import tensorflow as tf\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
        "config = tf.ConfigProto(gpu_options=gpu_opts)\n"
        "config.gpu_options.allow_growth = True\n"
        "config.gpu_options.visible_device_list = str(local_rank)\n"
        "if tf.test.gpu_device_name():\n"
        "    data_format = 'channels_first'\n"
    )
    assert hazards(before) == [
        ("gpu_env_no_effect", 3, 1, INFO),
        ("gpu_config_no_effect", 4, 37, INFO),
        ("gpu_config_no_effect", 5, 1, INFO),
        ("gpu_config_no_effect", 6, 1, INFO),
        ("gpu_query", 7, 4, INFO),
    ]
    env = finding(before, "gpu_env_no_effect")
    expected = "os.environ['CUDA_VISIBLE_DEVICES'] has no effect on Ascend"
    assert env.message == f"[gpu_env_no_effect] {expected}"
    assert "ASCEND_DEVICE_ID" in env.fix
    growth = next(f for f in rule_findings(migrate_text(before), "hazards") if f.line == 5)
    assert "ConfigProto.gpu_options.allow_growth" in growth.message


def test_gpu_device_apis_are_left_to_the_distribute_rule():
    before = (
        "import tensorflow as tf\n"
        "for g in tf.config.experimental.list_physical_devices('GPU'):\n"
        "    tf.config.experimental.set_memory_growth(g, True)\n"
        "config = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))\n"
        "if tf.test.is_gpu_available():\n"
        "    data_format = 'channels_first'\n"
    )
    migrated = migrate_text(before)
    assert rule_findings(migrated, "hazards") == []
    assert {f.line for f in rule_findings(migrated, "distribute")} >= {3, 4, 5}


def test_gpu_names_on_user_objects_are_not_reported():
    before = (
        "import tensorflow as tf\n"
        "env = {}\n"
        "env['CUDA_VISIBLE_DEVICES'] = '0'\n"
        "def set_memory_growth(d, on):\n"
        "    pass\n"
        "set_memory_growth(1, True)\n"
    )
    assert hazards(before) == []


def test_gpu_options_in_a_file_without_tensorflow():
    before = "class C:\n    pass\nc = C()\nc.gpu_options.allow_growth = True\n"
    assert hazards(before) == []


# -- the mixed-compute recommendation ---------------------------------------------------------


def test_one_recommendation_per_file_listing_every_host_operation():
    before = (
        "import tensorflow as tf\n"
        "table = tf.lookup.StaticHashTable(initializer, -1)\n"
        "y = tf.py_func(fn, [x], tf.float32)\n"
        "s = tf.strings.split(text)\n"
    )
    rec = finding(before, "mix_compile_recommended")
    assert (rec.line, rec.col, rec.severity) == (2, 9, WARNING)
    assert "(tf.lookup.StaticHashTable, tf.py_func, tf.strings.split; lines 2, 3, 4)" in rec.message
    assert rec.fix.startswith("migrate with --mix-compile")


def test_string_ops_alone_give_an_info():
    before = "import tensorflow as tf\ns = tf.string_split(text)\n"
    assert hazards(before) == [("mix_compile_recommended", 2, 5, INFO)]


def test_no_tensorflow_no_findings():
    before = "import numpy as np\ndef batch(x):\n    return x\ny = np.sum(batch([1]))\n"
    assert hazards(before) == []


# -- the rule and its table ------------------------------------------------------------------


def test_hazard_table_is_consistent():
    ids = [h.id for h in HAZARDS]
    assert len(ids) == len(set(ids))
    source = Path(rule.__file__).read_text(encoding="utf-8")
    for hazard in HAZARDS:
        assert re.fullmatch(r"[a-z0-9_]+", hazard.id)
        assert hazard.message and hazard.fix
        assert f'"{hazard.id}"' in source, f"{hazard.id} is never reported"


def test_example_script_with_lookup_table_and_py_func():
    text = (EXAMPLES / "input_pipeline_lookup_pyfunc.py").read_text(encoding="utf-8")
    lines = text.splitlines()

    def line_of(fragment):
        return next(i for i, line in enumerate(lines, 1) if fragment in line)

    py_func = line_of("tf.py_func(")
    found = {(h[0], h[1]) for h in hazards(text, unchanged=False)}
    # The script's session gets mix_compile_mode=True (seed 000 case 01's fix), so no
    # recommendation: the lookup is reported as the change it caused.
    assert found == {
        ("py_function_in_pipeline", py_func),
        ("mix_compile_enabled", line_of("table.lookup(")),
    }
    assert b'parameter_map["mix_compile_mode"].b = True' in migrate_text(text).output
    assert [(h[0], h[1]) for h in hazards(text, MIX, unchanged=False)] == [
        ("py_function_in_pipeline", py_func)
    ]


@pytest.mark.parametrize("options", [None, MIX], ids=["default", "mix_compile"])
def test_migrating_the_output_again_reports_the_same_hazards(options):
    text = (EXAMPLES / "input_pipeline_lookup_pyfunc.py").read_text(encoding="utf-8")
    first = migrate_text(text, options)
    again = migrate_text(first.output.decode("utf-8"), options)
    ids = [hazard_id(f.message) for f in rule_findings(first, "hazards")]
    # The second run reads the mix_compile_mode the first one wrote: nothing left to turn on.
    expected = [i for i in ids if i != "mix_compile_enabled"]
    assert expected == [hazard_id(f.message) for f in rule_findings(again, "hazards")]


# -- eager execution ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "api"),
    [
        ("tf.enable_eager_execution()", "tf.enable_eager_execution"),
        ("tf.compat.v1.enable_eager_execution()", "tf.enable_eager_execution"),
        ("tf.contrib.eager.enable_eager_execution()", "tf.contrib.eager.enable_eager_execution"),
        ("tf.enable_v2_behavior()", "tf.enable_v2_behavior"),
    ],
)
def test_eager_execution_is_an_error(call, api):
    found = finding(f"import tensorflow as tf\n{call}\n", "eager_execution")
    assert (found.line, found.col, found.severity) == (2, 1, Severity.ERROR)
    assert found.message.startswith(f"[eager_execution] {api}() switches the script to eager")
    assert "graph mode" in found.fix


def test_eager_execution_fails_the_migration_exit_code(tmp_path):
    from tf2npu.cli.main import main

    (tmp_path / "t.py").write_text("import tensorflow as tf\ntf.enable_eager_execution()\n")
    assert main(["migrate", str(tmp_path / "t.py"), "-o", str(tmp_path / "o.py")]) == 1


def test_executing_eagerly_query_is_not_reported():
    assert hazards("import tensorflow as tf\nif tf.executing_eagerly():\n    pass\n") == []


# -- contrib batch norm: the exact tf.layers call -------------------------------------------


def _batch_norm_fix(call):
    return finding(f"import tensorflow as tf\ny = {call}\n", "contrib_batch_norm").fix


def test_contrib_batch_norm_defaults_are_written_out():
    fix = _batch_norm_fix("tf.contrib.layers.batch_norm(x)")
    assert fix.startswith(
        "use tf.layers.batch_normalization(x, momentum=0.999, scale=False, training=True); "
        "the moving-average updates stay in tf.GraphKeys.UPDATE_OPS"
    )
    assert "pass name='BatchNorm' to restore old checkpoints" in fix


def test_contrib_batch_norm_arguments_are_mapped():
    fix = _batch_norm_fix(
        "tf.contrib.layers.batch_norm(x, 0.9, scale=True, is_training=is_training, "
        "updates_collections=None, scope='bn1', activation_fn=tf.nn.relu)"
    )
    assert fix == (
        "use tf.nn.relu(tf.layers.batch_normalization(x, momentum=0.9, scale=True, "
        "training=is_training, name='bn1')); updates_collections=None updated the moving mean "
        "and variance in place; tf.layers puts those updates in tf.GraphKeys.UPDATE_OPS, so "
        "build the train op under "
        "`with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):`"
    )


def test_contrib_batch_norm_nchw_initializers_and_unmapped():
    fix = _batch_norm_fix(
        "tf.contrib.slim.batch_norm(x, data_format='NCHW', param_initializers=inits, "
        "updates_collections='my_updates', zero_debias_moving_mean=True)"
    )
    assert "axis=1 if 'NCHW' == 'NCHW' else -1" in fix
    assert "beta_initializer=inits['beta'], gamma_initializer=inits['gamma']" in fix
    assert "not in 'my_updates'" in fix
    assert "zero_debias_moving_mean: no tf.layers equivalent" in fix


def test_contrib_batch_norm_is_one_finding_per_call_and_no_generic_contrib_finding():
    before = (
        "import tensorflow as tf\n"
        "a = tf.contrib.layers.batch_norm(x, decay=0.9)\n"
        "b = tf.contrib.layers.batch_norm(a, decay=0.99)\n"
    )
    assert hazards(before) == [
        ("contrib_batch_norm", 2, 5, WARNING),
        ("contrib_batch_norm", 3, 5, WARNING),
    ]


def test_contrib_batch_norm_with_star_arguments_is_left_to_the_api_report():
    assert hazards("import tensorflow as tf\ny = tf.contrib.layers.batch_norm(*args)\n") == []


# -- GPU memory settings get the memory fix, device settings the device fix -------------------


@pytest.mark.parametrize(
    ("line", "fix_start"),
    [
        ("config.gpu_options.allow_growth = True", "remove it: the NPU's memory is allocated"),
        ("config.gpu_options.per_process_gpu_memory_fraction = 0.5",
         "remove it: the NPU's memory is allocated"),
        ("config.gpu_options.visible_device_list = '0'",
         "remove it: on Ascend a process uses the one device named by ASCEND_DEVICE_ID"),
        ("os.environ['TF_FORCE_GPU_ALLOW_GROWTH'] = 'true'",
         "remove it: the NPU's memory is allocated by the graph engine"),
        ("os.environ['CUDA_VISIBLE_DEVICES'] = '0'",
         "remove it: on Ascend a process uses the one device named by ASCEND_DEVICE_ID"),
        ("config.gpu_options.force_gpu_compatible = True",
         "remove it once the script no longer needs to run on GPUs"),
    ],
)  # fmt: skip
def test_gpu_setting_fix_fits_the_setting(line, fix_start):
    found = only(f"import os\nimport tensorflow as tf\nconfig = tf.ConfigProto()\n{line}\n")
    assert found.fix.startswith(fix_start)

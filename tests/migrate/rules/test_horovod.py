"""horovod: Horovod -> the NPU collective API; the import goes only when nothing needs it."""

import ast
from pathlib import Path

import pytest

from tf2npu.migrate.model import Severity
from tf2npu.migrate.names import Resolver
from tf2npu.migrate.options import Distributed, MigrateOptions
from tf2npu.migrate.tables.renames import RENAMES, renames_for
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

NPU = "from npu_bridge.npu_init import *\n"
TF = "import tensorflow as tf\n"
HVD = "import horovod.tensorflow as hvd\n"
KERAS_HVD = "import horovod.keras as hvd\n"
EXAMPLE = Path(__file__).parents[3] / "examples" / "tf1" / "horovod_style.py"


def errors(migrated):
    return [f for f in rule_findings(migrated, "horovod") if f.severity is Severity.ERROR]


# -- the regular renames ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "new"),
    [
        ("hvd.rank()", "get_rank_id()"),
        ("hvd.local_rank()", "get_local_rank_id()"),
        ("hvd.size()", "get_rank_size()"),
        ("hvd.local_size()", "get_local_rank_size()"),
        ("hvd.rank", "get_rank_id"),  # a reference, not a call
    ],
)
def test_rank_queries_become_hccl_queries(call, new):
    assert_migrates(TF + HVD + f"x = {call}\n", NPU + TF + f"x = {new}\n")


def test_dataset_shard_gets_rank_size_and_id():
    before = TF + HVD + "ds = tf.data.TFRecordDataset(f)\nds = ds.shard(hvd.size(), hvd.rank())\n"
    after = (
        NPU
        + TF
        + ("ds = tf.data.TFRecordDataset(f)\nds = ds.shard(get_rank_size(), get_rank_id())\n")
    )
    assert_migrates(before, after)


def test_from_import_and_aliases():
    before = "from horovod.tensorflow import rank, size as world\nr = rank() + world()\n"
    assert_migrates(before, NPU + "r = get_rank_id() + get_rank_size()\n")


def test_plain_import_of_horovod_package():
    before = "import horovod.tensorflow\nhorovod.tensorflow.init()\nr = horovod.tensorflow.rank()\n"
    assert_migrates(before, NPU + "r = get_rank_id()\n")


def test_rename_table_rows():
    rows = renames_for("horovod")
    assert rows["hvd.rank"].new == "get_rank_id"
    assert rows["hvd.keras.local_size"].new == "get_local_rank_size"
    assert len({(r.old, r.rule) for r in RENAMES}) == len(RENAMES)
    assert renames_for("no_such_rule") == {}
    # Only names `from npu_bridge.npu_init import *` provides (hccl.manage.api re-exports).
    assert {r.new for r in rows.values()} <= {
        "get_rank_id", "get_local_rank_id", "get_rank_size", "get_local_rank_size",
    }  # fmt: skip


# -- init / shutdown ---------------------------------------------------------------------------
def test_init_statement_removed_with_info():
    migrated = assert_migrates(TF + HVD + "def main():\n    hvd.init()\n    train()\n",
                               TF + "def main():\n    train()\n")  # fmt: skip
    [info] = rule_findings(migrated, "horovod")
    assert info.severity is Severity.INFO and "init_resource()" in info.message
    assert info.line == 4


def test_init_alone_in_block_becomes_pass_and_shutdown_goes_too():
    assert_migrates(TF + HVD + "def main():\n    hvd.init()\n    hvd.shutdown()\n",
                    TF + "def main():\n    pass\n")  # fmt: skip


def test_init_that_is_not_a_plain_statement_is_an_error():
    before = HVD + "ok = hvd.init()\n"
    migrated = migrate_text(before)
    assert migrated.output == before.encode()
    [error] = errors(migrated)
    assert "not a plain" in error.message and error.line == 2


# -- DistributedOptimizer ----------------------------------------------------------------------
def test_optimizer_tf():
    before = TF + HVD + "opt = hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.1 * hvd.size()))\n"
    after = (
        NPU
        + TF
        + ("opt = NPUDistributedOptimizer(tf.train.AdamOptimizer(0.1 * get_rank_size()))\n")
    )
    assert_migrates(before, after)


def test_optimizer_positional_name_becomes_keyword():
    # NPUDistributedOptimizer's second parameter is is_weight_update_sharding, not name.
    assert_migrates(HVD + "opt = hvd.DistributedOptimizer(opt, 'dist')\n",
                    NPU + "opt = NPUDistributedOptimizer(opt, name='dist')\n")  # fmt: skip


def test_optimizer_tuning_arguments_removed_and_reported():
    before = HVD + (
        "opt = hvd.DistributedOptimizer(\n"
        "    opt,\n"
        "    compression=hvd.Compression.fp16,\n"
        "    sparse_as_dense=True,\n"
        "    op=hvd.Average,\n"
        ")\n"
    )
    migrated = assert_migrates(before, NPU + "opt = NPUDistributedOptimizer(\n    opt,\n)\n")
    [warning] = rule_findings(migrated, "horovod")
    assert warning.severity is Severity.WARNING
    assert "compression=, sparse_as_dense=, op=" in warning.message


def test_optimizer_single_tuning_argument_on_its_own_line():
    before = HVD + (
        "opt = hvd.DistributedOptimizer(\n    opt,\n    sparse_as_dense=True,  # big\n)\n"
    )
    # The framework keeps a comment whose argument went away (comments are never lost).
    assert_migrates(before, NPU + "opt = NPUDistributedOptimizer(\n    opt,\n    # big\n)\n")


def test_optimizer_leading_tuning_arguments():
    before = HVD + (
        "o = hvd.DistributedOptimizer(compression=c, sparse_as_dense=True, optimizer=opt)\n"
    )
    assert_migrates(before, NPU + "o = NPUDistributedOptimizer(optimizer=opt)\n")


@pytest.mark.parametrize(
    "args",
    ["opt, op=hvd.Sum", "opt, backward_passes_per_step=4", "opt, process_set=ps", "*a",
     "opt, **kw", "opt, None, False"],
)  # fmt: skip
def test_optimizer_with_semantic_options_is_not_rewritten(args):
    before = HVD + f"opt = hvd.DistributedOptimizer({args})\n"
    migrated = migrate_text(before)
    assert migrated.output == before.encode()
    [error] = errors(migrated)
    assert "not rewritten" in error.message and "NPUDistributedOptimizer" in error.fix


def test_optimizer_around_a_keras_optimizer_uses_the_keras_wrapper():
    before = TF + HVD + "opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.1))\n"
    after = NPU + TF + "opt = npu_distributed_optimizer_wrapper(tf.keras.optimizers.Adam(0.1))\n"
    assert_migrates(before, after)
    before = TF + HVD + "k = tf.keras.optimizers.SGD()\nopt = hvd.DistributedOptimizer(k)\n"
    after = NPU + TF + "k = tf.keras.optimizers.SGD()\nopt = npu_distributed_optimizer_wrapper(k)\n"
    assert_migrates(before, after)


@pytest.mark.parametrize(
    "imp", [KERAS_HVD, "import horovod.tensorflow.keras as hvd\n",
            "from horovod.tensorflow import keras as hvd\n"],
)  # fmt: skip
def test_keras_horovod(imp):
    before = imp + (
        "hvd.init()\n"
        "opt = hvd.DistributedOptimizer(opt, name='d')\n"
        "callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0, device='')]\n"
        "epochs = 10 // hvd.size()\n"
    )
    after = NPU + (
        "opt = npu_distributed_optimizer_wrapper(opt)\n"
        "callbacks = [NPUBroadcastGlobalVariablesCallback(0)]\n"
        "epochs = 10 // get_rank_size()\n"
    )
    assert_migrates(before, after)


def test_optimizer_adasum_choice_is_dropped_with_a_warning():
    before = HVD + (
        "opt = hvd.DistributedOptimizer(opt, op=hvd.Adasum if args.use_adasum else hvd.Average)\n"
    )
    migrated = assert_migrates(before, NPU + "opt = NPUDistributedOptimizer(opt)\n")
    [dropped, adasum] = rule_findings(migrated, "horovod")
    assert "op=" in dropped.message
    assert adasum.severity is Severity.WARNING and "averaged" in adasum.message
    assert "get_rank_size()" in adasum.fix


def test_optimizer_plain_adasum_is_dropped_too():
    migrated = assert_migrates(HVD + "opt = hvd.DistributedOptimizer(opt, op=hvd.Adasum)\n",
                               NPU + "opt = NPUDistributedOptimizer(opt)\n")  # fmt: skip
    assert any("Adasum" in f.message for f in rule_findings(migrated, "horovod"))


def test_compression_variable_goes_with_the_argument_it_fed():
    before = HVD + (
        "compression = hvd.Compression.fp16 if args.fp16 else hvd.Compression.none\n"
        "opt = hvd.DistributedOptimizer(opt, compression=compression)\n"
    )
    migrated = assert_migrates(before, NPU + "opt = NPUDistributedOptimizer(opt)\n")
    messages = [f.message for f in rule_findings(migrated, "horovod")]
    assert any(m.startswith("`compression`") for m in messages)
    assert any("HCCL sends gradients uncompressed" in m for m in messages)


def test_compression_variable_still_used_keeps_the_import():
    rest = (
        "c = hvd.Compression.fp16\nopt = hvd.DistributedOptimizer(opt, compression=c)\nprint(c)\n"
    )
    migrated = migrate_text(HVD + rest)
    assert "c = hvd.Compression.fp16\n" in migrated.output.decode()
    # `c` is an alias of the compression, so `print(c)` is a Horovod use as well.
    assert [(f.line, f.message.split(":")[0]) for f in errors(migrated)] == [
        (2, "hvd.Compression.fp16"), (4, "hvd.Compression.fp16"),
    ]  # fmt: skip


def test_compression_from_import_inline_is_dropped():
    before = (
        "from horovod.tensorflow.compression import Compression\n"
        + HVD
        + ("opt = hvd.DistributedOptimizer(opt, compression=Compression.fp16 if f else None)\n")
    )
    assert_migrates(before, NPU + "opt = NPUDistributedOptimizer(opt)\n")


@pytest.mark.parametrize("query", ["nccl_built", "mpi_enabled", "gloo_built", "cuda_built"])
def test_build_queries_are_false_on_the_npu(query):
    before = HVD + f"s = hvd.local_size() if hvd.{query}() else 1\n"
    migrated = assert_migrates(before, NPU + "s = get_local_rank_size() if False else 1\n")
    assert any("HCCL does the collectives" in f.message for f in rule_findings(migrated, "horovod"))


def test_build_query_with_arguments_is_left_and_reported():
    migrated = migrate_text(HVD + "b = hvd.nccl_built(1)\n")
    assert [f.message.split(":")[0] for f in errors(migrated)] == ["hvd.nccl_built"]


# -- broadcast -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "new"),
    [
        ("hvd.broadcast(t, 0)", "hccl_ops.broadcast([t], 0)[0]"),
        ("hvd.broadcast(t, root_rank=1, name='b')", "hccl_ops.broadcast([t], 1)[0]"),
        ("hvd.broadcast(tensor=t, root_rank=0)", "hccl_ops.broadcast([t], 0)[0]"),
    ],
)
def test_broadcast_of_a_tensor_is_an_hccl_broadcast(call, new):
    assert_migrates(HVD + f"x = {call}\n", NPU + f"x = {new}\n")


def test_keras_broadcast_of_a_value_runs_in_the_keras_session():
    before = "import keras\n" + TF + KERAS_HVD + "e = hvd.broadcast(e, 0, name='epoch')\n"
    after = (
        NPU
        + "import keras\n"
        + TF
        + ("e = keras.backend.get_value(hccl_ops.broadcast([tf.constant(e)], 0)[0])\n")
    )
    assert_migrates(before, after)


def test_tf_keras_broadcast_of_a_value_imports_tensorflow():
    before = "import horovod.tensorflow.keras as hvd\ne = hvd.broadcast(e, 0)\n"
    after = (
        NPU
        + "import tensorflow as tf\n"
        + ("e = tf.keras.backend.get_value(hccl_ops.broadcast([tf.constant(e)], 0)[0])\n")
    )
    assert_migrates(before, after)


def test_keras_value_collective_with_tf_bound_elsewhere_is_an_error():
    before = KERAS_HVD + "tf = 3\ne = hvd.broadcast(e, 0)\n"
    migrated = migrate_text(before)
    assert migrated.output == before.encode()
    [error] = errors(migrated)
    assert "`tf` is bound" in error.message


@pytest.mark.parametrize(
    ("call", "new"),
    [
        ("hvd.allreduce(score)", "npu_allreduce(tf.constant(score))"),
        (
            "hvd.allreduce(score, average=False)",
            'npu_allreduce(tf.constant(score), reduction="sum")',
        ),
    ],
)
def test_keras_allreduce_of_a_value(call, new):
    before = TF + KERAS_HVD + f"s = {call}\n"
    after = NPU + TF + f"s = tf.keras.backend.get_value({new})\n"
    assert_migrates(before, after)


def test_keras_allreduce_with_unknown_average_is_an_error():
    migrated = migrate_text(TF + KERAS_HVD + "s = hvd.allreduce(score, average=flag)\n")
    assert len(errors(migrated)) == 1


INDEX = "int(os.getenv('RANK_ID', '0'))"
HOOK_AFTER = f"h = NPUBroadcastGlobalVariablesHook(root_rank=0, index={INDEX})\n"


def test_broadcast_hook_adds_index_and_imports_os():
    before = TF + HVD + "hooks = [hvd.BroadcastGlobalVariablesHook(0)]\n"
    after = (
        NPU
        + "import os\n"
        + TF
        + (f"hooks = [NPUBroadcastGlobalVariablesHook(0, index={INDEX})]\n")
    )
    assert_migrates(before, after)


def test_broadcast_hook_keeps_an_existing_os_import_and_keyword_root():
    before = "import os\n" + HVD + "h = hvd.BroadcastGlobalVariablesHook(root_rank=0, device='')\n"
    after = NPU + "import os\n" + HOOK_AFTER
    assert_migrates(before, after)


def test_broadcast_hook_with_device_first():
    before = "import os\n" + HVD + "h = hvd.BroadcastGlobalVariablesHook(device='', root_rank=0)\n"
    after = NPU + "import os\n" + HOOK_AFTER
    assert_migrates(before, after)


def test_broadcast_global_variables_uses_the_adapter_function():
    before = "import os\n" + HVD + "bcast = hvd.broadcast_global_variables(0)\n"
    after = (
        NPU + "from npu_bridge.estimator.npu.npu_hook import broadcast_global_variables\n"
        "import os\n" + f"bcast = broadcast_global_variables(0, index={INDEX})\n"
    )
    assert_migrates(before, after)


def test_broadcast_global_variables_with_own_definition_is_an_error():
    before = HVD + (
        "def broadcast_global_variables(r):\n    pass\nb = hvd.broadcast_global_variables(0)\n"
    )
    migrated = migrate_text(before)
    assert migrated.output == before.encode()
    [error] = errors(migrated)
    assert "defines its own" in error.message


# -- allreduce -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "new"),
    [
        ("hvd.allreduce(g)", "npu_allreduce(g)"),
        ("hvd.allreduce(g, average=True, name='x')", "npu_allreduce(g)"),
        ("hvd.allreduce(g, average=False)", 'npu_allreduce(g, reduction="sum")'),
        ("hvd.allreduce(g, op=hvd.Sum)", 'npu_allreduce(g, reduction="sum")'),
        ("hvd.allreduce(tensor=g, op=hvd.Average)", "npu_allreduce(values=g)"),
    ],
)
def test_allreduce(call, new):
    assert_migrates(HVD + f"r = {call}\n", NPU + f"r = {new}\n")


@pytest.mark.parametrize(
    "call",
    [
        "hvd.allreduce(g, op=hvd.Adasum)",
        "hvd.allreduce(g, prescale_factor=2.0)",
        "hvd.allreduce(g, average=True, op=hvd.Sum)",
        "hvd.allreduce(g, True)",
    ],
)
def test_allreduce_other_reductions_are_errors(call):
    before = HVD + f"r = {call}\n"
    migrated = migrate_text(before)
    assert migrated.output == before.encode()
    assert len(errors(migrated)) == 1


# -- GPU pinning ---------------------------------------------------------------------------------
def test_visible_device_list_from_local_rank_removed():
    before = (
        TF
        + HVD
        + (
            "config = tf.ConfigProto()\n"
            "config.gpu_options.visible_device_list = str(hvd.local_rank())\n"
            "n = hvd.size()\n"
        )
    )
    after = NPU + TF + "config = tf.ConfigProto()\nn = get_rank_size()\n"
    migrated = assert_migrates(before, after)
    assert any("GPU pinning" in f.message for f in rule_findings(migrated, "horovod"))


def test_visible_device_list_not_from_horovod_stays():
    source = TF + "config = tf.ConfigProto()\nconfig.gpu_options.visible_device_list = '0'\n"
    assert not rule_findings(migrate_text(source), "horovod")


# -- what is left keeps the import -------------------------------------------------------------
def test_remaining_use_keeps_import_and_is_an_error():
    rest = "ids = hvd.allgather(ids)\nif hvd.join():\n    pass\n"
    before = TF + HVD + "r = hvd.rank()\n" + rest
    after = NPU + TF + HVD + "r = get_rank_id()\n" + rest
    migrated = assert_migrates(before, after)
    found = errors(migrated)
    assert [(f.line, f.message.split(":")[0]) for f in found] == [
        (4, "hvd.allgather"), (5, "hvd.join"),
    ]  # fmt: skip
    assert "hccl_ops.allgather" in found[0].fix
    assert all("import is kept" in f.message for f in found)
    assert migrate_text(before).result.findings  # exit code 1 comes from the ERROR level


def test_horovod_used_as_a_value_is_an_error():
    before = HVD + "if hvd is not None:\n    r = hvd.rank()\n"
    migrated = assert_migrates(before, NPU + HVD + "if hvd is not None:\n    r = get_rank_id()\n")
    [error] = errors(migrated)
    assert error.line == 2 and "availability" in error.fix


def test_non_hvd_attribute_of_the_horovod_package_keeps_the_import():
    before = "import horovod\nprint(horovod.__version__)\n"
    migrated = migrate_text(before)
    assert migrated.output == before.encode()
    [error] = errors(migrated)
    assert "horovod" in error.message


def test_mixed_import_statement_is_kept_and_reported():
    before = "import os, horovod.tensorflow as hvd\nr = hvd.rank()\n"
    after = NPU + "import os, horovod.tensorflow as hvd\nr = get_rank_id()\n"
    migrated = assert_migrates(before, after)
    [warning] = rule_findings(migrated, "horovod")
    assert warning.severity is Severity.WARNING and "by hand" in warning.fix


# -- imports in try / except ImportError ------------------------------------------------------
OPTIONAL = "try:\n    import horovod.tensorflow as hvd\n"


def test_optional_horovod_try_is_removed_with_its_fallback():
    fallback = "except ImportError:\n    sys.path.insert(0, here)\n    import _stub as hvd\n"
    before = TF + "import sys\n\n" + OPTIONAL + fallback + "\n\nr = hvd.rank()\n"
    after = NPU + TF + "import sys\n\n\nr = get_rank_id()\n"
    migrated = assert_migrates(before, after)
    [info] = [f for f in rule_findings(migrated, "horovod") if "try" in f.message]
    assert info.severity is Severity.INFO and "fallback" in info.message and info.line == 4


@pytest.mark.parametrize(
    "caught", ["ImportError", "ModuleNotFoundError", "(ImportError, ModuleNotFoundError)"]
)
def test_optional_horovod_try_catching_import_errors_only(caught):
    before = OPTIONAL + f"except {caught}:\n    import _stub as hvd\nx = 1\n"
    assert_migrates(before, "x = 1\n")


def test_optional_horovod_try_alone_in_a_block_becomes_pass():
    before = "if multi:\n    " + OPTIONAL.replace("\n    ", "\n        ")
    before += "    except ImportError as e:\n        print(e)\n"
    assert_migrates(before, "if multi:\n    pass\n")


def test_import_in_try_becomes_pass_when_the_fallback_name_is_used():
    fallback = "except ImportError:\n    import _stub as hvd\n    HAVE_HVD = False\n"
    before = TF + "HAVE_HVD = True\n" + OPTIONAL + fallback + "r = hvd.rank() if HAVE_HVD else 0\n"
    after = NPU + TF + "HAVE_HVD = True\ntry:\n    pass\n" + fallback
    after += "r = get_rank_id() if HAVE_HVD else 0\n"
    migrated = assert_migrates(before, after)
    [info] = [f for f in rule_findings(migrated, "horovod") if "kept" in f.message]
    assert "`HAVE_HVD`" in info.message and "by hand" in info.fix and info.line == 3


@pytest.mark.parametrize(
    "rest",
    [
        "except Exception:\n    pass\n",  # catches more than a missing module
        "except:\n    pass\n",
        "except ImportError:\n    import _stub as hvd\nelse:\n    print('horovod')\n",
        "except ImportError:\n    import _stub as hvd\nfinally:\n    done()\n",
    ],
)
def test_other_try_statements_keep_their_handlers(rest):
    before = OPTIONAL + rest + "r = hvd.rank()\n"
    after = NPU + "try:\n    pass\n" + rest + "r = get_rank_id()\n"
    migrated = assert_migrates(before, after)
    assert not [f for f in rule_findings(migrated, "horovod") if "try" in f.message]


def test_try_with_other_statements_keeps_its_handler():
    before = "try:\n    import horovod.tensorflow as hvd\n    import mpi4py\n"
    before += "except ImportError:\n    pass\nr = hvd.rank()\n"
    after = NPU + "try:\n    import mpi4py\nexcept ImportError:\n    pass\nr = get_rank_id()\n"
    assert_migrates(before, after)


def test_import_fallback_resolves_to_the_primary_import():
    tree = ast.parse(
        "try:\n    import horovod.tensorflow as hvd\nexcept ImportError:\n    import stub as hvd\n"
    )
    resolver = Resolver(tree)
    assert resolver.resolve_name("hvd", resolver.module) == "horovod.tensorflow"
    # Plain re-binding outside try/except keeps meaning the last import.
    tree = ast.parse("import stub as hvd\nimport horovod.tensorflow as hvd\nimport stub as hvd\n")
    resolver = Resolver(tree)
    assert resolver.resolve_name("hvd", resolver.module) == "stub"


@pytest.mark.parametrize("fallback", ["hvd = None", "hvd = Stand_in()", "class hvd:\n        pass"])
def test_name_also_bound_to_an_object_is_not_migrated(fallback):
    before = TF + (
        f"try:\n    import horovod.tensorflow as hvd\nexcept ImportError:\n    {fallback}\n"
        "r = hvd.rank()\nhvd.init()\n"
    )
    migrated = migrate_text(before)
    assert migrated.output == before.encode()
    [warning] = rule_findings(migrated, "horovod")
    assert warning.severity is Severity.WARNING and "cannot be proven" in warning.message
    assert warning.line == 3


def test_two_removals_in_one_try_body_leave_pass():
    before = "try:\n    import horovod.tensorflow as hvd\n    hvd.init()\n"
    before += "except ImportError:\n    pass\n"
    assert_migrates(before, "try:\n    pass\nexcept ImportError:\n    pass\n")


# -- what must stay untouched ------------------------------------------------------------------
@pytest.mark.parametrize(
    "source",
    [
        TF + "model.init()\nr = comm.rank()\nn = size()\nopt = trainer.DistributedOptimizer(opt)\n",
        "def f(hvd):\n    hvd.init()\n    return hvd.rank()\n",
        "import horovod_like as hvd\nhvd.init()\n",
        TF + "x = tf.size(t)\n",
    ],
)
def test_user_code_with_the_same_names_is_untouched(source):
    migrated = migrate_text(source)
    assert migrated.output == source.encode()
    assert not rule_findings(migrated, "horovod")


# -- options -------------------------------------------------------------------------------------
def test_distributed_none_reports_every_use():
    source = TF + HVD + "hvd.init()\nr = hvd.rank()\n"
    migrated = migrate_text(source, MigrateOptions(distributed=Distributed.NONE))
    assert migrated.output == source.encode()
    found = rule_findings(migrated, "horovod")
    assert [(f.line, f.severity) for f in found] == [(3, Severity.WARNING), (4, Severity.WARNING)]
    assert all("--distributed none" in f.message for f in found)


def test_distributed_tf_strategy_leaves_horovod():
    source = HVD + "r = hvd.rank()\n"
    migrated = migrate_text(source, MigrateOptions(distributed=Distributed.TF_STRATEGY))
    assert migrated.output == source.encode()
    [warning] = rule_findings(migrated, "horovod")
    assert "Horovod left as is" in warning.message


def test_distributed_horovod_same_as_auto():
    options = MigrateOptions(distributed=Distributed.HOROVOD)
    assert_migrates(HVD + "r = hvd.rank()\n", NPU + "r = get_rank_id()\n", options)


def test_unused_horovod_import_is_removed_without_npu_import():
    assert_migrates(TF + HVD + "x = 1\n", TF + "x = 1\n")


# -- the bundled example -----------------------------------------------------------------------
def test_example_script_is_fully_migrated():
    migrated = migrate_text(EXAMPLE.read_text(), path="horovod_style.py")
    text = migrated.output.decode()
    assert "hvd." not in text.replace("hvd.DistributedOptimizer, and", "")  # docstring only
    assert "import tensorflow as tf\n\n\ndef make_dataset" in text  # the try went whole
    assert "_hvd_standin" not in text and "ImportError" not in text
    assert "opt = NPUDistributedOptimizer(opt)" in text
    assert f"NPUBroadcastGlobalVariablesHook(0, index={INDEX})" in text
    assert "visible_device_list" not in text
    assert "(npu_sess, npu_shutdown) = init_resource()" in text
    assert not errors(migrated)


# -- Horovod passed around as a value (handles) ------------------------------------------------
BUILDER = (
    "def input_fn_builder(files, hvd=None):\n"
    "    d = tf.data.TFRecordDataset(files)\n"
    "    if hvd is not None: d = d.shard(hvd.size(), hvd.rank())\n"
    "    return d\n"
)


def test_module_passed_to_a_handle_parameter_becomes_true():
    before = TF + HVD + BUILDER + "d = input_fn_builder(f, hvd=None if not flag else hvd)\n"
    after = NPU + TF + BUILDER.replace("hvd.size(), hvd.rank()", "get_rank_size(), get_rank_id()")
    after += "d = input_fn_builder(f, hvd=None if not flag else True)\n"
    migrated = assert_migrates(before, after)
    [info] = [f for f in rule_findings(migrated, "horovod") if "became True" in f.message]
    assert info.severity is Severity.INFO and info.line == 7


def test_handle_parameter_named_hvd_in_a_file_importing_only_compression():
    before = "from horovod.tensorflow.compression import Compression\n" + (
        "def create_optimizer(opt, hvd=None, fp16=False):\n"
        "    if hvd is not None:\n"
        "        opt = hvd.DistributedOptimizer(opt, compression=Compression.fp16 if fp16 else "
        "Compression.none)\n"
        "    ok = hvd.allreduce(flag) if hvd else flag\n"
        "    return helper(opt, hvd)\n"
    )
    after = NPU + (
        "def create_optimizer(opt, hvd=None, fp16=False):\n"
        "    if hvd is not None:\n"
        "        opt = NPUDistributedOptimizer(opt)\n"
        "    ok = npu_allreduce(flag) if hvd else flag\n"
        "    return helper(opt, hvd)\n"
    )
    assert_migrates(before, after)


def test_module_passed_to_a_function_elsewhere_is_a_warning():
    before = HVD + "from lib import build\nm = build(hvd)\n"
    migrated = assert_migrates(before, "from lib import build\nm = build(True)\n")
    [warning] = rule_findings(migrated, "horovod")
    assert warning.severity is Severity.WARNING and "not in this file" in warning.message


@pytest.mark.parametrize(
    "use",
    ["keep = hvd", "hvd.x = 1", "return [hvd]"],
)
def test_parameter_used_otherwise_is_not_a_handle(use):
    before = HVD + f"def f(hvd):\n    r = hvd.rank()\n    {use}\n" + "f(hvd)\n"
    migrated = migrate_text(before)
    text = migrated.output.decode()
    assert "r = hvd.rank()" in text and "import horovod.tensorflow as hvd" in text
    assert errors(migrated)


def test_handle_rebound_in_the_function_is_not_a_handle():
    before = HVD + "def f(hvd=None):\n    hvd = hvd or other\n    return hvd.rank()\n"
    migrated = migrate_text(before)
    assert "return hvd.rank()" in migrated.output.decode()


# -- Horovod held by a project module's global ---------------------------------------------------
def test_global_holding_horovod_is_a_handle_in_its_own_file():
    before = (
        "holder = None\n\ndef init():\n    global holder\n"
        "    import horovod.tensorflow as hvd\n    hvd.init()\n    holder = hvd\n\n"
        "def size():\n    return holder.size() if holder is not None else 1\n"
    )
    after = NPU + (
        "holder = None\n\ndef init():\n    global holder\n    holder = True\n\n"
        "def size():\n    return get_rank_size() if holder is not None else 1\n"
    )
    migrated = assert_migrates(before, after)
    assert any("became True" in f.message and f.severity is Severity.INFO
               for f in rule_findings(migrated, "horovod"))  # fmt: skip


@pytest.mark.parametrize(
    "holder", ["utils.wrapper.holder=hvd", "project.src.utils.wrapper.holder=hvd"]
)
def test_uses_through_another_files_holder(holder):
    options = MigrateOptions(horovod_holders=(holder,))
    before = (
        "import os\nfrom utils import wrapper as w\n"
        "hooks = [w.holder.BroadcastGlobalVariablesHook(0)]\nn = w.size()\n"
    )
    after = NPU + (
        "import os\nfrom utils import wrapper as w\n"
        f"hooks = [NPUBroadcastGlobalVariablesHook(0, index={INDEX})]\nn = w.size()\n"
    )
    assert_migrates(before, after, options)


def test_holder_of_another_module_with_the_same_global_name_is_not_horovod():
    options = MigrateOptions(horovod_holders=("other.wrapper.holder=hvd",))
    source = "from utils import wrapper as w\nopt = w.holder.DistributedOptimizer(opt)\n"
    migrated = migrate_text(source, options)
    assert migrated.output == source.encode()


def test_holder_uses_left_unrewritten_are_errors():
    options = MigrateOptions(horovod_holders=("utils.wrapper.holder=hvd",))
    source = "from utils import wrapper as w\nids = w.holder.allgather(ids)\n"
    migrated = migrate_text(source, options)
    assert migrated.output == source.encode()
    [error] = errors(migrated)
    assert error.message.startswith("hvd.allgather")


def test_keep_horovod_import_option_keeps_it_and_says_so():
    options = MigrateOptions(keep_horovod_import=True)
    migrated = assert_migrates(TF + HVD + "r = hvd.rank()\n",
                               NPU + TF + HVD + "r = get_rank_id()\n", options)  # fmt: skip
    [info] = rule_findings(migrated, "horovod")
    assert info.severity is Severity.INFO and "--keep-horovod-import" in info.message

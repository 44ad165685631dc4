"""The bundled TF 1.15 examples migrate cleanly, with the rewrites each one exists to show."""

import ast
from pathlib import Path

import pytest

from tf2npu.migrate.model import FileStatus, Severity
from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.tree import make_plan, migrate_tree

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tf1"

EXPECTED = {
    "estimator_mnist_like.py": ["NPURunConfig(", "NPUEstimator(", "NPUEstimatorSpec(",
                                "drop_remainder=True"],
    "sessrun_dataset_saver.py": ["npu_ops.dropout(h, keep_prob=1 - dropout_rate)",
                                 "config=npu_config_proto(config_proto=config)"],
    "keras_tf1_session.py": ["npu_config_proto(config_proto=tf.ConfigProto())",
                             "from npu_bridge.estimator.npu import npu_convert_dropout"],
    "horovod_style.py": ["get_rank_size()", "NPUDistributedOptimizer(opt)",
                         "NPUBroadcastGlobalVariablesHook(0", "init_resource()",
                         "shutdown_resource(npu_sess, npu_shutdown)"],
    "input_pipeline_lookup_pyfunc.py": ["drop_remainder=True", "npu_config_proto(",
                                        'parameter_map["mix_compile_mode"].b = True'],
    "transformer_block_gelu.py": ["return npu_unary_ops.gelu(input_tensor)",
                                  "npu_ops.dropout(input_tensor, 1.0 - dropout_prob)"],
}  # fmt: skip


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    out = tmp_path_factory.mktemp("m") / "out"
    report = migrate_tree(make_plan(EXAMPLES, out), MigrateOptions())
    return out, report


def test_every_example_migrates_and_parses(migrated):
    out, report = migrated
    statuses = {f.path: f.status for f in report.files}
    for name in EXPECTED:
        assert statuses[name] is FileStatus.MIGRATED, name
        ast.parse((out / name).read_text())
    assert not report.failed
    assert not [f for f in report.findings if f.severity is Severity.ERROR]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_shows_its_rewrites(migrated, name):
    out, _ = migrated
    text = (out / name).read_text()
    for snippet in EXPECTED[name]:
        assert snippet in text, f"{name}: {snippet!r} missing"
    assert "horovod.tensorflow" not in text or name != "horovod_style.py"


def test_hazards_are_found_where_the_example_plants_them(migrated):
    _, report = migrated
    messages = [f.message for f in report.findings if f.path == "input_pipeline_lookup_pyfunc.py"]
    # The table gets seed 000 case 01's fix (mixed compute in the session config), reported.
    assert any("[mix_compile_enabled]" in m for m in messages)
    assert any("py_func" in m for m in messages)


def test_every_example_is_covered():
    assert sorted(p.name for p in EXAMPLES.glob("[!_]*.py")) == sorted(EXPECTED)

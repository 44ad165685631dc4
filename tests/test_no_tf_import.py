"""The migration core imports and runs without TensorFlow (DESIGN §2)."""

import subprocess
import sys

CODE = """
import sys
import tf2npu, tf2npu.migrate.engine, tf2npu.migrate.tree, tf2npu.cli.main, tf2npu.findings
import tf2npu.artifacts.dump, tf2npu.artifacts.gegraph
import tf2npu.debug.overflow.opdebug, tf2npu.debug.overflow.analysis, tf2npu.debug.overflow.fix
import tf2npu.debug.overflow.report, tf2npu.cli.overflow
import tf2npu.debug.compare.metrics, tf2npu.debug.compare.tolerance, tf2npu.debug.compare.matching
import tf2npu.debug.compare.trees, tf2npu.debug.compare.report, tf2npu.debug.compare.advisor
import tf2npu.debug.records, tf2npu.debug.trials, tf2npu.debug.verify.checks, tf2npu.cli.verify
import tf2npu.testing.dumptrees, tf2npu.config.overrides, tf2npu.config.fusion_switch
import tf2npu.debug.doctor.match, tf2npu.debug.doctor.script, tf2npu.cli.doctor, tf2npu.cli.findings_view
import tf2npu.artifacts.profile_raw, tf2npu.debug.profile.tables, tf2npu.debug.profile.advice
import tf2npu.debug.profile.report, tf2npu.debug.profile.page, tf2npu.cli.profile
import tf2npu.config.profiling
import tf2npu.config.faults
import tf2npu.config.cluster, tf2npu.runtime.distributed.launch
import tf2npu.debug.bisect.search, tf2npu.debug.bisect.fusion, tf2npu.debug.bisect.precision
import tf2npu.debug.bisect.metric, tf2npu.debug.bisect.report, tf2npu.debug.bisect.lab
import tf2npu.cli.bisect, tf2npu.testing.fake_lab
from tf2npu.testing.migration import migrate_text
out = migrate_text("import tensorflow as tf\\nsess = tf.Session()\\n").output
assert b"npu_config_proto" in out, out
bad = sorted(m for m in sys.modules if m == "tensorflow" or m.startswith("tensorflow."))
print(",".join(bad))
"""


def test_migration_never_imports_tensorflow():
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", f"TensorFlow modules imported: {done.stdout}"

"""doctor --script: the migration's hazards and the script patterns, read-only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tf2npu.debug.doctor.script import HAZARDS_SOURCE, check_script
from tf2npu.errors import UsageError
from tf2npu.findings import Severity

PIPELINE = """\
import tensorflow as tf
batch_size = tf.Variable(tf.placeholder(tf.int64, [], "batch_size"), trainable=False)
data = tf.data.Dataset.range(10).batch(batch_size, drop_remainder=True)
it = data.make_initializable_iterator()
zeros = tf.keras.backend.zeros((2, 2))  # seed text: tf.keras.backend.zeros in preprocessing
img = tf.cast(x, tf.uint8)
with tf.Session() as sess:
    sess.run([tf.global_variables_initializer(), it.initializer])
"""


def test_hazards_and_patterns_with_the_failure_they_lead_to(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(PIPELINE)
    before = script.read_bytes()
    found = check_script(script)
    assert [(f.id, f.severity, f.where.line) for f in found] == [
        ("variable_in_pipeline", Severity.WARNING, 3),
        ("keras_zeros_uninitialized", Severity.WARNING, 5),
        ("uint8_saturation", Severity.INFO, 6),
        ("init_with_iterator", Severity.WARNING, 8),
    ]
    hazard = found[0]
    assert hazard.source.startswith(HAZARDS_SOURCE)
    assert "doctor symptom variable_in_preprocessing (seed 000 case 02" in hazard.source
    assert not hazard.cause.startswith("[")
    assert "batch_size = 64" in hazard.fix
    assert found[1].cause.startswith("on the device: ")
    assert script.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_a_comment_is_not_code(tmp_path: Path) -> None:
    script = tmp_path / "a.py"
    script.write_text("import tensorflow as tf\n# K.zeros(3) was here\n")
    assert check_script(script) == []


def test_bad_scripts_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        check_script(tmp_path / "missing.py")
    with pytest.raises(UsageError, match="is a folder, not a regular file"):
        check_script(tmp_path)
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    with pytest.raises(UsageError, match=r"cannot be analysed: .*line 1"):
        check_script(broken)

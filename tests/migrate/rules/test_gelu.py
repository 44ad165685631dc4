"""gelu: GELU formulas and ops become npu_unary_ops.gelu."""

from tf2npu.migrate.model import Severity
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

H = "from npu_bridge.npu_init import *\n"
TF = "import tensorflow as tf\n"


def test_erf_form_is_replaced_with_a_warning():
    migrated = assert_migrates(
        TF + "def gelu(x):\n    return 0.5 * x * (1.0 + tf.math.erf(x / tf.sqrt(2.0)))\n",
        H + TF + "def gelu(x):\n    return npu_unary_ops.gelu(x)\n",
    )
    [warning] = rule_findings(migrated, "gelu")
    assert warning.severity is Severity.WARNING and "tanh approximation" in warning.message


def test_parameter_name_is_the_functions_own():
    assert_migrates(
        "import numpy as np\n" + TF + "def gelu_new(features, approximate=True):\n"
        "    # tanh form\n"
        "    c = np.sqrt(2.0 / np.pi)\n"
        "    return 0.5 * features * (1.0 + tf.tanh(c * (features + 0.044715 * features ** 3)))\n",
        H + "import numpy as np\n" + TF + "def gelu_new(features, approximate=True):\n"
        "    # tanh form\n"
        "    return npu_unary_ops.gelu(features)\n",
    )


def test_one_line_body():
    assert_migrates(
        TF + "def gelu(x): return 0.5 * x * (1 + tf.erf(x / 1.4142135))\n",
        H + TF + "def gelu(x): return npu_unary_ops.gelu(x)\n",
    )


def test_unrecognised_body_is_reported_not_replaced():
    source = TF + "def gelu(x):\n    return x * tf.sigmoid(1.702 * x)\n"
    migrated = migrate_text(source)
    assert migrated.output == source.encode()
    [info] = rule_findings(migrated, "gelu")
    assert "does not compute a GELU formula" in info.message


def test_tf_nn_gelu():
    assert_migrates(TF + "y = tf.nn.gelu(x, approximate=True)\n",
                    H + TF + "y = npu_unary_ops.gelu(x)\n")  # fmt: skip
    migrated = assert_migrates(TF + "y = tf.nn.gelu(x)\n", H + TF + "y = npu_unary_ops.gelu(x)\n")
    assert rule_findings(migrated, "gelu")[0].severity is Severity.WARNING


def test_keras_activation_string():
    assert_migrates(
        "from tensorflow.keras.layers import Dense\nd = Dense(4, activation='gelu')\n",
        H
        + "from tensorflow.keras.layers import Dense\nd = Dense(4, activation=npu_unary_ops.gelu)\n",
    )


def test_other_activations_and_functions_untouched():
    source = TF + "d = tf.keras.layers.Dense(4, activation='relu')\ndef relu(x):\n    return x\n"
    assert migrate_text(source).output == source.encode()

"""model_to_npu_estimator: a compiled Keras model as an NPUEstimator."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from npu_bridge.estimator.npu import npu_estimator  # noqa: E402
from npu_bridge.estimator.npu.keras_to_npu import model_to_npu_estimator  # noqa: E402
from npu_bridge.estimator.npu.npu_config import NPURunConfig  # noqa: E402
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator  # noqa: E402

pytestmark = [pytest.mark.tf, pytest.mark.filterwarnings("ignore::UserWarning")]

KERNEL = np.array([[0.5], [-1.0]], np.float32)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TF_CONFIG", "RANK_SIZE", "RESTORE_FROM", "LOCAL_CHECKPOINT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JOB_ID", "1")
    monkeypatch.setattr(npu_estimator, "_warned_job_id", False)


def keras_model(compiled=True, learning_rate=0.0):
    inputs = tf.keras.Input((2,), name="x")
    outputs = tf.keras.layers.Dense(1, name="dense")(inputs)
    model = tf.keras.Model(inputs, outputs)
    model.layers[1].set_weights([KERNEL, np.array([0.25], np.float32)])
    if compiled:
        model.compile(tf.keras.optimizers.legacy.SGD(learning_rate), "mse")
    return model


def input_fn():
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    labels = x.sum(1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, labels)).repeat().batch(4)


def test_requires_an_npu_run_config(tmp_path) -> None:
    with pytest.raises(ValueError, match="config must be an NPURunConfig"):
        model_to_npu_estimator(keras_model(), config=tf.compat.v1.estimator.RunConfig())


def test_requires_exactly_one_model(tmp_path) -> None:
    config = NPURunConfig(model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="exactly one of keras_model"):
        model_to_npu_estimator(config=config)
    with pytest.raises(ValueError, match="exactly one of keras_model"):
        model_to_npu_estimator(keras_model(), keras_model_path="m.h5", config=config)


def test_uncompiled_model_and_bad_format(tmp_path) -> None:
    config = NPURunConfig(model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="is not compiled"):
        model_to_npu_estimator(keras_model(compiled=False), config=config)
    with pytest.raises(ValueError, match=r"checkpoint_format='ckpt'.*use 'saver' or 'checkpoint'"):
        model_to_npu_estimator(keras_model(), config=config, checkpoint_format="ckpt")


def test_keras_weights_carry_into_the_npu_estimator(tmp_path) -> None:
    config = NPURunConfig(model_dir=str(tmp_path / "m"), precision_mode="force_fp32")
    est = model_to_npu_estimator(keras_model(), config=config)
    assert isinstance(est, NPUEstimator)
    rewrite = est.config.session_config.graph_options.rewrite_options
    assert [opt.name for opt in rewrite.custom_optimizers] == ["NpuOptimizer"]
    est.train(input_fn, steps=2)  # learning rate 0: weights stay the Keras ones
    np.testing.assert_allclose(est.get_variable_value("dense/kernel"), KERNEL)
    prediction = next(iter(est.predict(input_fn)))
    np.testing.assert_allclose(prediction["dense"], [0 * 0.5 + 1 * -1.0 + 0.25])

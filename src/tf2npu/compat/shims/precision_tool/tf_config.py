"""precision_tool's TensorFlow integration, as scripts use it: ``import precision_tool.tf_config``.

The same public names as the real ``tf_config.py``, each setting what the real one sets::

    import precision_tool.tf_config as npu_tf_config
    config = npu_tf_config.session_dump_config(config, action="fusion_off|dump")
    npu_config = NPURunConfig(fusion_switch_file=npu_tf_config.FUSION_OFF_FILE)

Importing it seeds Python, NumPy and TensorFlow with 2022 (``seed_everything``), as the real
module does. Every entry point creates the ``precision_data/`` directories in the working
directory and sets the graph-dump environment variables. The ``action`` string is read as the
real tool reads it (:mod:`._actions`); what tf2npu adds is only notes on stderr where the real
tool would silently do nothing (a misspelt action, ``fusion_off`` passed to
``estimator_dump_config``, a switch file that switches nothing).
"""

from __future__ import annotations

import os
import random
import sys
from typing import Any

import numpy as np
import tensorflow as tf

from tf2npu.compat.shims.precision_tool import _actions
from tf2npu.compat.shims.precision_tool import _config as cfg
from tf2npu.errors import UsageError

__all__ = [
    "DEFAULT_OP_DEBUG_DIR",
    "FUSION_OFF_FILE",
    "FUSION_SWITCH_FILE",
    "NpuPrintLossScaleCallBack",
    "estimator_dump",
    "estimator_dump_config",
    "npu_device_dump_config",
    "seed_everything",
    "sess_dump",
    "session_dump_config",
    "update_custom_op",
]

FUSION_OFF_FILE = cfg.FUSION_OFF_FILE
FUSION_SWITCH_FILE = cfg.FUSION_SWITCH_FILE
DEFAULT_OP_DEBUG_DIR = cfg.DEFAULT_OP_DEBUG_DIR

_NPU_OPTIMIZER = "NpuOptimizer"


def seed_everything(seed: int = cfg.DUMP_SEED) -> None:
    """Seed ``PYTHONHASHSEED``, :mod:`random`, TensorFlow and NumPy with ``seed``.

    TensorFlow's seed is the graph-level seed of the current default graph (TF 1.15
    semantics), as ``tf.set_random_seed`` sets it.
    """
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    tf.compat.v1.set_random_seed(seed)
    print(f"[PrecisionTool] Set Tensorflow random seed to {seed} success.")
    np.random.seed(seed)
    print(f"[PrecisionTool] Set numpy random seed to {seed} success.")


seed_everything()


def sess_dump(sess: Any) -> Any:
    """``sess`` wrapped in tfdbg's ``DumpingDebugWrapperSession``, writing to tf/tf_debug.

    For the golden (CPU) run: use it under ``tf2npu run --no-npu``. Each ``sess.run`` writes one
    ``precision_data/tf/tf_debug/run_*`` directory holding every tensor the run computed.
    """
    cfg.init_precision_data()
    from tensorflow.python import debug as tf_debug

    return tf_debug.DumpingDebugWrapperSession(sess, cfg.TF_DEBUG_DUMP_DIR)


def estimator_dump() -> Any:
    """tfdbg's ``DumpingDebugHook`` writing to precision_data/tf/tf_debug (``training_hooks``)."""
    cfg.init_precision_data()
    from tensorflow.python import debug as tf_debug

    return tf_debug.DumpingDebugHook(cfg.TF_DEBUG_DUMP_DIR)


def estimator_dump_config(action: str | None = None) -> Any:
    """A ``DumpConfig`` for ``NPURunConfig(dump_config=...)``: overflow, dump, or the defaults.

    Only the ``overflow`` and ``dump`` actions apply here, as in the real tool; fusion switches
    and profiling go to ``NPURunConfig`` directly.
    """
    from npu_bridge.estimator.npu.npu_config import DumpConfig

    cfg.init_precision_data()
    parsed = _parse(action)
    _note(_actions.estimator_notes(parsed))
    arguments: dict[str, Any] = _actions.dump_config_args(parsed)
    return DumpConfig(**arguments)


def session_dump_config(session_config: Any = None, action: str | None = None) -> Any:
    """``session_config`` (a new ``ConfigProto`` when ``None``) set up for ``action``.

    The ``NpuOptimizer`` entry is reused if the config has one, added otherwise; it gets
    ``use_off_line=True`` and :func:`update_custom_op`'s settings, and grappler's remapping is
    turned off. The same object is returned.

    Raises:
        UsageError: ``session_config`` is neither ``None`` nor a ``ConfigProto``.
    """
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2

    if session_config is None:
        session_config = config_pb2.ConfigProto()
    elif not isinstance(session_config, config_pb2.ConfigProto):
        raise UsageError(
            f"session_dump_config(session_config=...): expected a tf.ConfigProto or None, got "
            f"{type(session_config).__name__} {_short(session_config)}; pass the session's "
            "ConfigProto (for a RunConfig, its session_config)"
        )
    rewrite = session_config.graph_options.rewrite_options
    custom_op = None
    for entry in rewrite.custom_optimizers:
        if entry.name == _NPU_OPTIMIZER:
            custom_op = entry
    if custom_op is None:
        custom_op = rewrite.custom_optimizers.add()
        custom_op.name = _NPU_OPTIMIZER
    custom_op.parameter_map["use_off_line"].b = True
    update_custom_op(custom_op, action)
    rewrite.remapping = rewriter_config_pb2.RewriterConfig.OFF
    return session_config


def update_custom_op(custom_op: Any, action: str | None = None) -> Any:
    """Write ``action``'s ``parameter_map`` settings into the ``NpuOptimizer`` entry; return it.

    Always ``debug_dir``; ``overflow`` or else ``dump`` their collection keys; ``fusion_off`` or
    else ``fusion_switch`` the ``fusion_switch_file``; ``prof`` the profiling keys.

    Raises:
        UsageError: ``custom_op`` is not a custom-optimizer entry.
    """
    if not hasattr(custom_op, "parameter_map"):
        raise UsageError(
            "update_custom_op(custom_op, ...): expected the NpuOptimizer entry of "
            "config.graph_options.rewrite_options.custom_optimizers, got a "
            f"{type(custom_op).__name__}; for a whole ConfigProto use "
            "session_dump_config(config, action=...)"
        )
    cfg.init_precision_data()
    parsed = _parse(action)
    for key, value in _actions.custom_op_settings(parsed).items():
        _set_attr(custom_op.parameter_map[key], value)
    switch_file = _actions.fusion_switch_file(parsed)
    if switch_file is not None:
        print(f"[PrecisionTool] Set fusion switch file: {switch_file}")
        note = _actions.switch_file_note(switch_file)
        _note(() if note is None else (note,))
    return custom_op


def npu_device_dump_config(npu_device: Any, action: str | None = None) -> Any:
    """TF 2.x ``npu_device`` scripts only; not available under ``tf2npu run``.

    Raises:
        UsageError: always, naming the TF 1.15 functions to use instead.
    """
    raise UsageError(
        "npu_tf_config.npu_device_dump_config is for TF 2.x scripts on the npu_device package, "
        "which tf2npu run does not provide (it runs TF 1.15-style scripts); use "
        "session_dump_config(config, action=...) for tf.Session and Keras, or "
        "estimator_dump_config(action=...) for NPURunConfig"
    )


class NpuPrintLossScaleCallBack(tf.keras.callbacks.Callback):  # type: ignore[misc]
    """Keras callback printing the loss scale and overflow status before each training batch.

    It reads ``optimizer.loss_scale`` and ``optimizer.last_step_finite`` (TF 2.x
    ``npu_device``'s ``NpuLossScaleOptimizer`` has both), as variables, tensors or numbers.

    Raises:
        UsageError: the optimizer lacks one of the two attributes.
    """

    def __init__(self, optimizer: Any, loss: Any = None) -> None:
        super().__init__()
        missing = [a for a in ("loss_scale", "last_step_finite") if not hasattr(optimizer, a)]
        if missing:
            raise UsageError(
                f"NpuPrintLossScaleCallBack({type(optimizer).__name__}): the optimizer has no "
                f"{' and no '.join(missing)}; it prints npu_device's NpuLossScaleOptimizer state "
                "(TF 2.x). Under tf2npu run, NPULossScaleOptimizer's scale and skipped steps are "
                "in run_summary.json under loss_scale"
            )
        self.optimizer = optimizer
        self.loss = loss

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        scale = tf.keras.backend.get_value(self.optimizer.loss_scale)
        finite = tf.keras.backend.get_value(self.optimizer.last_step_finite)
        print(
            f"PrecisionTool: Train steps {batch}, loss_scale={scale:.3f} / "
            f"not_overflow_status={finite}",
            flush=True,
        )


def _parse(action: object) -> _actions.Action:
    parsed = _actions.Action.parse(action, os.environ)
    for message in parsed.messages:
        print(message)
    _note(parsed.notes)
    return parsed


def _note(lines: tuple[str, ...]) -> None:
    for line in lines:
        print(line, file=sys.stderr)


def _set_attr(attr: Any, value: _actions.Value) -> None:
    """Set an ``AttrValue``'s ``.b``, ``.i`` or ``.s`` field from a Python value."""
    if isinstance(value, bool):
        attr.b = value
    elif isinstance(value, int):
        attr.i = value
    else:
        attr.s = value.encode()


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

"""Importing this module makes Keras ``Dropout`` layers use the NPU dropout (``npu_ops``).

The latest adapter ships this module for converted Keras scripts: its import replaces
``tf.keras.layers.Dropout.call`` so every Dropout layer built afterwards (and before, since the
method is replaced on the class) draws its mask with ``DropOutGenMask``/``DropOutDoMask``. The
migration tool adds ``from npu_bridge.estimator.npu import npu_convert_dropout`` to scripts that
use Keras dropout. As in the adapter, the import has this global side effect and nothing else;
:func:`restore` undoes it (tests).

In training the layer computes ``npu_ops.dropout(inputs, keep_prob=1 - rate, noise_shape,
seed)``; in inference it returns ``tf.identity(inputs)``; ``rate == 0`` returns the identity
without drawing a mask, as Keras does.
"""

from __future__ import annotations

import numbers
from typing import Any

from keras.src import backend
from keras.src.layers.regularization.dropout import Dropout
from keras.src.utils import control_flow_util
from tensorflow.python.ops import array_ops

from npu_bridge.estimator import npu_ops

__all__ = ["npu_dropout_call", "restore"]

_KERAS_CALL = Dropout.__dict__["call"]


def npu_dropout_call(self: Any, inputs: Any, training: Any = None) -> Any:
    """``Dropout.call`` with the NPU dropout (keep-probability convention)."""
    if isinstance(self.rate, numbers.Real) and self.rate == 0:
        return array_ops.identity(inputs)
    if training is None:
        training = backend.learning_phase()

    def dropped() -> Any:
        return npu_ops.dropout(
            inputs,
            keep_prob=1.0 - self.rate,
            noise_shape=self._get_noise_shape(inputs),
            seed=self.seed,
        )

    return control_flow_util.smart_cond(training, dropped, lambda: array_ops.identity(inputs))


def restore() -> None:
    """Give ``Dropout`` back its Keras ``call``."""
    Dropout.call = _KERAS_CALL


Dropout.call = npu_dropout_call

"""The table of TF 1.15-era paths that TF 2.15 moved or dropped, and where each went.

Three kinds of entry, all data:

* :data:`MODULES`: a module path TF 2.15 no longer has → the module that holds the same
  objects now (its names are looked up there, lazily).
* :data:`NAMES`: a module TF 2.15 still has, but without some names TF 1.15 exported →
  ``"module:attr"`` of the same object in TF 2.15 (the implementation TF 1.15 used when v2
  behaviour is disabled), or ``None`` when TF 2.15 has none: the import then fails with advice.
* :data:`ATTRIBUTES`: a private attribute a class had in TF 1.15 and that TF 2.15 renamed →
  the new attribute name (read-only alias; an instance value of the old name still wins).
"""

from __future__ import annotations

from dataclasses import dataclass

_KERAS_215 = "keras 2.15's keras.layers (what `from keras.layers import ...` gives)"


@dataclass(frozen=True)
class MovedModule:
    """``path`` is gone in TF 2.15; its names now live in module ``target``."""

    path: str
    target: str
    note: str


#: Standalone Keras 2.2 (the ``keras`` package TF 1.15 scripts used) split ``keras.layers``
#: into these modules; keras 2.15 has them all in ``keras.layers``, the same classes.
_KERAS_LAYER_MODULES = (
    "advanced_activations", "convolutional", "convolutional_recurrent", "core",
    "cudnn_recurrent", "embeddings", "local", "merge", "noise", "normalization", "pooling",
    "recurrent", "wrappers",
)

MODULES: tuple[MovedModule, ...] = (
    *(
        MovedModule(f"keras.layers.{name}", "keras.layers", _KERAS_215)
        for name in _KERAS_LAYER_MODULES
    ),
    MovedModule(
        "tensorflow.python.data.experimental.ops.threadpool",
        "tf2npu.compat.moved.threadpool",
        "tf2npu's re-implementation over TF 2.15's ThreadPoolHandle/ThreadPoolDataset ops",
    ),
)

_LEGACY_LAYERS = "tensorflow.python.keras.layers"
_RECURRENT = "tensorflow.python.keras.layers.recurrent"

#: Names TF 1.15's ``tensorflow.python.keras.layers`` exported that TF 2.15's copy does not.
#: With v2 behaviour disabled TF 1.15 exported the v1 recurrent layers, which TF 2.15 still
#: ships in ``recurrent``; the other modules (normalization, wrappers, noise, local) are gone.
NAMES: dict[str, dict[str, str | None]] = {
    _LEGACY_LAYERS: {
        **{n: f"{_RECURRENT}:{n}" for n in ("GRU", "GRUCell", "LSTM", "LSTMCell")},
        **dict.fromkeys(
            (
                "BatchNormalization", "LayerNormalization", "Bidirectional", "TimeDistributed",
                "Wrapper", "GaussianNoise", "GaussianDropout", "AlphaDropout",
                "LocallyConnected1D", "LocallyConnected2D", "CuDNNGRU", "CuDNNLSTM",
                "DenseFeatures",
            )
        ),
    },
}


@dataclass(frozen=True)
class RenamedAttribute:
    """``owner`` (``"module:Class"``) had ``old``; TF 2.15 calls the same thing ``new``.

    ``new`` is an attribute name, or ``"module:function"`` computing the value from the object.
    """

    owner: str
    old: str
    new: str


#: ``Layer._layers`` (the tracked sub-layers; a functional model's layers, InputLayer first)
#: became ``_self_tracked_trackables`` in TF 2.5; scripts that walk or edit it still work.
ATTRIBUTES: tuple[RenamedAttribute, ...] = (
    RenamedAttribute("keras.src.engine.base_layer:Layer", "_layers", "_self_tracked_trackables"),
    RenamedAttribute(
        "keras.src.engine.base_layer_v1:Layer", "_layers", "_self_tracked_trackables"
    ),
    # Standalone Keras 2.2 set ``tensor._keras_shape`` on every layer output: its static
    # shape as a tuple (None for unknown dims), what keras 2.15's backend.int_shape returns.
    RenamedAttribute(
        "tensorflow.python.framework.tensor:Tensor", "_keras_shape", "keras.backend:int_shape"
    ),
)


def moved_module(path: str) -> MovedModule | None:
    """The entry for module ``path``, if TF 2.15 moved it."""
    return next((entry for entry in MODULES if entry.path == path), None)


def advice_for_name(module: str, name: str) -> str:
    """Why ``from <module> import <name>`` fails under tf2npu run, and what to write instead."""
    return (
        f"{module}.{name} is not in TF 2.15 (TF 1.15 had it; TF 2.15's private "
        f"tensorflow.python.keras is a frozen subset whose layers do not mix with tf.keras "
        f"models): use tf.keras.layers.{name} and take the script's other Keras classes "
        f"from tf.keras too (see docs/tf1-compat.md)"
    )

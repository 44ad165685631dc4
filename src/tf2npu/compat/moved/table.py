"""The table of TF 1.15-era paths that TF 2.15 moved or dropped, and where each went.

Three kinds of entry, all data:

* :data:`MODULES`: a module path TF 2.15 no longer has → the module that holds the same
  objects now (its names are looked up there, lazily).
* :data:`PACKAGES`: a package TF 2.15 still has, but as a different object than TF 1.15's →
  the API module that is TF 1.15's object; the package and its public submodules are served
  from it.
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
    "advanced_activations",
    "convolutional",
    "convolutional_recurrent",
    "core",
    "cudnn_recurrent",
    "embeddings",
    "local",
    "merge",
    "noise",
    "normalization",
    "pooling",
    "recurrent",
    "wrappers",
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
    MovedModule(
        "tensorflow.contrib.graph_editor",
        "tf2npu.compat.moved.graph_editor",
        "importable (GPT-2 fine-tuning imports it for an optional feature); TF 2.15 has no "
        "graph editor, so every name raises with advice",
    ),
    MovedModule(
        "tensorflow.contrib.image.python.ops.distort_image_ops",
        "tf2npu.compat.moved.distort_image_ops",
        "importable; its HSV-in-YIQ ops have no TF 2.15 kernel and raise with advice when called",
    ),
)


@dataclass(frozen=True)
class AliasedPackage:
    """``path`` and its public submodules are, for scripts, the API module ``target``."""

    path: str
    target: str
    note: str


#: In TF 1.15 ``tensorflow.python.keras`` *was* ``tf.keras``: ``from tensorflow.python.keras.
#: layers import Dense`` gave ``tf.keras.layers.Dense``, and scripts (DeepCTR) mix both forms
#: in one model. TF 2.15 keeps a frozen, separate copy there whose layers cannot join a
#: tf.keras model, so the package and its public submodules (``layers``, ``backend``,
#: ``initializers``, ``models``...) resolve to ``tf.keras`` (keras 2.15, v1 API) again. Private
#: deeper paths (``tensorflow.python.keras.engine.base_layer``) stay TF 2.15's copy.
#:
#: The standalone ``keras`` package TF 1.15 scripts imported was Keras 2.2/2.3 on the TF 1
#: backend: graph-mode optimizers with ``get_updates``, ``keras.backend.get_session``. Under
#: TF 2.15 ``import keras`` gives keras 2.15's v2 API, whose optimizers cannot run in a graph
#: ("numpy() is only available when eager execution is enabled" in ``compile``), so ``keras``
#: and its public submodules resolve to the v1 API too (the same layer classes).
PACKAGES: tuple[AliasedPackage, ...] = (
    AliasedPackage(
        "tensorflow.python.keras",
        "tf.compat.v1.keras",
        "tf.keras (keras 2.15, v1 API), as in TF 1.15 where both were one package",
    ),
    AliasedPackage(
        "keras",
        "tf.compat.v1.keras",
        "keras 2.15's v1 API, the graph-mode Keras that standalone Keras 2.2 on TF 1.15 was",
    ),
)


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
    RenamedAttribute("keras.src.engine.base_layer_v1:Layer", "_layers", "_self_tracked_trackables"),
    # Standalone Keras 2.2 set ``tensor._keras_shape`` on every layer output: its static
    # shape as a tuple (None for unknown dims), what keras 2.15's backend.int_shape returns.
    RenamedAttribute(
        "tensorflow.python.framework.tensor:Tensor", "_keras_shape", "keras.backend:int_shape"
    ),
)


#: TF 2.15's own frozen Keras copy builds TF 1's layer classes (the ones taking ``_scope`` and
#: ``_reuse``: ``tf.layers``, tf-slim's conv2d/fully_connected/pooling) as ``class
#: Conv2D(keras_layers.Conv2D, base.Layer)`` after ``from tensorflow.python.keras import layers
#: as keras_layers``. Imported after the ``tensorflow.python.keras`` alias above, they would mix
#: keras 2.15's layers with the frozen base class, whose ``__init__`` then refuses ``_scope``
#: ("Keyword argument not understood"). They are imported before the alias is installed, so
#: they bind TF 2.15's copy, as they do without tf2npu.
BOUND_BEFORE_ALIAS: tuple[str, ...] = (
    "tensorflow.python.layers.base",
    "tensorflow.python.layers.core",
    "tensorflow.python.layers.convolutional",
    "tensorflow.python.layers.pooling",
    "tensorflow.python.layers.layers",
    "tensorflow.python.layers.utils",
    # Loaded lazily (version_utils' LazyLoader) by the first TF 1 layer call in a graph.
    "tensorflow.python.keras.engine.base_layer_v1",
)


@dataclass(frozen=True)
class ModuleAttribute:
    """Module ``module`` had ``name`` in TF 1.15; under TF 2.15 it is ``target``.

    ``target`` is ``"module:attr"`` (an object) or ``"module"`` (a module object).
    """

    module: str
    name: str
    target: str
    note: str


_OPS = "tensorflow.python.framework.ops"
_ARRAY = "tensorflow.python.ops.array_ops"
_CONTROL = "tensorflow.python.ops.control_flow_ops"
_SCOPE = "tensorflow.python.ops.variable_scope"

MODULE_ATTRIBUTES: tuple[ModuleAttribute, ...] = (
    # tf-slim 1.1.0 (utils.constant_value, used by slim.batch_norm; optimize_loss;
    # learning.py) tests ``isinstance(x, ops.Tensor)``; TF 2.15 moved the class to
    # tensorflow.python.framework.tensor and dropped the name from ops.
    ModuleAttribute(
        _OPS,
        "Tensor",
        "tensorflow.python.framework.tensor:Tensor",
        "the same class, under its TF 1.15 name",
    ),
    *(
        ModuleAttribute(module, name, target, "the same object, under its TF 1.15 name")
        for module, name, target in (
            # Names TF 2.15 moved out of these modules into modules of their own; tf-slim
            # 1.1.0 (smart_cond, the TFExample decoder, metrics, optimize_loss) reads the old
            # ones. Each target is the object tf.compat.v1 exports under that name.
            (_OPS, "IndexedSlices", "tensorflow.python.framework.indexed_slices:IndexedSlices"),
            (_ARRAY, "stack", "tensorflow.python.ops.array_ops_stack:stack"),
            (_ARRAY, "unstack", "tensorflow.python.ops.array_ops_stack:unstack"),
            (_CONTROL, "cond", "tensorflow.python.ops.cond:cond"),
            (_CONTROL, "case", "tensorflow.python.ops.control_flow_case:case"),
            (_CONTROL, "Assert", "tensorflow.python.ops.control_flow_assert:Assert"),
            (_CONTROL, "while_loop", "tensorflow.python.ops.while_loop:while_loop"),
            # TF 1.15's variable_scope.variable built a VariableV1 (tf.compat.v1.Variable).
            (_SCOPE, "variable", "tensorflow.python.ops.variable_v1:VariableV1"),
        )
    ),
    # tf.distribute.cluster_resolver.TPUClusterResolver (TF 1.15's other public path to the
    # contrib class) is the resolver for which tpu="" means no TPU, as in TF 1.15.
    ModuleAttribute(
        "tensorflow._api.v2.compat.v1.distribute.cluster_resolver",
        "TPUClusterResolver",
        "tf2npu.compat.contrib.cluster_resolver:TPUClusterResolver",
        "TF 2.15's resolver, with TF 1.15's tpu=\"\" (no TPU)",
    ),
    # TF 1.15 required NumPy < 1.19, where np.float, np.int, np.bool, np.object, np.str and
    # np.complex were the Python builtins (deprecated in 1.20, removed in 1.24). TF 1.15-era
    # scripts use them (DCGAN's and the GAN collections' MNIST loaders: astype(np.float));
    # NumPy 1.26, which TF 2.15 needs, raises AttributeError for them.
    *(
        ModuleAttribute(
            "numpy", name, f"builtins:{name}", f"the builtin {name}, as NumPy 1.16-1.18 had it"
        )
        for name in ("bool", "int", "float", "complex", "object", "str")
    ),
    # TF 2.15 points this module's BatchNormalization at tf_keras.legacy_tf_layers, a package
    # that exists only with Keras 3 installed; keras 2.15 (TF 2.15's Keras) has the same
    # module, which is what tf.compat.v1.layers.BatchNormalization is.
    ModuleAttribute(
        "tensorflow.python.layers.normalization",
        "normalization",
        "keras.src.legacy_tf_layers.normalization",
        "keras 2.15's TF 1 BatchNormalization layer (tf.compat.v1.layers.BatchNormalization)",
    ),
)


def is_contrib_parent(path: str) -> bool:
    """Whether ``path`` is a ``tensorflow.contrib`` package above a :data:`MODULES` entry."""
    return path.startswith("tensorflow.contrib.") and any(
        entry.path.startswith(path + ".") for entry in MODULES
    )


def moved_module(path: str) -> MovedModule | None:
    """The entry for module ``path``, if TF 2.15 moved it."""
    return next((entry for entry in MODULES if entry.path == path), None)

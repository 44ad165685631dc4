"""tf2npu.compat.moved: TF 1.15-era private paths and names served on TF 2.15."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tf2npu.compat.errors import MovedImportError
from tf2npu.compat.moved import table
from tf2npu.compat.moved.module import MovedFinder, MovedModuleView
from tf2npu.errors import Tf2NpuError


def test_table_keras_layer_modules_point_at_keras_layers() -> None:
    entry = table.moved_module("keras.layers.convolutional")
    assert entry is not None and entry.target == "keras.layers"
    assert table.moved_module("keras.layers.Conv2D") is None


def test_finder_ignores_other_modules() -> None:
    assert MovedFinder().find_spec("json", None) is None
    assert MovedFinder().find_spec("keras.layers", None) is None


def test_view_of_missing_name_is_an_import_error_with_advice() -> None:
    entry = table.moved_module("keras.layers.merge")
    assert entry is not None
    view = MovedModuleView(entry)
    with pytest.raises(MovedImportError, match=r"keras\.layers\.merge\.NoSuchLayer .*keras") as e:
        _ = view.NoSuchLayer
    assert isinstance(e.value, Tf2NpuError)


def test_standalone_keras_layout_resolves_to_keras_215(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        """
        import keras
        from keras.layers.convolutional import Conv3D, MaxPooling3D, AveragePooling3D
        from keras.layers.merge import add
        from keras.layers.normalization import BatchNormalization
        import keras.layers.core as core
        print(Conv3D is keras.layers.Conv3D, MaxPooling3D is keras.layers.MaxPooling3D,
              add is keras.layers.add, BatchNormalization is keras.layers.BatchNormalization,
              core.Dense is keras.layers.Dense)
        """
    )
    assert out.split() == ["True"] * 5


def test_legacy_keras_layers_gain_v1_recurrent_layers(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        """
        from tensorflow.python.keras.layers import LSTM, GRU, Lambda, Layer
        from tensorflow.python.keras.layers import recurrent
        print(LSTM is recurrent.LSTM, GRU is recurrent.GRU, Layer.__name__)
        try:
            from tensorflow.python.keras.layers import BatchNormalization
        except ImportError as err:
            print(type(err).__name__, "tf.keras.layers.BatchNormalization" in str(err))
        """
    )
    assert out.split() == ["True", "True", "Layer", "MovedImportError", "True"]


def test_model_layers_alias_tracks_sublayers(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        """
        import tensorflow as tf
        inp = tf.keras.layers.Input((3,))
        model = tf.keras.Model(inp, tf.keras.layers.Dense(2, name="d")(inp))
        print([type(l).__name__ for l in model._layers])
        before = [l.name for l in model.layers]
        saved = model._layers.copy()
        model._layers.clear()
        print(len(model.layers))
        model._layers.extend(saved)
        print([l.name for l in model.layers] == before, "d" in before)
        """
    )
    assert out.splitlines() == ["['InputLayer', 'Dense']", "0", "True True"]


def test_threadpool_runs_pipeline_unchanged(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        """
        import tensorflow as tf
        from tensorflow.python.data.experimental.ops import threadpool
        ds = tf.data.Dataset.range(5).map(lambda x: x * 2)
        pool = threadpool.PrivateThreadPool(2, display_name="pool")
        ds = threadpool.override_threadpool(ds, pool)
        iterator = ds.make_initializable_iterator()
        it = iterator.get_next()
        ops = {op.type for op in tf.get_default_graph().get_operations()}
        print("ThreadPoolDataset" in ops, "ThreadPoolHandle" in ops)
        with tf.Session() as sess:
            sess.run(iterator.initializer)
            print([int(sess.run(it)) for _ in range(5)])
        try:
            threadpool.override_threadpool(ds, 4)
        except TypeError as err:
            print("PrivateThreadPool" in str(err))
        """
    )
    assert out.splitlines() == ["True True", "[0, 2, 4, 6, 8]", "True"]


def test_keras_shape_is_the_static_shape(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        """
        import keras
        inp = keras.layers.Input((4, 5, 3))
        out = keras.layers.Conv2D(2, 3)(inp)
        print(inp._keras_shape, out._keras_shape)
        """
    )
    assert out.strip() == "(None, 4, 5, 3) (None, 2, 3, 2)"

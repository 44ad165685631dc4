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


def test_aliased_packages_are_tensorflow_python_keras_and_keras() -> None:
    assert [(p.path, p.target) for p in table.PACKAGES] == [
        ("tensorflow.python.keras", "tf.compat.v1.keras"),
        ("keras", "tf.compat.v1.keras"),
    ]


def test_view_of_missing_name_is_an_import_error_with_advice() -> None:
    entry = table.moved_module("keras.layers.merge")
    assert entry is not None
    view = MovedModuleView(entry)
    with pytest.raises(MovedImportError, match=r"keras\.layers\.merge\.NoSuchLayer .*keras") as e:
        _ = view.NoSuchLayer
    assert isinstance(e.value, Tf2NpuError)


@pytest.mark.slow
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


@pytest.mark.slow
def test_standalone_keras_trains_in_a_graph_as_keras_2_2_did(run_tf1: Callable[[str], str]) -> None:
    # keras 2.15's v2 optimizers fail in compile ("numpy() is only available when eager
    # execution is enabled"); Keras 2.2's ran in the graph and had get_session.
    out = run_tf1(
        """
        import numpy as np
        import keras
        from keras import backend as K
        model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
        model.compile(loss="mse", optimizer=keras.optimizers.SGD(0.1))
        model.fit(np.ones([4, 3]), np.zeros([4, 2]), epochs=2, verbose=0)
        print(type(model.optimizer).__module__.split(".")[-2], K.get_session() is not None,
              keras.__version__.split(".")[0])
        """
    )
    assert out.split() == ["legacy", "True", "2"]


@pytest.mark.slow
def test_tensorflow_python_keras_is_tf_keras_again(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        """
        import tensorflow as tf
        from tensorflow.python.keras.layers import LSTM, Dense, Layer, BatchNormalization
        from tensorflow.python.keras import backend as K
        from tensorflow.python.keras.initializers import glorot_normal
        from tensorflow.python.keras.models import Model
        import tensorflow.python.keras.engine.base_layer as private
        print(LSTM is tf.keras.layers.LSTM, Dense is tf.keras.layers.Dense,
              BatchNormalization is tf.keras.layers.BatchNormalization,
              K is tf.keras.backend, glorot_normal is tf.keras.initializers.glorot_normal,
              Model is tf.keras.Model, private.__name__)

        class Scale(Layer):  # a script's layer on the private path, in a tf.keras model
            def build(self, shape):
                self.w = self.add_weight("w", shape[1:], initializer="ones")
            def call(self, x):
                return x * self.w

        inp = tf.keras.layers.Input((2,))
        model = tf.keras.Model(inp, tf.keras.layers.Dense(1)(Scale()(inp)))
        model.compile("sgd", "mse")
        import numpy as np
        model.fit(np.array([[1.0, 2.0]]), np.array([[1.0]]), verbose=0)
        print(len(model.trainable_weights))
        """
    )
    assert out.split() == ["True"] * 6 + ["tensorflow.python.keras.engine.base_layer", "3"]


@pytest.mark.slow
def test_tf1_layers_build_on_tensorflow_python_keras_private_modules(
    run_tf1: Callable[[str], str],
) -> None:
    """tensorflow.python.layers.core.Dense (THUMT's GRU cell) loads TF 2.15's own copy, which
    imports tensorflow.python.keras.mixed_precision.autocast_variable: a private module under
    a public package, found in the real package while public names stay tf.keras's."""
    out = run_tf1(
        """
        import tensorflow as tf
        from tensorflow.python.layers import core as layers_core
        y = layers_core.Dense(3, use_bias=False, name="gate")(tf.placeholder(tf.float32, [4, 2]))
        print([v.op.name for v in tf.trainable_variables()], y.shape.as_list())
        from tensorflow.python.keras.mixed_precision import autocast_variable
        from tensorflow.python.keras import mixed_precision as mp
        print(autocast_variable.__name__, mp.LossScaleOptimizer is tf.keras.mixed_precision.LossScaleOptimizer)
        import keras.layers.experimental as exp
        print(exp.__name__)
        """
    )
    assert out.splitlines() == [
        "['gate/kernel'] [4, 3]",
        "tensorflow.python.keras.mixed_precision.autocast_variable True",
        "keras.api._v1.keras.layers.experimental",
    ]


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_distort_image_ops_imports_and_refuses_calls(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        """
        import tensorflow as tf
        from tensorflow.contrib.image.python.ops import distort_image_ops
        for call in (lambda: distort_image_ops.random_hsv_in_yiq(None, 0.1),
                     lambda: tf.contrib.image.rotate):
            try:
                call()
            except AttributeError as err:
                print(type(err).__name__, "tfa.image" in str(err))
        """
    )
    assert out.splitlines() == ["ContribAttributeError True"] * 2


@pytest.mark.slow
def test_slim_layers_build_and_batch_norm_computes_tf115s_maths(
    run_tf1: Callable[[str], str],
) -> None:
    """slim.conv2d/fully_connected on TF 2.15's own TF 1 layer classes (imported before the
    tensorflow.python.keras alias: '_scope' was "not understood"), slim.batch_norm on the
    module attributes TF 2.15 moved (ops.Tensor, control_flow_ops.cond, the tf_keras
    BatchNormalization): names as in TF 1.15, batch statistics and moving averages as its
    definition (decay 0.999, epsilon 0.001)."""
    out = run_tf1(
        """
        import numpy as np
        import tensorflow as tf
        import tensorflow.contrib.slim as slim
        x = tf.placeholder(tf.float32, [4, 3])
        training = tf.placeholder(tf.bool, [])
        y = slim.batch_norm(x, is_training=training, scale=True)
        z = slim.fully_connected(
            tf.reshape(slim.conv2d(tf.reshape(x, [4, 1, 3, 1]), 2, [1, 2]), [4, 6]), 1)
        print(sorted(v.op.name for v in tf.global_variables()))
        value = np.array([[1, 2, 3], [2, 4, 0], [0, 0, 3], [5, 2, 2]], np.float32)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, _ = sess.run([y, tf.get_collection(tf.GraphKeys.UPDATE_OPS)],
                              {x: value, training: True})
            mean = sess.run(tf.global_variables("BatchNorm/moving_mean")[0])
        want = (value - value.mean(0)) / np.sqrt(value.var(0) + 0.001)
        print(np.abs(got - want).max() < 1e-5,
              np.abs(mean - 0.001 * value.mean(0)).max() < 1e-7)
        """
    )
    assert out.splitlines() == [
        "['BatchNorm/beta', 'BatchNorm/gamma', 'BatchNorm/moving_mean', "
        "'BatchNorm/moving_variance', 'Conv/biases', 'Conv/weights', "
        "'fully_connected/biases', 'fully_connected/weights']",
        "True True",
    ]


@pytest.mark.slow
def test_module_attributes_are_undone_by_deactivate(run_plain: Callable[[str], object]) -> None:
    done = run_plain(
        "from tensorflow.python.framework import ops\n"
        "from tf2npu.compat import activate, deactivate\n"
        "activate()\n"
        "from tensorflow.python.framework.tensor import Tensor\n"
        "import numpy as np\n"
        "print(ops.Tensor is Tensor, np.float is float, np.int is int, np.bool is bool)\n"
        "deactivate()\n"
        "print(hasattr(ops, 'Tensor'), hasattr(np, 'float'))\n"
    )
    assert done.stdout.split() == ["True"] * 4 + ["False"] * 2  # type: ignore[attr-defined]


def test_module_attribute_targets_are_tf_keras_or_builtin_objects() -> None:
    names = {(e.module.rsplit(".", 1)[-1], e.name) for e in table.MODULE_ATTRIBUTES}
    assert ("control_flow_ops", "cond") in names and ("ops", "Tensor") in names
    assert ("numpy", "float") in names
    prefixes = ("tensorflow.", "keras.", "tf2npu.", "builtins:")
    assert all(e.target.startswith(prefixes) for e in table.MODULE_ATTRIBUTES)


@pytest.mark.slow
def test_graph_editor_imports_and_refuses_every_name(run_tf1: Callable[[str], str]) -> None:
    """GPT-2 fine-tuning imports it at the top for gradient checkpointing, an option."""
    out = run_tf1(
        """
        import tensorflow.contrib.graph_editor as ge
        print(ge.__name__, hasattr(ge, "sgv"))
        try:
            ge.get_backward_walk_ops([])
        except AttributeError as err:
            print(type(err).__name__, str(err)[:64])
        """
    )
    assert out.splitlines() == [
        "tensorflow.contrib.graph_editor False",
        "ContribAttributeError tf.contrib.graph_editor.get_backward_walk_ops is not provided by",
    ]

"""tf2npu.compat.contrib.module: contrib module objects and the errors for what is missing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tf2npu.compat.contrib.module import (
    ContribFinder,
    ContribPackage,
    ContribSubmodule,
    InternalPathView,
)
from tf2npu.compat.errors import ContribAttributeError, ContribImportError
from tf2npu.errors import Tf2NpuError


def test_missing_symbol_is_an_attribute_error_with_advice() -> None:
    layers = ContribSubmodule("layers")
    assert not hasattr(layers, "optimize_loss")
    with pytest.raises(ContribAttributeError) as caught:
        _ = layers.optimize_loss
    assert isinstance(caught.value, AttributeError)
    assert isinstance(caught.value, Tf2NpuError)
    assert "tf.contrib.layers.optimize_loss is not provided by tf2npu run" in str(caught.value)


def test_missing_module_attribute_is_an_attribute_error() -> None:
    package = ContribPackage({})
    with pytest.raises(ContribAttributeError, match=r"tf\.contrib\.opt .*AdamWOptimizer"):
        _ = package.opt


def test_dir_lists_provided_names() -> None:
    assert {"layer_norm", "xavier_initializer"} <= set(dir(ContribSubmodule("layers")))


def test_finder_refuses_unprovided_module() -> None:
    with pytest.raises(ContribImportError, match=r"tf\.contrib\.gan is not provided") as caught:
        ContribFinder().find_spec("tensorflow.contrib.gan", None)
    assert caught.value.name == "tensorflow.contrib.gan"


def test_finder_serves_internal_path_of_provided_module() -> None:
    spec = ContribFinder().find_spec("tensorflow.contrib.layers.python.layers", None)
    assert spec is not None and spec.submodule_search_locations == []
    assert spec.name == "tensorflow.contrib.layers.python.layers"


def test_internal_path_refuses_missing_name_with_the_public_advice() -> None:
    view = InternalPathView("tensorflow.contrib.layers.python.layers", "layers")
    message = "tf.contrib.layers.optimize_loss is not provided by tf2npu run (TF 2.15 has no"
    with pytest.raises(ContribAttributeError) as caught:
        _ = view.optimize_loss  # from <view> import optimize_loss asks for this first
    assert str(caught.value).startswith(message)
    with pytest.raises(ContribImportError) as imported:  # ...then for it as a submodule
        ContribFinder().find_spec("tensorflow.contrib.layers.python.layers.optimize_loss", None)
    assert str(imported.value) == str(caught.value)


def test_finder_ignores_other_modules() -> None:
    assert ContribFinder().find_spec("tensorflow.python.ops", None) is None


@pytest.mark.tf
@pytest.mark.slow
def test_import_statements_raise_with_advice(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import sys
        import tensorflow as tf
        sys.modules["tf_slim"] = None  # as if tf-slim were not installed, even where it is
        attempts = {
            "import": "import tensorflow.contrib.slim",
            "from": "from tensorflow.contrib import slim",
            "nested": "from tensorflow.contrib.layers.python.layers import initializers",
            "attr": "tf.contrib.distribute.MirroredStrategy",
        }
        for label, code in attempts.items():
            try:
                exec(code)
            except (ImportError, AttributeError) as err:
                print(label, type(err).__name__, err)
        print(hasattr(tf.contrib, "slim"), hasattr(tf.contrib, "layers"))
    """)
    lines = out.splitlines()
    expected = [
        "import ContribImportError tf.contrib.slim is not provided by tf2npu run; install tf-slim",
        "from ContribImportError tf.contrib.slim is not provided by tf2npu run; install tf-slim",
        "nested ContribImportError tf.contrib.layers.initializers is not provided by tf2npu",
        "attr ContribAttributeError tf.contrib.distribute is not provided by tf2npu run; use tf.",
    ]
    assert len(lines) == 5
    for line, start in zip(lines, expected, strict=False):
        assert line.startswith(start), line
    assert lines[4] == "False True"


@pytest.mark.tf
@pytest.mark.slow
def test_slim_resolves_to_tf_slim_when_installed(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import os, sys, tempfile
        root = tempfile.mkdtemp()  # a stand-in tf_slim package with a nets subpackage
        os.makedirs(os.path.join(root, "tf_slim", "nets"))
        with open(os.path.join(root, "tf_slim", "__init__.py"), "w") as f:
            f.write("def arg_scope(*a, **k):\\n    return 'tf_slim.arg_scope'\\n")
        with open(os.path.join(root, "tf_slim", "nets", "__init__.py"), "w") as f:
            f.write("NAME = 'nets'\\n")
        sys.path.insert(0, root)
        import tensorflow as tf
        import tensorflow.contrib.slim as slim
        from tensorflow.contrib.slim import nets
        from tensorflow.contrib.slim.nets import NAME
        import tf_slim
        print(slim is tf_slim is tf.contrib.slim, nets is tf_slim.nets, NAME)
        print(slim.arg_scope(), slim.__name__)
    """)
    assert out.splitlines() == ["True True nets", "tf_slim.arg_scope tf_slim"]


@pytest.mark.tf
@pytest.mark.slow
def test_internal_paths_resolve_to_the_provided_names(run_tf1: Callable[[str], str]) -> None:
    """TF 1.15's tensorflow.contrib.<m>.python.<...> paths give tf.contrib.<m>'s objects;
    arg_scope, a module and a function there, stays the function; learn.datasets imports."""
    out = run_tf1("""
        import tensorflow as tf
        from tensorflow.contrib.layers.python.layers import batch_norm, layer_norm
        import tensorflow.contrib.layers.python.layers.layers as layers_lib
        from tensorflow.contrib.framework.python.ops.arg_scope import add_arg_scope
        from tensorflow.contrib.framework.python.ops import arg_scope
        from tensorflow.contrib.learn.datasets import base
        import tensorflow.contrib.slim as slim
        print(batch_norm is tf.contrib.layers.batch_norm,
              layer_norm is tf.contrib.layers.layer_norm,
              layers_lib.fully_connected is tf.contrib.layers.fully_connected,
              arg_scope is slim.arg_scope, add_arg_scope is slim.add_arg_scope,
              base.Dataset is tf.contrib.learn.datasets.base.Dataset)
        for code in ("from tensorflow.contrib.layers import optimize_loss",
                     "import tensorflow.contrib.layers.fully_connected"):
            try:
                exec(code)
            except ImportError as err:
                print(type(err).__name__, str(err)[:60])
    """)
    assert out.splitlines() == [
        "True True True True True True",
        "ContribImportError tf.contrib.layers.optimize_loss is not provided by tf2npu ru",
        "ContribImportError tensorflow.contrib.layers.fully_connected is not a module: i",
    ]

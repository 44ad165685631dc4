"""tf2npu.compat.contrib.module: contrib module objects and the errors for what is missing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tf2npu.compat.contrib.module import ContribFinder, ContribPackage, ContribSubmodule
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
    with pytest.raises(ContribAttributeError, match=r"tf\.contrib\.learn .*tf\.compat\.v1\.est"):
        _ = package.learn


def test_dir_lists_provided_names() -> None:
    assert {"layer_norm", "xavier_initializer"} <= set(dir(ContribSubmodule("layers")))


def test_finder_refuses_unprovided_module() -> None:
    with pytest.raises(ContribImportError, match=r"tf\.contrib\.gan is not provided") as caught:
        ContribFinder().find_spec("tensorflow.contrib.gan", None)
    assert caught.value.name == "tensorflow.contrib.gan"


def test_finder_refuses_internal_path_of_provided_module() -> None:
    with pytest.raises(ContribImportError, match=r"use tf\.contrib\.layers\.<name>"):
        ContribFinder().find_spec("tensorflow.contrib.layers.python.layers", None)


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
        "nested ContribImportError tensorflow.contrib.layers.python is not provided by tf2npu",
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

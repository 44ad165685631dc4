"""tf_adapter: TensorFlow's DataType constants; other names of the compiled module are refused."""

from __future__ import annotations

import pytest

from npu_bridge import tf_adapter


def test_data_types_are_tensorflows_enum_values() -> None:
    tf = pytest.importorskip("tensorflow")
    names = {"DT_FLOAT": "float32", "DT_DOUBLE": "float64", "DT_HALF": "float16"}
    for name in tf_adapter.__all__:
        dtype = tf.dtypes.as_dtype(names.get(name, name[3:].lower()))
        assert getattr(tf_adapter, name) == dtype.as_datatype_enum, name


def test_the_compiled_library_is_not_emulated() -> None:
    with pytest.raises(AttributeError, match=r"tf_adapter.PluginInit: part of the adapter's"):
        tf_adapter.PluginInit  # noqa: B018

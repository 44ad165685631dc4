"""TensorFlow's ``DataType`` enum (``types.proto``): one table of numbers, names and sizes.

Every module that reads a dtype number from a GraphDef, a ``TensorProto`` or a tensor dump uses
these names; none spells a number. TF-free: the migration core, the artifacts and the debug
tools read it without importing TensorFlow. A ref type is its base type plus
:data:`REF_OFFSET` (``float32_ref`` is 101).

>>> DTYPES[DT_HALF].numpy, DTYPES[DT_HALF].enum, DTYPES[DT_HALF].itemsize
('float16', 'DT_HALF', 2)
>>> base_dtype(101) == DT_FLOAT
True
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DTYPES",
    "DT_BFLOAT16",
    "DT_BOOL",
    "DT_DOUBLE",
    "DT_FLOAT",
    "DT_HALF",
    "DT_INT32",
    "DT_INT64",
    "DT_RESOURCE",
    "DT_STRING",
    "DT_UINT8",
    "DT_VARIANT",
    "REF_OFFSET",
    "DType",
    "base_dtype",
]


@dataclass(frozen=True, slots=True)
class DType:
    """One ``DataType`` value: its number, its enum name, numpy's name and its size in bytes.

    ``numpy`` is empty where numpy has no such dtype (strings, resources, quantized types);
    ``itemsize`` is 0 where an element has no fixed size (strings, resources, variants).
    """

    number: int
    enum: str
    numpy: str
    itemsize: int


DTYPES: dict[int, DType] = {
    d.number: d
    for d in (
        DType(1, "DT_FLOAT", "float32", 4),
        DType(2, "DT_DOUBLE", "float64", 8),
        DType(3, "DT_INT32", "int32", 4),
        DType(4, "DT_UINT8", "uint8", 1),
        DType(5, "DT_INT16", "int16", 2),
        DType(6, "DT_INT8", "int8", 1),
        DType(7, "DT_STRING", "", 0),
        DType(8, "DT_COMPLEX64", "complex64", 8),
        DType(9, "DT_INT64", "int64", 8),
        DType(10, "DT_BOOL", "bool", 1),
        DType(11, "DT_QINT8", "", 1),
        DType(12, "DT_QUINT8", "", 1),
        DType(13, "DT_QINT32", "", 4),
        DType(14, "DT_BFLOAT16", "bfloat16", 2),
        DType(15, "DT_QINT16", "", 2),
        DType(16, "DT_QUINT16", "", 2),
        DType(17, "DT_UINT16", "uint16", 2),
        DType(18, "DT_COMPLEX128", "complex128", 16),
        DType(19, "DT_HALF", "float16", 2),
        DType(20, "DT_RESOURCE", "", 0),
        DType(21, "DT_VARIANT", "", 0),
        DType(22, "DT_UINT32", "uint32", 4),
        DType(23, "DT_UINT64", "uint64", 8),
    )
}
"""Every ``DataType`` value of TF 2.15 below the ref types, by number."""

DT_FLOAT = 1
DT_DOUBLE = 2
DT_INT32 = 3
DT_UINT8 = 4
DT_STRING = 7
DT_INT64 = 9
DT_BOOL = 10
DT_BFLOAT16 = 14
DT_HALF = 19
DT_RESOURCE = 20
DT_VARIANT = 21
REF_OFFSET = 100


def base_dtype(number: int) -> int:
    """The base type of ``number`` (a ref type's value minus :data:`REF_OFFSET`)."""
    return number - REF_OFFSET if number > REF_OFFSET else number

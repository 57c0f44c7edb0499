"""Element types shared by qopt's dialects: MLIR <-> numpy <-> torch."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute
from xdsl.utils.hints import isa

ui8 = IntegerType(8, Signedness.UNSIGNED)
ui16 = IntegerType(16, Signedness.UNSIGNED)
ui32 = IntegerType(32, Signedness.UNSIGNED)

#: numpy dtype name -> MLIR element type. Signed integers are signless (`i8`),
#: unsigned ones `ui8`, booleans `i1`.
_FROM_NUMPY: dict[str, AnyFloat | IntegerType] = {
    "float16": f16,
    "float32": f32,
    "float64": f64,
    "bool": i1,
    "int8": i8,
    "int16": i16,
    "int32": i32,
    "int64": i64,
    "uint8": ui8,
    "uint16": ui16,
    "uint32": ui32,
}


def element_type(dtype: np.dtype | type | str) -> AnyFloat | IntegerType:
    name = np.dtype(dtype).name
    if name not in _FROM_NUMPY:
        raise ValueError(f"no MLIR element type for numpy dtype {name}")
    return _FROM_NUMPY[name]


def numpy_dtype(elem: Attribute) -> np.dtype:
    if isinstance(elem, Float32Type):
        return np.dtype(np.float32)
    if isinstance(elem, Float16Type):
        return np.dtype(np.float16)
    if isinstance(elem, Float64Type):
        return np.dtype(np.float64)
    if isinstance(elem, BFloat16Type):
        raise ValueError("bfloat16 tensors are not supported: convert the model to float32")
    if isa(elem, IntegerType):
        width = elem.width.data
        if width == 1:
            return np.dtype(np.bool_)
        unsigned = elem.signedness.data == Signedness.UNSIGNED
        return np.dtype(f"{'u' if unsigned else ''}int{width}")
    raise ValueError(f"no numpy dtype for element type {elem}")


def is_float(elem: Attribute) -> bool:
    return isinstance(elem, AnyFloat)


def is_int(elem: Attribute) -> bool:
    return isa(elem, IntegerType) and elem.width.data != 1


def is_bool(elem: Attribute) -> bool:
    return isa(elem, IntegerType) and elem.width.data == 1


def int_range(elem: Attribute) -> tuple[int, int]:
    """(min, max) representable in an integer element type."""
    info = np.iinfo(numpy_dtype(elem))
    return int(info.min), int(info.max)


def tensor_type(
    dtype: np.dtype | type | str, shape: tuple[int, ...] | list[int]
) -> TensorType[AnyFloat | IntegerType]:
    return TensorType(element_type(dtype), list(shape))


__all__ = [
    "bf16",
    "element_type",
    "f16",
    "f32",
    "f64",
    "numpy_dtype",
    "tensor_type",
    "ui8",
]

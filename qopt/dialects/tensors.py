"""Tensor-typed values: their shape, element type, element count and numpy dtype.

The one definition of these helpers for every layer (dialect verifiers, the
frontend, the passes, the interpreters, the backends). Each takes an SSA value
or its type; a value that is not a ranked tensor is a `VerifyException` (a
verifier reports it for IR read from a file).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa

from qopt.dtypes import numpy_dtype

Shape = tuple[int, ...]


def tensor_type_of(value: SSAValue | Attribute) -> TensorType:
    """The tensor type of `value` (or `value` itself, a type)."""
    type = value.type if isinstance(value, SSAValue) else value
    if not isa(type, TensorType):
        raise VerifyException(f"expected a tensor, got {type}")
    return type


def shape_of(value: SSAValue | Attribute) -> Shape:
    return tuple(tensor_type_of(value).get_shape())


def elem_of(value: SSAValue | Attribute) -> Attribute:
    return tensor_type_of(value).get_element_type()


def dtype_of(value: SSAValue | Attribute) -> np.dtype:
    """The numpy dtype of the element type (`qopt.dtypes.numpy_dtype`)."""
    return numpy_dtype(elem_of(value))


def numel(shape: SSAValue | Attribute | Sequence[int]) -> int:
    """Elements of a shape, or of a tensor value / type (1 for rank 0)."""
    if isinstance(shape, SSAValue | Attribute):
        shape = shape_of(shape)
    return math.prod(int(d) for d in shape)


__all__ = ["Shape", "dtype_of", "elem_of", "numel", "shape_of", "tensor_type_of"]

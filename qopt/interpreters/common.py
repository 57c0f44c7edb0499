"""Helpers shared by the numpy interpreters."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import InterpreterFunctions, impl, register_impls
from xdsl.ir import SSAValue

from qopt.dialects.dtypes import numpy_dtype


def dtype_of(value: SSAValue) -> np.dtype:
    assert isinstance(value.type, TensorType)
    return numpy_dtype(value.type.get_element_type())


def shape_of(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def as_result(array: np.ndarray | np.generic, value: SSAValue) -> np.ndarray:
    """Cast to the declared result type (and shape); always an ndarray."""
    out = np.asarray(array).astype(dtype_of(value), copy=False)
    shape = shape_of(value)
    if out.shape != shape:
        out = out.reshape(shape)
    return out


def functions_class(name: str, table: dict[type, Any]) -> type[InterpreterFunctions]:
    """An `InterpreterFunctions` class with one `@impl` per (op type, body) entry.

    Used where many ops share a generic body (elementwise families): each body
    must be a distinct function object.
    """
    namespace = {f"run_{op_type.__name__}": impl(op_type)(fn) for op_type, fn in table.items()}
    return register_impls(type(name, (InterpreterFunctions,), namespace))

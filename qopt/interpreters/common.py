"""Helpers shared by the numpy interpreters."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.interpreter import InterpreterFunctions, impl, register_impls
from xdsl.ir import Operation, SSAValue

from qopt.dialects.tensors import dtype_of, shape_of
from qopt.errors import QoptError, where


def as_result(array: np.ndarray | np.generic, value: SSAValue) -> np.ndarray:
    """Cast to the declared result type (and shape); always an ndarray. A `?` dim of
    the type takes the computed size; the static dims must match it."""
    out = np.asarray(array).astype(dtype_of(value), copy=False)
    shape = shape_of(value)
    if out.shape != shape:
        if DYNAMIC_INDEX in shape:
            fits = out.ndim == len(shape) and all(
                d in (DYNAMIC_INDEX, n) for d, n in zip(shape, out.shape, strict=True)
            )
            if not fits:
                raise QoptError(
                    f"a result of shape {list(out.shape)} does not have the declared type "
                    f"{value.type} (its static dims must match)"
                )
            return out
        out = out.reshape(shape)
    return out


def functions_class(name: str, table: dict[type, Any]) -> type[InterpreterFunctions]:
    """An `InterpreterFunctions` class with one `@impl` per (op type, body) entry.

    Used where many ops share a generic body (elementwise families): each body
    must be a distinct function object.
    """
    namespace = {f"run_{op_type.__name__}": impl(op_type)(fn) for op_type, fn in table.items()}
    return register_impls(type(name, (InterpreterFunctions,), namespace))


def checked_indices(
    index: Any, size: int, op: Operation, *, negative: bool = False, what: str = "index"
) -> np.ndarray:
    """`index` as int64 after checking every value against a dimension of `size`:
    in [0, size), or in [-size, size) with `negative` (Python indexing, which counts
    from the end). An index outside is a QoptError naming the op, the first bad value
    and the count, as torch raises IndexError ("index out of range") for it; numpy
    would wrap negatives silently or raise from deep inside."""
    idx = np.asarray(index, dtype=np.int64)
    low = -size if negative else 0
    bad = (idx < low) | (idx >= size)
    if bad.any():
        first = int(idx[bad].reshape(-1)[0])
        allowed = f"[{low}, {size})"
        raise QoptError(
            f"{where(op)}: {what} {first} is out of range for a dimension of size {size} "
            f"({int(bad.sum())} of {idx.size} value(s) outside {allowed}); check the inputs "
            "(token ids must be below the vocabulary size)"
        )
    return idx

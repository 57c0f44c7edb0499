"""Helpers shared by the numpy interpreters."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.ir import Operation, SSAValue

from qopt.dialects.aten import indexing as ix
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.base import AtenOp, AtenOpBase, integer
from qopt.dialects.aten.bounds import result_bound
from qopt.dialects.tensors import dtype_of, shape_of
from qopt.errors import QoptError, where
from qopt.limits import active_limits


def has_runtime_size(op: Operation) -> bool:
    """Whether a result of `op` has a `?` dim (a size decided at run time)."""
    return any(
        isinstance(r.type, TensorType) and DYNAMIC_INDEX in r.type.get_shape() for r in op.results
    )


def runtime_result_sizes(op: Operation, args: Sequence[Any]) -> list[int] | None:
    """The element count each result of `op` will have at most when it runs on `args`,
    derived BEFORE it runs from the operands' actual shapes by the op's own shape rule
    (`qopt.dialects.aten.bounds.result_bound`: a `dynamic_slice` is at most its input,
    a `view` holds its input's elements, any other aten op its `expected_shapes`).
    None for an op without a shape rule (its results are checked as soon as they
    exist); a QoptError for an aten op whose rule gives its `?` result no size (a
    `full` of a `?` dim: nothing decides it), which qopt does not run."""
    shapes = {
        v: tuple(np.shape(a)) for v, a in zip(op.operands, args, strict=False)
        if isinstance(v.type, TensorType)
    }  # fmt: skip
    sizes: list[int] = []
    for result in op.results:
        if not isinstance(result.type, TensorType):
            sizes.append(1)
            continue
        shape = shape_of(result)
        if DYNAMIC_INDEX in shape:
            if isinstance(op, ix.DynamicSliceOp) and op.length is not None and len(args) > 2:
                x = shapes.get(op.input, ())  # a window: its length is an operand's value
                d = integer(op.dim) % max(len(x), 1)
                n = min(max(int(np.asarray(args[2]).reshape(-1)[0]), 0), x[d] if x else 0)
                sizes.append(math.prod((*x[:d], n, *x[d + 1 :])))
                continue
            if isinstance(op, sh.ViewOp):  # a view holds its input's elements
                sizes.append(math.prod(shapes.get(op.input, (0,))))
                continue
            if not isinstance(op, AtenOp):  # no shape rule: checked after it runs
                return None
            try:
                if type(op).expected_shapes is AtenOpBase.expected_shapes:
                    raise QoptError("no shape rule")
                shape = result_bound(op, result, shapes)
            except QoptError:
                raise QoptError(
                    f"{where(op)}: nothing in the program decides the run-time size of its "
                    f"result {result.type} (its operands' shapes do not), so qopt does not run it"
                ) from None
            except Exception:  # operands it does not take: the op says so when it runs
                return None
        dims = [max(int(d), 0) for d in shape]  # a dim past the limit even when empty
        sizes.append(max(math.prod(dims), *dims, 0))
    return sizes


class RuntimeSizes(Interpreter.Listener):
    """The bound on every value whose size is decided at run time (a `?` result):
    before an op with one runs, its results' sizes are derived from its operands'
    actual shapes (`runtime_result_sizes`) and checked against the active limits'
    `max_tensor_elements` (`qopt.limits.active_limits`), so a program (an `.mlir`,
    a `.qvk` host segment, constant folding) cannot allocate past the limit first;
    an op without a shape rule has its results checked as soon as they exist."""

    def will_interpret_op(self, op: Operation, args: Sequence[Any]) -> None:
        if not has_runtime_size(op):
            return
        sizes = runtime_result_sizes(op, args) or []
        for i, count in enumerate(sizes):
            _check_size(op, i, count)

    def did_interpret_op(self, op: Operation, results: Sequence[Any]) -> None:
        if not has_runtime_size(op):
            return
        for i, value in enumerate(results):
            _check_size(op, i, int(np.size(value)))


def _check_size(op: Operation, index: int, count: int) -> None:
    limits = active_limits()
    if count > limits.max_tensor_elements:
        raise limits.exceeded(
            f"{where(op)}: the element count of its result {index} (a size decided at run time)",
            count,
            "max_tensor_elements",
        )


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

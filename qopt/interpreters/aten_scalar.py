"""numpy semantics of the aten run-time scalar family (`aten.item`, `aten.sym_size`,
`aten.assert_scalar`): 0-d arrays, their asserted ranges checked on every call."""

from __future__ import annotations

import numpy as np
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Operation

from qopt.dialects.aten import scalar as sc
from qopt.dialects.aten.base import integer, norm_dim
from qopt.errors import QoptError, quoted, where
from qopt.interpreters.common import as_result


def _in_range(op: sc.ItemOp | sc.SymSizeOp, value: np.ndarray, what: str) -> np.ndarray:
    """`value` after checking it against the op's asserted `range`."""
    if op.range is None:
        return value
    low, high = sc.scalar_range(op.range)
    number = int(value)
    if not low <= number <= high:
        raise QoptError(
            f"{where(op)}: {what} is {number}, outside the range [{low}, {high}] the exported "
            "program asserts for it (torch raises for it too)"
        )
    return value


def _fail(op: Operation, message: str) -> QoptError:
    return QoptError(f"{where(op)}: {message}")


@register_impls
class AtenScalarFunctions(InterpreterFunctions):
    @impl(sc.ItemOp)
    def run_item(self, interpreter: Interpreter, op: sc.ItemOp, args: PythonValues) -> PythonValues:
        x = np.asarray(args[0])
        if x.size != 1:
            raise _fail(op, f"item of a tensor of {x.size} elements")
        value = as_result(x.reshape(()), op.result)
        return (_in_range(op, value, "the value"),)

    @impl(sc.SymSizeOp)
    def run_sym_size(
        self, interpreter: Interpreter, op: sc.SymSizeOp, args: PythonValues
    ) -> PythonValues:
        x = np.asarray(args[0])
        d = norm_dim(integer(op.dim), x.ndim)
        value = as_result(np.asarray(x.shape[d], dtype=np.int64), op.result)
        return (_in_range(op, value, f"the size of dim {d}"),)

    @impl(sc.AssertScalarOp)
    def run_assert_scalar(
        self, interpreter: Interpreter, op: sc.AssertScalarOp, args: PythonValues
    ) -> PythonValues:
        if not bool(np.asarray(args[0])):
            text = quoted(op.message.data) if op.message is not None else "a run-time assertion"
            raise _fail(op, f"the exported program's assertion failed: {text}")
        return ()

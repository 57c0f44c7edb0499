"""numpy semantics of `arith.constant` for tensor constants (dense, dense_resource)."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, DenseResourceAttr
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)

from qopt.resources import elements_array


def constant_array(op: arith.ConstantOp) -> np.ndarray | int | float:
    """The value of an `arith.constant`: a numpy array for a tensor literal
    (`qopt.resources.elements_array`), the Python number of a scalar one."""
    value = op.value
    if isinstance(value, DenseResourceAttr | DenseIntOrFPElementsAttr):
        return elements_array(value, op)
    return value.value.data


@register_impls
class BuiltinFunctions(InterpreterFunctions):
    @impl(arith.ConstantOp)
    def run_constant(
        self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues
    ) -> PythonValues:
        result: Any = constant_array(op)
        return (result,)

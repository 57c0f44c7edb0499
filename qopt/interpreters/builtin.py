"""numpy semantics of `arith.constant` for tensor constants (dense, dense_resource)."""

from __future__ import annotations

from typing import Any

from xdsl.dialects import arith
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)

from qopt.dialects.queries import constant_array


@register_impls
class BuiltinFunctions(InterpreterFunctions):
    @impl(arith.ConstantOp)
    def run_constant(
        self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues
    ) -> PythonValues:
        result: Any = constant_array(op)
        return (result,)

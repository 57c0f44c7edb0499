"""numpy semantics of `arith.constant` for tensor constants (dense, dense_resource)."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    TensorType,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)

from qopt.dialects.dtypes import numpy_dtype
from qopt.errors import QoptError, where
from qopt.resources import resource_array, weights_of


def constant_array(op: arith.ConstantOp) -> np.ndarray | int | float:
    value = op.value
    if isinstance(value, DenseResourceAttr):
        array = resource_array(value, weights_of(op))
        if array is None:
            raise QoptError(
                f"{where(op)}: the data of dense_resource<{value.resource_handle.data}> is "
                "missing (weights are elided from printouts by default): print the module "
                "with --print-weights (qopt-opt) or print_weights=True to run it"
            )
        return array
    if isinstance(value, DenseIntOrFPElementsAttr):
        type = value.type
        assert isinstance(type, TensorType)
        dtype = numpy_dtype(type.get_element_type())
        shape = tuple(type.get_shape())
        raw = value.data.data
        count = int(np.prod(shape, dtype=np.int64))
        flat = (
            np.frombuffer(raw, dtype=dtype)
            if dtype != np.bool_
            else np.frombuffer(raw, np.uint8).astype(np.bool_)
        )
        if flat.size == 1 and count != 1:
            return np.broadcast_to(flat, shape).copy()
        return flat.reshape(shape).copy()
    return value.value.data  # pyright: ignore


@register_impls
class BuiltinFunctions(InterpreterFunctions):
    @impl(arith.ConstantOp)
    def run_constant(
        self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues
    ) -> PythonValues:
        result: Any = constant_array(op)
        return (result,)

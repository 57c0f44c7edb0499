"""The reference interpreter: numpy semantics for every op of every qopt level."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import Interpreter, InterpreterFunctions
from xdsl.interpreters.func import FuncFunctions

from qopt.dialects.dtypes import numpy_dtype
from qopt.errors import QoptError


def all_functions() -> list[InterpreterFunctions]:
    from qopt.interpreters.aten_elementwise import AtenElementwiseFunctions
    from qopt.interpreters.aten_layers import AtenLayersFunctions
    from qopt.interpreters.aten_nn import AtenNNFunctions
    from qopt.interpreters.aten_reduction import AtenReductionFunctions
    from qopt.interpreters.aten_shape import AtenShapeFunctions
    from qopt.interpreters.builtin import BuiltinFunctions
    from qopt.interpreters.coreml import CoremlFunctions
    from qopt.interpreters.qfused import QFusedFunctions
    from qopt.interpreters.quant import QuantFunctions
    from qopt.interpreters.vkc import VkcFunctions

    return [
        FuncFunctions(),
        BuiltinFunctions(),
        AtenElementwiseFunctions(),
        AtenNNFunctions(),
        AtenShapeFunctions(),
        AtenReductionFunctions(),
        AtenLayersFunctions(),
        QuantFunctions(),
        QFusedFunctions(),
        CoremlFunctions(),
        VkcFunctions(),
    ]


def make_interpreter(module: ModuleOp) -> Interpreter:
    interpreter = Interpreter(module)
    for functions in all_functions():
        interpreter.register_implementations(functions)
    return interpreter


def entry_function(module: ModuleOp, name: str = "forward") -> FuncOp:
    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == name:
            return op
    funcs = [op.sym_name.data for op in module.ops if isinstance(op, FuncOp)]
    if len(funcs) == 1:
        return next(op for op in module.ops if isinstance(op, FuncOp))
    raise QoptError(f"the module has no function @{name} (functions: {funcs or 'none'})")


def _as_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def check_inputs(func: FuncOp, inputs: Sequence[Any]) -> list[np.ndarray]:
    types = func.function_type.inputs.data
    if len(inputs) != len(types):
        raise QoptError(f"@{func.sym_name.data} takes {len(types)} input(s), got {len(inputs)}")
    arrays: list[np.ndarray] = []
    for i, (value, type) in enumerate(zip(inputs, types, strict=True)):
        array = _as_numpy(value)
        assert isinstance(type, TensorType)
        shape = tuple(type.get_shape())
        dtype = numpy_dtype(type.get_element_type())
        if array.shape != shape:
            raise QoptError(
                f"input {i} of @{func.sym_name.data} has shape {list(array.shape)}, "
                f"expected {list(shape)}"
            )
        if array.dtype != dtype:
            if not np.can_cast(array.dtype, dtype, casting="same_kind"):
                raise QoptError(
                    f"input {i} of @{func.sym_name.data} has dtype {array.dtype}, expected {dtype}"
                )
            array = array.astype(dtype)
        arrays.append(array)
    return arrays


def interpret(module: ModuleOp, *inputs: Any, function: str = "forward") -> tuple[np.ndarray, ...]:
    """Run `@forward` (or `function`) of `module` on numpy or torch inputs."""
    func = entry_function(module, function)
    arrays = check_inputs(func, inputs)
    interpreter = make_interpreter(module)
    results = interpreter.call_op(func, tuple(arrays))
    return tuple(np.asarray(r) for r in results)

"""The reference interpreter: numpy semantics for every op of every qopt level."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import Interpreter, InterpreterFunctions
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from qopt.dialects.queries import entry_function
from qopt.dialects.signature import check_dynamic_sizes
from qopt.dialects.tensors import dtype_of, shape_of
from qopt.errors import QoptError
from qopt.inputs import check_inputs as check_inputs_of
from qopt.interpreters.aten_shape import LAZY_WINDOWS, AtenShapeFunctions
from qopt.interpreters.builtin import BuiltinFunctions
from qopt.interpreters.common import RuntimeSizes
from qopt.interpreters.ml_program import MLProgramFunctions, State
from qopt.registry import resolve

#: The implementation tables of each dialect's ops, as "module:Class" (qopt/registry.py):
#: a table's module is imported only when its dialect is interpreted.
TABLES: dict[str, tuple[str, ...]] = {
    "aten": (
        "qopt.interpreters.aten_elementwise:AtenElementwiseFunctions",
        "qopt.interpreters.aten_nn:AtenNNFunctions",
        "qopt.interpreters.aten_shape:AtenShapeFunctions",
        "qopt.interpreters.aten_reduction:AtenReductionFunctions",
        "qopt.interpreters.aten_layers:AtenLayersFunctions",
        "qopt.interpreters.aten_scalar:AtenScalarFunctions",
    ),
    "quant": ("qopt.interpreters.quant:QuantFunctions",),
    "qfused": ("qopt.interpreters.qfused:QFusedFunctions",),
    "coreml": ("qopt.interpreters.coreml:CoremlFunctions",),
    "vkc": ("qopt.interpreters.vkc:VkcFunctions",),
}


def all_functions(
    calls: bool = True, dialects: Collection[str] | None = None
) -> list[InterpreterFunctions]:
    """The implementation tables of qopt's ops (each implements the ops of one
    dialect: `arith` constants, `ml_program`, `aten`, `quant`, `qfused`, `coreml`,
    `vkc`); with `dialects`, only those of the dialects named (`arith` and
    `ml_program` always), so that a Vulkan compile does not import the CoreML
    dialect's semantics, nor the reverse. With `calls`, xDSL's `func` table too
    (`func.func` as a callable, `func.call`, `func.return`: what running a function
    needs, not what evaluating single ops needs); importing it imports every xDSL
    interpreter table (`xdsl.interpreters` loads them all, ~0.4 s), so the passes that
    only fold ops leave it out."""
    tables: list[InterpreterFunctions] = []
    if calls:
        from xdsl.interpreters.func import FuncFunctions

        tables.append(FuncFunctions())
    tables += [BuiltinFunctions(), MLProgramFunctions()]
    for dialect, references in TABLES.items():
        if dialects is None or dialect in dialects:
            tables += [resolve(reference)() for reference in references]
    return tables


def dialects_of(module: Operation) -> set[str]:
    """The names of the dialects whose ops `module` holds (`aten`, `vkc` ...)."""
    return {op.name.partition(".")[0] for op in module.walk()}


def make_interpreter(
    module: ModuleOp,
    state: State | None = None,
    *,
    calls: bool = True,
    dialects: Collection[str] | None = None,
) -> Interpreter:
    """An interpreter of `module`; its globals' values live in `state` (a fresh
    `State` if None: one call on the initial state). `calls=False`: one that only runs
    single ops (`run_op`: constant folding), without xDSL's `func` table; `dialects`:
    the tables of those dialects only (`all_functions`)."""
    interpreter = Interpreter(module, listeners=(RuntimeSizes(),))
    if state is not None:  # what every state op of the interpreter reads (`state_of`)
        interpreter.set_data(MLProgramFunctions, "state", state)
    for functions in all_functions(calls, dialects):
        if isinstance(functions, MLProgramFunctions):
            functions = MLProgramFunctions(state)
        interpreter.register_implementations(functions)
    if calls and wanted_aten(dialects):  # a whole-function run: sizes as the inputs need
        interpreter.set_data(AtenShapeFunctions, LAZY_WINDOWS, True)
    return interpreter


def wanted_aten(dialects: Collection[str] | None) -> bool:
    return dialects is None or "aten" in dialects


def check_inputs(func: FuncOp, inputs: Sequence[Any]) -> list[np.ndarray]:
    """`inputs` against the function's signature (qopt.inputs: shape, value-keeping casts;
    dynamic dims: one size per symbol, within its range)."""
    signature = []
    for type in func.function_type.inputs.data:
        signature.append((shape_of(type), dtype_of(type)))
    arrays = check_inputs_of(inputs, signature, f"@{func.sym_name.data}")
    check_dynamic_sizes(func, [a.shape for a in arrays])
    return arrays


def verify_for_run(module: ModuleOp) -> None:
    """The interpreter runs only programs whose ops agree with their declared types
    (a module read from a file may not)."""
    try:
        module.verify()
    except VerifyException as e:
        first = (str(e).strip().splitlines() or [""])[0]
        raise QoptError(f"the module does not verify, so it is not run: {first}") from e


def call_function(interpreter: Interpreter, func: FuncOp, arrays: Sequence[Any]) -> tuple[Any, ...]:
    """`interpreter.call_op(func, arrays)`; a QoptError an op raises keeps its own
    message only (xDSL adds the whole module, printed, to it as a note)."""
    try:
        return interpreter.call_op(func, tuple(arrays))
    except QoptError as e:
        if hasattr(e, "__notes__"):
            del e.__notes__
        raise


def interpret(module: ModuleOp, *inputs: Any, function: str = "forward") -> tuple[np.ndarray, ...]:
    """Run `@forward` (or `function`) of `module` on numpy or torch inputs, once, on
    the initial state (`qopt.interpreters.session.Session` keeps state between calls)."""
    verify_for_run(module)
    func = entry_function(module, function)
    arrays = check_inputs(func, inputs)
    interpreter = make_interpreter(module)
    results = call_function(interpreter, func, arrays)
    return tuple(np.asarray(r) for r in results)

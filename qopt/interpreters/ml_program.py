"""numpy semantics of `ml_program` globals: a `State` holds one session's values.

`global_load` gives the global's current value, `global_store` replaces it; a
`State` starts from each global's initial value (zeros where it has none) and
keeps its values between calls of the interpreter it is given to, so a decode
loop runs on the IR as it would on a device.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.dialects.ml_program import GlobalLoadConstantOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)

from qopt.dialects import ml_program as mlp
from qopt.dialects.queries import initial_value
from qopt.dialects.tensors import dtype_of
from qopt.errors import QoptError


class State:
    """The values of a module's globals for one session."""

    def __init__(self, module: ModuleOp):
        self.globals = {g.sym_name.data: g for g in mlp.globals_of(module)}
        self.values: dict[str, np.ndarray] = {}
        self.reset()

    @property
    def names(self) -> list[str]:
        """The mutable globals (the program's state), in declaration order."""
        return [name for name, g in self.globals.items() if g.mutable]

    def reset(self) -> None:
        """Every global back to its initial value."""
        self.values = {name: initial_value(g) for name, g in self.globals.items()}
        for array in self.values.values():
            array.setflags(write=False)

    def read(self, name: str) -> np.ndarray:
        """A copy of the current value of global `name`, in the global's dtype (a
        target's interpreter may hold it in another: the vkc one in 32-bit words)."""
        if name not in self.values:
            known = ", ".join(self.names) or "none"
            raise QoptError(f"the program has no state named {name!r} (its states: {known})")
        return self.values[name].astype(dtype_of(self.globals[name].type))

    def write(self, name: str, value: np.ndarray) -> None:
        array = np.array(value, dtype=self.values[name].dtype, copy=True)
        array.setflags(write=False)
        self.values[name] = array


def state_of(interpreter: Interpreter) -> State:
    """The `State` of `interpreter`'s call or session: the one its `ml_program`
    loads and stores use, and other dialects' state ops (`coreml.read_state`);
    `make_interpreter` puts a session's there, else a fresh one is made here."""

    def fresh() -> State:
        module = interpreter.module
        assert isinstance(module, ModuleOp)
        return State(module)

    return interpreter.get_data(MLProgramFunctions, "state", fresh)


@register_impls
class MLProgramFunctions(InterpreterFunctions):
    """Loads and stores of `state`'s values (a fresh `State` per interpreter unless
    a session passes its own)."""

    def __init__(self, state: State | None = None):
        super().__init__()
        self.state = state

    def _state(self, interpreter: Interpreter) -> State:
        if self.state is None:
            self.state = state_of(interpreter)
        return self.state

    @impl(mlp.GlobalLoadOp)
    def run_load(
        self, interpreter: Interpreter, op: mlp.GlobalLoadOp, args: PythonValues
    ) -> PythonValues:
        return (self._state(interpreter).values[op.global_name.string_value()],)

    @impl(mlp.GlobalStoreOp)
    def run_store(
        self, interpreter: Interpreter, op: mlp.GlobalStoreOp, args: PythonValues
    ) -> PythonValues:
        self._state(interpreter).write(op.global_name.string_value(), args[0])
        return ()

    @impl(GlobalLoadConstantOp)
    def run_load_const(
        self, interpreter: Interpreter, op: GlobalLoadConstantOp, args: PythonValues
    ) -> PythonValues:
        name = op.global_attr
        assert isinstance(name, SymbolRefAttr)
        return (self._state(interpreter).values[name.string_value()],)

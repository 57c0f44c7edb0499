"""A session of a module in the reference interpreter: state kept between calls.

`Session(module).run(*inputs, method=...)` runs one of the module's functions (its
methods: `forward`, or `prefill` and `decode` of an LLM) on the session's state;
the functions' `ml_program.global_store`s update it for the next call. Two
sessions never share state; `reset()` returns to the initial values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp

from qopt import arguments
from qopt.dialects.queries import methods_of
from qopt.dialects.signature import logical_methods, pick_function
from qopt.errors import QoptError
from qopt.inputs import input_shapes
from qopt.interpreters import call_function, check_inputs, make_interpreter, verify_for_run
from qopt.interpreters.ml_program import State


def default_method(methods: Sequence[str], method: str | None) -> str:
    """`method`, or the program's only method, or `forward`; a QoptError if the
    program has several and none is named."""
    if method is not None:
        return method
    if len(methods) == 1:
        return methods[0]
    if "forward" in methods:
        return "forward"
    raise QoptError(
        f"the program has several methods ({', '.join(methods)}): name one with method="
    )


class Session:
    """Calls of `module`'s methods on one state (see the module docstring)."""

    def __init__(self, module: ModuleOp):
        verify_for_run(module)
        self.module = module
        self.functions = {
            op.sym_name.data: op
            for op in module.ops
            if isinstance(op, FuncOp) and op.sym_name.data in methods_of(module)
        }
        self.methods = logical_methods(list(self.functions))
        """The methods (a method compiled at several sizes listed once, by its name)."""
        if not self.methods:
            raise QoptError("the module has no function to run")
        self.state = State(module)
        self._interpreter = make_interpreter(module, self.state)

    @property
    def function_names(self) -> list[str]:
        """The program's functions (a method's size variants each by its own name)."""
        return list(self.functions)

    @property
    def state_names(self) -> list[str]:
        """The names of the program's states (its mutated buffers' qualified names)."""
        return self.state.names

    def _function(self, method: str | None, inputs: Sequence[Any] = ()) -> FuncOp:
        """The function a call of `method` runs (its size variant for `inputs`)."""
        name = pick_function(
            default_method(self.methods, method),
            list(self.functions),
            lambda f: [
                tuple(t.get_shape()) if isinstance(t, TensorType) else ()
                for t in self.functions[f].function_type.inputs.data
            ],
            input_shapes(inputs),
        )
        return self.functions[name]

    def run(self, *inputs: Any, method: str | None = None) -> tuple[np.ndarray, ...]:
        """Run `method` (the only one, or `forward`, by default) on numpy or torch
        inputs; its state updates stay for the next call."""
        func = self._function(arguments.optional_name(method, "method"), inputs)
        arrays = check_inputs(func, inputs)
        results = call_function(self._interpreter, func, arrays)
        return tuple(np.array(r) for r in results)

    def reset(self) -> None:
        """Every state back to its initial value."""
        self.state.reset()

    def read_state(self, name: str) -> np.ndarray:
        """A copy of the current value of state `name`."""
        return self.state.read(arguments.name(name, "read_state's name"))

"""A session of a module in the reference interpreter: state kept between calls.

`Session(module).run(*inputs, method=...)` runs one of the module's functions (its
methods: `forward`, or `prefill` and `decode` of an LLM) on the session's state;
the functions' `ml_program.global_store`s update it for the next call. Two
sessions never share state; `reset()` returns to the initial values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from qopt.errors import QoptError
from qopt.interpreters import check_inputs, make_interpreter, verify_for_run
from qopt.interpreters.ml_program import State


def methods_of(module: ModuleOp) -> list[str]:
    """The module's public functions (its methods), in order."""
    return [
        op.sym_name.data
        for op in module.ops
        if isinstance(op, FuncOp)
        and (op.sym_visibility is None or op.sym_visibility.data == "public")
        and not op.is_declaration
    ]


class Session:
    """Calls of `module`'s methods on one state (see the module docstring)."""

    def __init__(self, module: ModuleOp):
        verify_for_run(module)
        self.module = module
        self.methods = methods_of(module)
        if not self.methods:
            raise QoptError("the module has no function to run")
        self.state = State(module)
        self._interpreter = make_interpreter(module, self.state)

    @property
    def state_names(self) -> list[str]:
        """The names of the program's states (its mutated buffers' qualified names)."""
        return self.state.names

    def _function(self, method: str | None) -> FuncOp:
        if method is None:
            if len(self.methods) == 1:
                method = self.methods[0]
            elif "forward" in self.methods:
                method = "forward"
            else:
                raise QoptError(
                    f"the program has several methods ({', '.join(self.methods)}): "
                    "name one with method="
                )
        if method not in self.methods:
            raise QoptError(
                f"the program has no method {method!r} (its methods: {', '.join(self.methods)})"
            )
        func = next(
            op for op in self.module.ops if isinstance(op, FuncOp) and op.sym_name.data == method
        )
        return func

    def run(self, *inputs: Any, method: str | None = None) -> tuple[np.ndarray, ...]:
        """Run `method` (the only one, or `forward`, by default) on numpy or torch
        inputs; its state updates stay for the next call."""
        func = self._function(method)
        arrays = check_inputs(func, inputs)
        results = self._interpreter.call_op(func, tuple(arrays))
        return tuple(np.array(r) for r in results)

    def reset(self) -> None:
        """Every state back to its initial value."""
        self.state.reset()

    def read_state(self, name: str) -> np.ndarray:
        """A copy of the current value of state `name`."""
        return self.state.read(name)

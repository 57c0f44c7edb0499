"""numpy semantics of the aten shape family."""

from __future__ import annotations

from xdsl.interpreter import InterpreterFunctions, register_impls


@register_impls
class AtenShapeFunctions(InterpreterFunctions):
    pass

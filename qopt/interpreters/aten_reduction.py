"""numpy semantics of the aten reduction family."""

from __future__ import annotations

from xdsl.interpreter import InterpreterFunctions, register_impls


@register_impls
class AtenReductionFunctions(InterpreterFunctions):
    pass

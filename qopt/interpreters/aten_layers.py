"""numpy semantics of the aten layers family."""

from __future__ import annotations

from xdsl.interpreter import InterpreterFunctions, register_impls


@register_impls
class AtenLayersFunctions(InterpreterFunctions):
    pass

"""The xDSL context qopt parses and prints in."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func

from qopt.dialects import get_all_dialects
from qopt.resources import store


def register_qopt_dialects(ctx: Context) -> None:
    store()
    for name, factory in get_all_dialects().items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)


def make_context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, Arith):
        if dialect.name not in ctx.registered_dialect_names:
            ctx.load_dialect(dialect)
    register_qopt_dialects(ctx)
    return ctx

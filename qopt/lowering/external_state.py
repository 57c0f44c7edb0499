"""Program state as extra inputs and outputs (ExecuTorch's CoreML behaviour below iOS18).

Core ML states need iOS18. For an older target a program's mutable `ml_program`
globals (its KV caches) can instead travel through every call: each function that
reads or writes global `@g` takes its current value as an extra last input named
after it, and each function that writes it returns the new value as an extra last
output named `<g>_out`; the caller keeps the values between calls (starting from the
global's initial value) and passes them back in. The globals go away, so the
program is stateless. The pass `externalize-states` runs it; `qopt-coreml{states=io}`
(`qopt.compile(..., states="io")`) lists it before convert-to-coreml, and
`convert-to-coreml{states=io}` run alone runs it first itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from qopt.dialects import ml_program as mlp
from qopt.dialects.signature import output_names, set_output_names


def state_input_name(name: str) -> str:
    """The input a state travels in: its name with every character that is not a
    letter, digit or `_` as `_` (`layers.0.attention.k_cache` ->
    `layers_0_attention_k_cache`)."""
    return re.sub(r"\W", "_", name)


def externalize_states(module: ModuleOp) -> list[str]:
    """Make `module`'s mutable globals inputs and outputs of the functions using them
    (see the module docstring); returns the states' names, in declaration order."""
    mutable = [g for g in mlp.globals_of(module) if g.mutable]
    names = [g.sym_name.data for g in mutable]
    if not mutable:
        return names
    for func in [op for op in module.ops if isinstance(op, FuncOp)]:
        loads: dict[str, list[mlp.GlobalLoadOp]] = {}
        stores: dict[str, mlp.GlobalStoreOp] = {}
        for op in func.walk():
            if isinstance(op, mlp.GlobalLoadOp):
                loads.setdefault(op.global_name.string_value(), []).append(op)
            elif isinstance(op, mlp.GlobalStoreOp):
                stores[op.global_name.string_value()] = op
        used = [g for g in mutable if g.sym_name.data in loads or g.sym_name.data in stores]
        if not used:
            continue
        block = func.body.block
        ret = block.last_op
        assert isinstance(ret, ReturnOp)
        old_names = output_names(func)
        new_outputs = list(ret.arguments)
        out_names = list(old_names) if old_names is not None else None
        arg_attrs = list(func.arg_attrs.data) if func.arg_attrs is not None else None
        for g in used:
            name = g.sym_name.data
            arg = block.insert_arg(g.type, len(block.args))
            arg.name_hint = state_input_name(name)
            if arg_attrs is not None:
                arg_attrs.append(DictionaryAttr({}))
            for load in loads.get(name, []):
                load.result.replace_all_uses_with(arg)
                Rewriter.erase_op(load)
            store = stores.get(name)
            if store is not None:
                new_outputs.append(store.value)
                Rewriter.erase_op(store)
                if out_names is not None:
                    out_names.append(f"{state_input_name(name)}_out")
        Rewriter.replace_op(ret, ReturnOp(*new_outputs))
        func.function_type = FunctionType.from_lists(
            [a.type for a in block.args], [v.type for v in new_outputs]
        )
        if arg_attrs is not None:
            func.arg_attrs = ArrayAttr(arg_attrs)
        if out_names is not None:
            set_output_names(func, out_names)
    for g in mutable:
        Rewriter.erase_op(g)
    return names


@dataclass(frozen=True)
class ExternalizeStatesPass(ModulePass):
    """The program's mutable globals as extra last inputs and outputs of the functions
    that read or write them (see the module docstring): a stateless program whose
    caller keeps the states."""

    name = "externalize-states"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        externalize_states(op)


__all__ = ["ExternalizeStatesPass", "externalize_states", "state_input_name"]

"""`name-outputs{names=logits,cache}`: the names a target gives the program's outputs.

The `.pt2` frontend records the exported program's output names on each function
(`qopt.output_names`, from its graph signature); this pass replaces them by the
names given (`output_<i>` for outputs past the last one named), so that
`qopt-coreml{output-names=...}` on the command line names a package's outputs as
`qopt.compile(..., output_names=[...])` does. It names the outputs of a
single-method program only (a program of several methods names each method's
outputs as recorded at import). It changes no value: only the recorded names.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from qopt.dialects.signature import set_output_names
from qopt.errors import QoptError


@dataclass(frozen=True)
class NameOutputsPass(ModulePass):
    """Record `names` as the output names of the program's only method."""

    name = "name-outputs"

    names: tuple[str, ...] = ()
    """The outputs' names, in order (none: the pass changes nothing)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.names:
            return
        methods = [
            f
            for f in op.ops
            if isinstance(f, FuncOp)
            and (f.sym_visibility is None or f.sym_visibility.data == "public")
            and not f.is_declaration
        ]
        if len(methods) != 1:
            shown = ", ".join(f.sym_name.data for f in methods) or "none"
            raise QoptError(
                f"name-outputs: output names name the outputs of a single-method program; "
                f"this one has {len(methods)} methods ({shown}), each naming its outputs "
                "as recorded at import"
            )
        (func,) = methods
        count = len(func.function_type.outputs)
        names = [str(n) for n in self.names]
        if len(names) > count or not all(names) or len(set(names)) != len(names):
            raise QoptError(
                f"name-outputs: {len(names)} names {names} for the {count} output(s) of "
                f"@{func.sym_name.data}: give at most one distinct, non-empty name per output"
            )
        set_output_names(func, names + [f"output_{i}" for i in range(len(names), count)])


__all__ = ["NameOutputsPass"]

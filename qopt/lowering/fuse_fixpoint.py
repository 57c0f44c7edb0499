"""`fuse-quant-fixpoint`: fuse-quant and fold-constants again, alternately, until
neither changes the module.

fuse-quant runs before fold-constants (a fold would turn torchao's `cast` of
codebook codes into wider constants before the pattern sees them), but a fold can
make a quantized value input-independent: PT2E quantizes the rotary tables that
`transformers` decoders build from `arange` at run time, and those become
constants only after fold-constants. A `quant.quantize` of a constant is then
left for the target, which cannot run it ("quantizing a constant is not
supported"). This pass, which the pipelines run right after fold-constants, runs
fuse-quant again (its `FoldConstantQuantize` folds such quantizes to their
integers, and the patterns fuse what the new constants complete), then
fold-constants again, until a round leaves the module as it was (the same ops,
counted by name). Each run is a phase of the active compile report; the rounds
after the first record only what they fuse, so the fusion totals count each quant
op once.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from qopt.errors import QoptError
from qopt.lowering.fold_constants import FoldConstantsPass
from qopt.lowering.fuse_quant import FuseQuantPass
from qopt.report import phase

MAX_ROUNDS = 16
"""A fixed point takes one or two rounds on every model seen; more is a bug."""


def census(module: ModuleOp) -> collections.Counter[str]:
    """The module's ops counted by name: fuse-quant and fold-constants only replace
    and erase ops, so a run that changed the module changes this."""
    return collections.Counter(op.name for op in module.walk())


@dataclass(frozen=True)
class FuseQuantFixpointPass(ModulePass):
    """fuse-quant, fold-constants, fuse-quant, ... until a run changes nothing."""

    name = "fuse-quant-fixpoint"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        passes: list[ModulePass] = [FuseQuantPass(rerun=True), FoldConstantsPass()]
        for round_ in range(MAX_ROUNDS):
            for sub_pass in passes:
                before = census(op)
                with phase(sub_pass.name):  # a phase of the active compile report, if any
                    sub_pass.apply(ctx, op)
                    op.verify()
                if census(op) == before:
                    return
            if round_ == MAX_ROUNDS - 1:
                raise QoptError(
                    f"{self.name}: fuse-quant and fold-constants still change the module "
                    f"after {MAX_ROUNDS} rounds (a bug: please report it with the model)"
                )

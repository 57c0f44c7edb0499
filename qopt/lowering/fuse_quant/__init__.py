"""`fuse-quant`: Q/DQ and codebook patterns -> `qfused` ops (the mid level).

One pattern family per file, as ExecuTorch's Vulkan `patterns/` registry; the
patterns run in one greedy worklist walk (no rescans of the module per match).
Quant ops that match nothing stay and stay correct; with `report=true` the pass
prints one line per unfused quant op with its location and the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriteWalker,
    RewritePattern,
)

from qopt.lowering.fuse_quant.report import FusionLog
from qopt.resources import require_weights


def patterns(log: FusionLog) -> list[RewritePattern]:
    from qopt.lowering.fuse_quant import conv, elementwise, embedding, fold
    from qopt.lowering.fuse_quant.linear import FuseQuantizedLinear

    return [
        FuseQuantizedLinear(log),
        *conv.patterns(log),
        *embedding.patterns(log),
        *elementwise.patterns(log),
        *fold.patterns(log),
    ]


@dataclass(frozen=True)
class FuseQuantPass(ModulePass):
    name = "fuse-quant"

    report: bool = False
    """Print one line per quant op left unfused, with its location and why."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_weights(op, self.name)
        log = self.run(op)
        if self.report:
            log.print_unfused(op)

    @staticmethod
    def run(module: ModuleOp, log: FusionLog | None = None) -> FusionLog:
        """Fuse `module` in place; return the log (reasons, replaced values)."""
        log = log if log is not None else FusionLog()
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns(log)), apply_recursively=True
        )
        walker.rewrite_module(module)
        return log

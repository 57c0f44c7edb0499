"""`fuse-quant`: Q/DQ and codebook patterns -> `qfused` ops (the mid level).

One pattern family per file, as ExecuTorch's Vulkan `patterns/` registry; the
patterns run in one greedy worklist walk (no rescans of the module per match).
Quant ops that match nothing stay and stay correct; with `report=true` the pass
prints its totals (fused ops by kernel name; quant ops left unfused of those
there were) and the ops left, grouped by reason, each with its location.
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

from qopt.lowering.fuse_quant.report import FusionLog, kernel_counts, quant_op_count
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
    """Print (on stderr) the totals, fused ops by kernel name and the quant ops left
    of those there were, then the quant ops left grouped by reason."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_weights(op, self.name)
        quant_before, kernels_before = quant_op_count(op), kernel_counts(op)
        log = self.run(op)
        if self.report:
            log.print_report(op, quant_before, kernels_before)

    @staticmethod
    def run(module: ModuleOp, log: FusionLog | None = None) -> FusionLog:
        """Fuse `module` in place; return the log (reasons, replaced values)."""
        log = log if log is not None else FusionLog()
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns(log)), apply_recursively=True
        )
        walker.rewrite_module(module)
        return log

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

from qopt.dialects.weights import weight_summary
from qopt.errors import QoptError
from qopt.lowering.fuse_quant import conv, elementwise, embedding, fold, layout
from qopt.lowering.fuse_quant.linear import FuseQuantizedLinear
from qopt.lowering.fuse_quant.report import FusionLog, kernel_counts, quant_op_count
from qopt.report import active_report, warn
from qopt.resources import attach, require_weights, weights_of


def patterns(log: FusionLog) -> list[RewritePattern]:
    return [
        FuseQuantizedLinear(log),
        *conv.patterns(log),
        *embedding.patterns(log),
        *elementwise.patterns(log),
        *fold.patterns(log),
        *layout.patterns(log),
    ]


@dataclass(frozen=True)
class FuseQuantPass(ModulePass):
    name = "fuse-quant"

    report: bool = False
    """Print (on stderr) the totals, fused ops by kernel name and the quant ops left
    of those there were, then the quant ops left grouped by reason."""

    rerun: bool = False
    """A later run over a module fuse-quant has seen (fuse-quant-fixpoint's): the
    compile report counts only what it fuses, not the quant ops again."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_weights(op, self.name)
        quant_before, kernels_before = quant_op_count(op), kernel_counts(op)
        log = self.run(op)
        log.report_to(op, quant_before, kernels_before, rerun=self.rerun)
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


def warn_unfused(module: ModuleOp, pass_name: str) -> None:
    """Warn (qopt.report.warn) when `module` still has quant patterns that fuse-quant
    would fuse: converted unfused they run as standalone dequantize + float ops, a
    bundle or package several times larger and slower (the cliff of a pipeline that
    forgot fuse-quant). Tried on a clone with a copy of the weight store, so the
    module and its blob names stay as they are."""
    from xdsl.utils.exceptions import VerifyException

    if quant_op_count(module) == 0:
        return
    trial = attach(module.clone(), weights_of(module).copy())
    try:
        FuseQuantPass.run(trial)
    except (QoptError, VerifyException):  # fuse-quant would refuse it: nothing to suggest
        return
    fusable = kernel_counts(trial) - kernel_counts(module)
    if not fusable:
        return
    kernels = ", ".join(f"{name} x{n}" for name, n in sorted(fusable.items()))
    warn(
        f"{pass_name}: {fusable.total()} quantized pattern(s) are not fused ({kernels}): "
        "converted as they are, they run as separate dequantize and float ops (larger "
        "weights, slower); run fuse-quant first (-p fuse-quant,...) or the whole pipeline "
        f"({'qopt-coreml' if 'coreml' in pass_name else 'qopt-vulkan'})"
    )


def check_mid_level(module: ModuleOp, pass_name: str) -> None:
    """What a conversion to a target notes first: the cliff warning of
    `warn_unfused`, and the weights it is given (compressed against float) in the
    active compile report."""
    warn_unfused(module, pass_name)
    report = active_report()
    if report is not None:
        report.record_weights(weight_summary(module))

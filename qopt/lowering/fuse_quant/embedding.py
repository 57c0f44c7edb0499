"""Quantized embedding: `aten.embedding(W, indices)` whose table W is dequantized
from constants: affine per row or per group (`[1, D]` / `[1, G]`, symmetric or
with a zero point) or a codebook (LUT, looking through torchao's ui8 -> i32 cast
of the codes).

ExecuTorch: `embedding_q4gsw` (torchao `dequantize_affine` -> embedding and
`quantized_decomposed.embedding_4bit`, docs/fusion-patterns.md); ET-CoreML lowers the
codebook form to `constexpr_lut_to_dense` -> `gather`.
"""

from __future__ import annotations

from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from qopt.dialects import qfused
from qopt.dialects.aten import nn
from qopt.lowering.fuse_quant.linear import check_weight_block, with_kernel_name
from qopt.lowering.fuse_quant.match import Reject, match_weight
from qopt.lowering.fuse_quant.report import FusionLog


class FuseQuantizedEmbedding(RewritePattern):
    """embedding(DQ(const data) | dequantize_codebook(const codes), indices)."""

    def __init__(self, log: FusionLog):
        self.log = log

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.EmbeddingOp, rewriter: PatternRewriter, /) -> None:
        weight = match_weight(op.weight, rank=2)
        if isinstance(weight, Reject):
            if weight.op is not None:
                self.log.reject(weight, op)
            return
        if (bad := check_weight_block(weight, op)) is not None:
            self.log.reject(bad, op)
            return

        data, scale, zero_point = weight.materialize()
        fused = qfused.EmbeddingOp.build(
            operands=[op.indices, data, scale, zero_point],
            result_types=[op.result.type],
            properties={"weight_scheme": weight.scheme},
        )
        with_kernel_name(fused)
        fused.location = op.location
        rewriter.insert(weight.new_ops, InsertPoint.before(op))
        self.log.record(fused.result, op.result)
        rewriter.replace(op, [fused], [fused.result])


def patterns(log: FusionLog) -> list[RewritePattern]:
    return [FuseQuantizedEmbedding(log)]

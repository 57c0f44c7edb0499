"""Quantized convolution: `aten.conv2d` whose weight is dequantized from constants
(4-D, affine, block `[1, ...]`: per output channel `[1, IC/g, KH, KW]` for PT2E,
per (OC, kh, kw) `[1, IC, 1, 1]` for torchao), with a float input (weight-only)
or a statically quantized input, and an optional [relu | clamp] -> quantize on
its output.

ExecuTorch: `q8ta_conv2d` / `q8ta_conv2d_pw` / `q8ta_conv2d_dw` (formerly
`conv2d_q8ta_q8csw_q8to`), runtime-only `conv2d_q8ta_q8csw` and `conv2d_q8csw`
(docs/fusion-patterns.md). qopt names the kernel from the schemes
(`conv2d_q8ta_q8csw_q8to`); `qfused.Conv2dOp.et_aliases()` gives the ET names.
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from qopt.dialects import qfused
from qopt.dialects.aten import nn
from qopt.lowering.fuse_quant.linear import (
    fusable_output,
    require_symmetric,
    scheme_properties,
    split_input,
    with_kernel_name,
)
from qopt.lowering.fuse_quant.match import (
    DynamicInput,
    Reject,
    WeightMatch,
    match_input,
    match_weight,
)
from qopt.lowering.fuse_quant.report import FusionLog


def check_conv_weight(weight: WeightMatch) -> Reject | None:
    """Conv kernels take affine weights quantized per output channel (or finer)."""
    if isinstance(weight.scheme, qfused.LutWeightAttr):
        return Reject("LUT (codebook) weights are not supported on conv2d", weight.source)
    block = weight.scheme.block_size
    if block[0] != 1:
        return Reject(
            f"conv weight block {list(block)} spans several output channels", weight.source
        )
    return None


class FuseQuantizedConv2d(RewritePattern):
    """conv2d(float | static Q/DQ input, DQ(const weight)) [-> relu | clamp -> Q]."""

    def __init__(self, log: FusionLog):
        self.log = log

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.Conv2dOp, rewriter: PatternRewriter, /) -> None:
        weight = match_weight(op.weight, rank=4)
        if isinstance(weight, Reject):
            if weight.op is not None:
                self.log.reject(weight, op)
            return
        if (bad := check_conv_weight(weight)) is not None:
            self.log.reject(bad, op)
            return
        matched = match_input(op.input)
        if isinstance(matched, Reject):
            self.log.reject(matched, op)
            return
        if isinstance(matched, DynamicInput):
            activation_dq = op.input.owner
            assert isinstance(activation_dq, Operation)
            self.log.reject(
                Reject(
                    "dynamic activation quantization is not supported on conv2d "
                    "(static per-tensor or weight-only only)",
                    activation_dq,
                ),
                op,
            )
            return
        x, act = split_input(matched)
        if (asymmetric := require_symmetric(weight, act)) is not None:
            self.log.reject(asymmetric, op)
            return
        output = fusable_output(op, self.log)

        data, scale, zero_point = weight.materialize()
        result_type = output.quantize.output.type if output is not None else op.result.type
        properties = scheme_properties(weight, act, output)
        properties.update(
            stride=op.stride, padding=op.padding, dilation=op.dilation, groups=op.groups
        )
        fused = qfused.Conv2dOp.build(
            operands=[x, data, scale, zero_point, op.bias],
            result_types=[result_type],
            properties=properties,
        )
        with_kernel_name(fused)
        fused.location = op.location
        replaced = output.quantize if output is not None else op
        rewriter.insert(weight.new_ops, InsertPoint.before(op))
        self.log.record(fused.result, replaced.results[0])
        rewriter.replace(replaced, [fused], [fused.result])


def patterns(log: FusionLog) -> list[RewritePattern]:
    return [FuseQuantizedConv2d(log)]

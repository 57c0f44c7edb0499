"""Quantized linear: `aten.linear` whose weight is dequantized from constants
(affine or codebook), with a float, statically or dynamically quantized input,
and an optional [relu | clamp] -> quantize on its output.

ExecuTorch: `linear_q4gsw`, `linear_qcs4w`, `_weight_int8pack_mm`,
`linear_q8ta_q8csw`, `q8ta_linear(_gemv)`, `linear_dq8ca_q4gsw` (docs/fusion-patterns.md).
"""

from __future__ import annotations

from xdsl.dialects.builtin import FloatAttr, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from qopt.dialects import qfused
from qopt.dialects.aten import nn
from qopt.dialects.tensors import shape_of
from qopt.lowering.fuse_quant.match import (
    DynamicInput,
    OutputMatch,
    Reject,
    StaticInput,
    WeightMatch,
    match_input,
    match_output,
    match_weight,
)
from qopt.lowering.fuse_quant.report import FusionLog


def check_weight_block(weight: WeightMatch, anchor: Operation) -> Reject | None:
    """Affine linear/embedding weights are quantized per output row: block [1, G]."""
    if not isinstance(weight.scheme, qfused.AffineWeightAttr):
        return None
    block = weight.scheme.block_size
    k = shape_of(weight.data)[-1]
    if block[0] != 1:
        return Reject(f"weight block {list(block)} spans several output rows", weight.source)
    if k % block[1]:
        return Reject(f"group size {block[1]} does not divide K = {k}", weight.source)
    return None


def scheme_properties(
    weight: WeightMatch,
    act: Attribute | None,
    output: OutputMatch | None,
) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {"weight_scheme": weight.scheme}
    if act is not None:
        props["act"] = act
    if output is not None:
        props["requant"] = output.requant
        if output.clamp_min is not None:
            props["clamp_min"] = FloatAttr(output.clamp_min, 64)
        if output.clamp_max is not None:
            props["clamp_max"] = FloatAttr(output.clamp_max, 64)
    return props


def with_kernel_name(op: qfused.QFusedOp) -> qfused.QFusedOp:
    op.properties["kernel"] = StringAttr(op.kernel_name())
    return op


def require_symmetric(weight: WeightMatch, act: Attribute | None) -> Reject | None:
    """Quantized-activation kernels fold the weight zero point away: it must be 0."""
    if act is None or weight.zero_point is None:
        return None
    return Reject(
        "quantized-activation kernels need symmetric weights, but the weight has a "
        "nonzero zero point",
        weight.source,
    )


def fusable_output(anchor: Operation, log: FusionLog) -> OutputMatch | None:
    """The anchor's output requantization, logging why when one is there but unfusable."""
    output = match_output(anchor.results[0])
    if isinstance(output, Reject):
        log.reject(output, anchor)
        return None
    return output


def split_input(
    matched: StaticInput | DynamicInput | SSAValue,
) -> tuple[SSAValue, Attribute | None]:
    if isinstance(matched, StaticInput | DynamicInput):
        return matched.value, matched.act
    return matched, None


class FuseQuantizedLinear(RewritePattern):
    def __init__(self, log: FusionLog):
        self.log = log

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.LinearOp, rewriter: PatternRewriter, /) -> None:
        weight = match_weight(op.weight)
        if isinstance(weight, Reject):
            if weight.op is not None:
                self.log.reject(weight, op)
            return
        if (bad := check_weight_block(weight, op)) is not None:
            self.log.reject(bad, op)
            return
        matched = match_input(op.input)
        if isinstance(matched, Reject):
            self.log.reject(matched, op)
            return
        x, act = split_input(matched)
        if (asymmetric := require_symmetric(weight, act)) is not None:
            self.log.reject(asymmetric, op)
            return
        output = fusable_output(op, self.log)

        data, scale, zero_point = weight.materialize()
        result_type = output.quantize.output.type if output is not None else op.result.type
        fused = qfused.LinearOp.build(
            operands=[x, data, scale, zero_point, op.bias],
            result_types=[result_type],
            properties=scheme_properties(weight, act, output),
        )
        with_kernel_name(fused)
        fused.location = op.location
        replaced = output.quantize if output is not None else op
        rewriter.insert(weight.new_ops, InsertPoint.before(op))
        self.log.record(fused.result, replaced.results[0])
        rewriter.replace(replaced, [fused], [fused.result])

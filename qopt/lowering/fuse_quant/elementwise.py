"""Quantized add: `aten.add(DQ a, DQ b)` with static per-tensor parameters on both
operands, then [relu | clamp] -> quantize (mandatory, as in ExecuTorch).

ExecuTorch: `q8ta_add` (docs/fusion-patterns.md). Each operand follows `match_input`:
the float input of a matching quantize (quantized in the kernel) or the integer
tensor the dequantize reads. A fused relu is applied explicitly
(`clamp_min = 0.0`), never left to the output zero point (docs/fusion-patterns.md).
"""

from __future__ import annotations

from xdsl.dialects.builtin import FloatAttr, TensorType, f32
from xdsl.ir import Attribute, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from qopt.dialects import qfused, quant
from qopt.dialects.aten import elementwise as ew
from qopt.dialects.tensors import elem_of
from qopt.lowering.fuse_quant.linear import with_kernel_name
from qopt.lowering.fuse_quant.match import (
    OutputMatch,
    Reject,
    StaticInput,
    match_input,
    match_output,
    single_use,
)
from qopt.lowering.fuse_quant.report import FusionLog


def _static_operand(value: SSAValue, other: SSAValue) -> StaticInput | Reject:
    """One operand of the add: a statically quantized (per-tensor) activation."""
    dq = value.owner
    if not isinstance(dq, quant.DequantizeOp):
        other_dq = other.owner
        return Reject(
            "the other operand of aten.add is not dequantized (q8ta_add needs both)",
            other_dq if isinstance(other_dq, quant.DequantizeOp) else None,
        )
    matched = match_input(value)
    if isinstance(matched, Reject):
        return matched
    if not isinstance(matched, StaticInput):
        return Reject("quantized add needs static per-tensor parameters, not dynamic ones", dq)
    return matched


def _add_properties(
    lhs: StaticInput, rhs: StaticInput, alpha: FloatAttr | None, output: OutputMatch
) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {
        "lhs_act": lhs.act,
        "rhs_act": rhs.act,
        "requant": output.requant,
    }
    if alpha is not None:
        props["alpha"] = alpha
    if output.clamp_min is not None:
        props["clamp_min"] = FloatAttr(output.clamp_min, 64)
    if output.clamp_max is not None:
        props["clamp_max"] = FloatAttr(output.clamp_max, 64)
    return props


class FuseQuantizedAdd(RewritePattern):
    """add(DQ a, DQ b) -> [relu | clamp] -> Q  =>  qfused.add (q8ta_add)."""

    def __init__(self, log: FusionLog):
        self.log = log

    def _reject(self, reason: Reject, op: ew.AddOp) -> None:
        """Attach the reason to every dequantized operand (the quant ops left)."""
        if reason.op is not None:
            self.log.reject(reason, op)
            return
        for operand in (op.lhs, op.rhs):
            if isinstance(dq := operand.owner, quant.DequantizeOp):
                self.log.reject(Reject(reason.reason, dq), op)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.AddOp, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op.lhs.owner, quant.DequantizeOp) and not isinstance(
            op.rhs.owner, quant.DequantizeOp
        ):
            return  # a float add: nothing quantized around it
        lhs = _static_operand(op.lhs, op.rhs)
        if isinstance(lhs, Reject):
            self._reject(lhs, op)
            return
        rhs = _static_operand(op.rhs, op.lhs)
        if isinstance(rhs, Reject):
            self._reject(rhs, op)
            return
        result_type = op.result.type
        if not isinstance(result_type, TensorType) or elem_of(op.result) != f32:
            self._reject(Reject(f"quantized add computes in f32, not {result_type}"), op)
            return
        if single_use(op.result) is None:
            self._reject(Reject("the add's result has several users (requant not fused)"), op)
            return
        output = match_output(op.result)
        if output is None:
            self._reject(
                Reject("the add's result is not requantized (q8ta_add needs an output quantize)"),
                op,
            )
            return
        if isinstance(output, Reject):
            self._reject(output, op)
            return

        fused = qfused.AddOp.build(
            operands=[lhs.value, rhs.value],
            result_types=[output.quantize.output.type],
            properties=_add_properties(lhs, rhs, op.alpha, output),
        )
        with_kernel_name(fused)
        fused.location = op.location
        self.log.record(fused.result, output.quantize.output)
        rewriter.replace(output.quantize, [fused], [fused.result])


def patterns(log: FusionLog) -> list[RewritePattern]:
    return [FuseQuantizedAdd(log)]

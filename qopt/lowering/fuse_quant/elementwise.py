"""Quantized add and mul: `aten.add(DQ a, DQ b)` / `aten.mul(DQ a, DQ b)` with static
per-tensor parameters on both operands, then [relu | clamp] -> quantize (mandatory,
as in ExecuTorch).

ExecuTorch: `q8ta_add` (docs/fusion-patterns.md); the mul is the same pattern (XNNPACK's
quantizer annotates `mul` as it does `add`: a squeeze-excitation's gate times its
feature map). Each operand follows `match_input`:
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


def _static_operand(value: SSAValue, other: SSAValue, name: str) -> StaticInput | Reject:
    """One operand of the add / mul: a statically quantized (per-tensor) activation."""
    dq = value.owner
    if not isinstance(dq, quant.DequantizeOp):
        other_dq = other.owner
        return Reject(
            f"the other operand of aten.{name} is not dequantized (q8ta_{name} needs both)",
            other_dq if isinstance(other_dq, quant.DequantizeOp) else None,
        )
    matched = match_input(value)
    if isinstance(matched, Reject):
        return matched
    if not isinstance(matched, StaticInput):
        return Reject(f"quantized {name} needs static per-tensor parameters, not dynamic ones", dq)
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


class _FuseQuantizedBinary(RewritePattern):
    """add / mul(DQ a, DQ b) -> [relu | clamp] -> Q  =>  qfused.add / qfused.mul."""

    kind = "add"

    def __init__(self, log: FusionLog):
        self.log = log

    def _reject(self, reason: Reject, op: ew.AddOp | ew.MulOp) -> None:
        """Attach the reason to every dequantized operand (the quant ops left)."""
        if reason.op is not None:
            self.log.reject(reason, op)
            return
        for operand in (op.lhs, op.rhs):
            if isinstance(dq := operand.owner, quant.DequantizeOp):
                self.log.reject(Reject(reason.reason, dq), op)

    def fuse(self, op: ew.AddOp | ew.MulOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.lhs.owner, quant.DequantizeOp) and not isinstance(
            op.rhs.owner, quant.DequantizeOp
        ):
            return  # a float op: nothing quantized around it
        lhs = _static_operand(op.lhs, op.rhs, self.kind)
        if isinstance(lhs, Reject):
            self._reject(lhs, op)
            return
        rhs = _static_operand(op.rhs, op.lhs, self.kind)
        if isinstance(rhs, Reject):
            self._reject(rhs, op)
            return
        result_type = op.result.type
        if not isinstance(result_type, TensorType) or elem_of(op.result) != f32:
            self._reject(Reject(f"quantized {self.kind} computes in f32, not {result_type}"), op)
            return
        if single_use(op.result) is None:
            self._reject(
                Reject(f"the {self.kind}'s result has several users (requant not fused)"), op
            )
            return
        output = match_output(op.result)
        if output is None:
            self._reject(
                Reject(
                    f"the {self.kind}'s result is not requantized "
                    f"(q8ta_{self.kind} needs an output quantize)"
                ),
                op,
            )
            return
        if isinstance(output, Reject):
            self._reject(output, op)
            return

        if isinstance(op, ew.AddOp):
            fused = qfused.AddOp.build(
                operands=[lhs.value, rhs.value],
                result_types=[output.quantize.output.type],
                properties=_add_properties(lhs, rhs, op.alpha, output),
            )
        else:
            fused = qfused.MulOp.build(
                operands=[lhs.value, rhs.value],
                result_types=[output.quantize.output.type],
                properties=_add_properties(lhs, rhs, None, output),
            )
        with_kernel_name(fused)
        fused.location = op.location
        self.log.record(fused.result, output.quantize.output)
        rewriter.replace(output.quantize, [fused], [fused.result])


class FuseQuantizedAdd(_FuseQuantizedBinary):
    """add(DQ a, DQ b) -> [relu | clamp] -> Q  =>  qfused.add (q8ta_add)."""

    kind = "add"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.AddOp, rewriter: PatternRewriter, /) -> None:
        self.fuse(op, rewriter)


class FuseQuantizedMul(_FuseQuantizedBinary):
    """mul(DQ a, DQ b) -> [relu | clamp] -> Q  =>  qfused.mul."""

    kind = "mul"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.MulOp, rewriter: PatternRewriter, /) -> None:
        self.fuse(op, rewriter)


def patterns(log: FusionLog) -> list[RewritePattern]:
    return [FuseQuantizedAdd(log), FuseQuantizedMul(log)]

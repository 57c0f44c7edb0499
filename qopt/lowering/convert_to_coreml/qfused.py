"""convert-to-coreml rules for the qfused ops (qopt/dialects/qfused.py): the
weights stay compressed (constexpr ops), static activations become quantize /
dequantize, dynamic ones are torch's quantizers in MIL float ops (see the package
docstring)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import SSAValue

from qopt.dialects import coreml, qfused
from qopt.dialects.tensors import shape_of
from qopt.lowering.convert_to_coreml.lowering import Lowering, RuleTable, int_attr

RULES = RuleTable()


@RULES(qfused.LinearOp)
def _qlinear(lw: Lowering, op: qfused.LinearOp) -> Sequence[SSAValue]:
    x = lw.fused_input(op, op.input, op.act)
    w = lw.fused_weight(op)
    y = lw.linear(x, w, op.bias, TensorType(f32, shape_of(op.result)))
    return [lw.fused_output(op, y)]


@RULES(qfused.Conv2dOp)
def _qconv(lw: Lowering, op: qfused.Conv2dOp) -> Sequence[SSAValue]:
    x = lw.fused_input(op, op.input, op.act)
    w = lw.fused_weight(op)
    y = lw.conv(op, x, w, op.bias, TensorType(f32, shape_of(op.result)))
    return [lw.fused_output(op, y)]


@RULES(qfused.EmbeddingOp)
def _qembedding(lw: Lowering, op: qfused.EmbeddingOp) -> Sequence[SSAValue]:
    w = lw.fused_weight(op)
    out = TensorType(f32, shape_of(op.result))
    return [lw.build(coreml.GatherOp, [w, lw.to_int32(op.indices)], out, axis=int_attr(0))]


@RULES(qfused.AddOp)
def _qadd(lw: Lowering, op: qfused.AddOp) -> Sequence[SSAValue]:
    a = lw.fused_input(op, op.lhs, op.lhs_act)
    b = lw.fused_input(op, op.rhs, op.rhs_act)
    if op.alpha is not None and op.alpha.value.data != 1.0:
        b = lw.build(coreml.MulOp, [b, lw.scalar(op.alpha.value.data, b)], b.type)
    y = lw.build(coreml.AddOp, [a, b], TensorType(f32, shape_of(op.result)))
    return [lw.fused_output(op, y)]


@RULES(qfused.MulOp)
def _qmul(lw: Lowering, op: qfused.MulOp) -> Sequence[SSAValue]:
    a = lw.fused_input(op, op.lhs, op.lhs_act)
    b = lw.fused_input(op, op.rhs, op.rhs_act)
    y = lw.build(coreml.MulOp, [a, b], TensorType(f32, shape_of(op.result)))
    return [lw.fused_output(op, y)]

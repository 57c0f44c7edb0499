"""The module's constants as weights, for the compile report: those a quantized op
uses (a qfused op's weight, a dequantize's data, at their bit widths), the float
weights of linear / conv / embedding / matmul ops, and everything else
(`qopt.report.CompileReport.record_weights` records the summary)."""

from __future__ import annotations

from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import FixedBitwidthType, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from qopt.dialects import qfused, quant
from qopt.dialects.tensors import dtype_of, elem_of, numel, shape_of
from qopt.errors import where
from qopt.report import WEIGHT_OPS, FloatWeight, WeightSummary


def _stored_bytes(value: SSAValue, bits: int | None = None) -> int:
    if bits is None:
        elem = elem_of(value)
        bits = elem.bitwidth if isinstance(elem, FixedBitwidthType) else 32
    return -(-numel(value) * bits // 8)


def _compressed_operands(op: Operation) -> list[tuple[SSAValue, int | None]]:
    """The weight operands of a quantized op, the data with its bit width (None: the
    stored element's)."""
    if isinstance(op, qfused.QFusedOp):
        scheme = op.properties.get("weight_scheme")
        weight = getattr(op, "weight", None)
        if scheme is None or not isinstance(weight, SSAValue):
            return []
        if isinstance(scheme, qfused.AffineWeightAttr):
            bits = scheme.bits.data
        elif isinstance(scheme, qfused.LutWeightAttr):
            bits = scheme.nbits.data
        else:
            return []
        params = (getattr(op, "scale", None), getattr(op, "zero_point", None))
        return [(weight, bits), *((v, None) for v in params if isinstance(v, SSAValue))]
    if isinstance(op, quant.DequantizeOp):
        data = op.operands[0]
        bits = qfused.bits_for_range(op.qmin.value.data, op.qmax.value.data)
        return [(data, bits), *((v, None) for v in op.operands[1:])]
    if isinstance(op, quant.DequantizeCodebookOp):
        return [(op.codes, op.nbits.value.data), (op.codebook, None)]
    return []


def weight_summary(module: ModuleOp) -> WeightSummary:
    """The module's constants as quantized weights (used by a qfused op or a
    dequantize, at their bit widths), float weights of linear / conv / embedding /
    matmul ops, and everything else."""
    summary = WeightSummary()
    seen: set[SSAValue] = set()
    for op in module.walk():
        for value, bits in _compressed_operands(op):
            if isinstance(value.owner, ConstantOp) and value not in seen:
                seen.add(value)
                summary.compressed_bytes += _stored_bytes(value, bits)
                summary.compressed += 1
    for op in module.walk():
        if not isinstance(op, ConstantOp) or op.result in seen:
            continue
        value = op.result
        seen.add(value)
        size = _stored_bytes(value)
        user = None
        if isinstance(value.type, TensorType) and len(shape_of(value)) >= 2:  # a matrix
            uses = (use.operation for use in value.uses)
            user = next((using for using in uses if using.name in WEIGHT_OPS), None)
        if user is None:
            summary.other_bytes += size
            continue

        key = getattr(op.value, "resource_handle", None)
        name = getattr(key, "data", None) or f"constant {value.name_hint or ''}".strip()
        summary.float_weights.append(
            FloatWeight(name, tuple(shape_of(value)), dtype_of(value).name, size, where(user))
        )
    summary.float_weights.sort(key=lambda w: -w.bytes)
    return summary

"""Fold redundant quantize(dequantize(q, P), P) pairs back to q, and quantizes of
constants to their integers (`FoldConstantQuantize`).

ExecuTorch's Vulkan FoldQDQ / remove passes drop Q/DQ pairs; qopt folds only the
pairs whose removal keeps the integer result bit-exact: a dequantize whose
result is quantized again *directly* (no float op in between) with the same
static per-tensor parameters and storage type. Q -> DQ pairs around float ops
are never folded (that would change the numerics, docs/fusion-patterns.md). A fused op
with an output requant whose integers feed a DQ that feeds another fused op
needs no folding here: `match_input` hands the integers to the consumer.

Why the fold is exact. Let n = q - zp (an integer, |n| <= 2^17 for storage of
at most 16 bits), s the scale and s32 = f32(s), with u = 2^-24 the f32 unit
roundoff. The dequantize computes y = fl32(n * s32) = n * s32 * (1 + d1)
(compute in f32, or in f64 then rounded to the f32 result: |d1| <= u + 2^-53).
The quantize computes inv = fl(1 / s) rounded to f32 (in the scale's type, f32
or f64, then cast): inv = (1 / s) * (1 + d2), |d2| <= u + 2^-53; and
z = fl(y * inv) in f32 or f64: z = y * inv * (1 + d3), |d3| <= u. With
s32 = s * (1 + d0), |d0| <= u (exact when the scale tensor is f32):
z = n * (1 + d0)(1 + d1)(1 + d2)(1 + d3), so |z - n| <= |n| * 4.01 u < 2^-4
for |n| <= 2^17: rne(z) = n exactly, and rne(z) + zp = q (an integer below
2^24 is exact in f32). Every intermediate is a normal float when
2^-100 <= s <= 2^100 (checked), so no underflow/overflow spoils the bounds. The
final clamp to [qmin, qmax] is the identity when q already lies in that range:
the storage type's range is inside it, or q comes from a quantize or a fused
requant with a range inside it (checked). tests/unit/lowering/test_fold_qdq.py checks
the claim over every int8/uint8 value and many scales.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    f32,
    f64,
)
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from qopt.dialects import qfused, quant
from qopt.dialects.tensors import dtype_of, elem_of, shape_of
from qopt.dtypes import int_range, tensor_type
from qopt.lowering.fuse_quant.match import Reject, const_value, static_params
from qopt.lowering.fuse_quant.report import FusionLog
from qopt.numerics.quant import quantize
from qopt.resources import make_resource, printable_inline, weights_of

_MIN_SCALE, _MAX_SCALE = 2.0**-100, 2.0**100
_MAX_STORAGE_BITS = 16
_EXACT_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _range_within(value: SSAValue, qmin: int, qmax: int) -> bool:
    """Every element of the integer tensor `value` lies in [qmin, qmax]."""
    lo, hi = int_range(elem_of(value))
    if qmin <= lo and hi <= qmax:
        return True
    producer = value.owner
    if isinstance(producer, quant.QuantizeOp):
        return qmin <= producer.qmin.value.data and producer.qmax.value.data <= qmax
    requant = getattr(producer, "requant", None)
    if isinstance(producer, qfused.QFusedOp) and isinstance(requant, qfused.StaticQParamsAttr):
        return qmin <= requant.qmin.data and requant.qmax.data <= qmax
    return False


def match_redundant_pair(q: quant.QuantizeOp) -> quant.DequantizeOp | Reject | None:
    """The dequantize whose integers `q` reproduces exactly (None: no DQ before q)."""
    dq = q.input.owner
    if not isinstance(dq, quant.DequantizeOp):
        return None
    return round_trip(dq, q)


def round_trip(dq: quant.DequantizeOp, q: quant.QuantizeOp) -> quant.DequantizeOp | Reject:
    """`dq` when quantize(dequantize(x)) with `q`'s parameters gives x back exactly
    (the module docstring's conditions), else why not. `q` may quantize a value that
    layout ops made from `dq`'s (they move values, never change them)."""
    q_params, dq_params = static_params(q), static_params(dq)
    if isinstance(q_params, Reject):
        return q_params
    if isinstance(dq_params, Reject):
        return dq_params
    if q_params != dq_params:
        return Reject("quantize and dequantize parameters differ", q)
    if elem_of(q.output) != elem_of(dq.input):
        return Reject("quantize and dequantize use different storage types", q)
    if int_range(elem_of(dq.input))[1] >= 2**_MAX_STORAGE_BITS:
        return Reject(f"storage wider than {_MAX_STORAGE_BITS} bits", q)
    if elem_of(dq.output) not in (f32, f64):
        return Reject(f"dequantize produces {elem_of(dq.output)}: too narrow to be exact", q)
    if any(op.compute_dtype() not in _EXACT_FLOATS for op in (q, dq)):
        return Reject("quantize or dequantize computes in a type narrower than f32", q)
    if not _MIN_SCALE <= dq_params.scale.value.data <= _MAX_SCALE:
        return Reject("scale too small or too large for an exact round trip", q)
    if not _range_within(dq.input, q.qmin.value.data, q.qmax.value.data):
        return Reject("the integers may lie outside the quantize's range (it would clamp)", q)
    return dq


class FoldRedundantQDQ(RewritePattern):
    """quantize(dequantize(q, P), P) -> q (static per-tensor P, same storage)."""

    def __init__(self, log: FusionLog):
        self.log = log

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: quant.QuantizeOp, rewriter: PatternRewriter, /) -> None:
        dq = match_redundant_pair(op)
        if dq is None:
            return
        if isinstance(dq, Reject):
            self.log.reject(dq, op)
            return
        # No log.record: nothing new is computed. `dq.input` already stands for its
        # own unfused value (equal to this quantize's, as proven above), and
        # recording it again would overwrite that mapping.
        rewriter.replace(op, [], [dq.input])


class FoldConstantQuantize(RewritePattern):
    """quantize(constant) -> its integers, computed now by the one implementation of
    the quant semantics (`qopt.numerics.quant.quantize`, bit-exact with torch:
    rounding half to even, then the zero point, then the clamp). PT2E quantizes
    constant tensors and scalars in the graph; folded, their dequantize reads
    constant integers (a compressed weight on Core ML, no quantize kernel on
    Vulkan)."""

    def __init__(self, log: FusionLog):
        self.log = log

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: quant.QuantizeOp, rewriter: PatternRewriter, /) -> None:
        x, scale = const_value(op.input), const_value(op.scale)
        zero_point = const_value(op.zero_point)
        if x is None or scale is None or (op.zero_point is not None and zero_point is None):
            return
        with np.errstate(all="ignore"):  # a zero scale gives what torch gives (clamped inf)
            q = quantize(
                x,
                scale,
                zero_point,
                op.block_size.get_values(),
                op.qmin.value.data,
                op.qmax.value.data,
                dtype_of(op.output),
                op.compute_dtype(),
                zero_point_before_rounding=op.zero_point_before_rounding is not None,
            )
        # (ascontiguousarray makes a 0-d array 1-d: reshape after it)
        q = np.ascontiguousarray(np.asarray(q, dtype_of(op.output))).reshape(shape_of(op.output))
        type = tensor_type(q.dtype, q.shape)
        if type != op.output.type:
            return  # an integer type numpy does not name (sub-byte storage): left as it is
        value: DenseIntOrFPElementsAttr | DenseResourceAttr
        if q.size <= INLINE_LIMIT and printable_inline(q):
            value = DenseIntOrFPElementsAttr(type, BytesAttr(q.tobytes()))
        else:
            value = make_resource("quantized", q, type, weights_of(op))
        constant = ConstantOp(value, type)
        rewriter.replace(op, [constant], [constant.result])
        self.log.record(constant.result, op.output)


def patterns(log: FusionLog) -> list[RewritePattern]:
    return [FoldRedundantQDQ(log), FoldConstantQuantize(log)]


INLINE_LIMIT = 16
"""Folded integers of at most this many elements are printed inline."""

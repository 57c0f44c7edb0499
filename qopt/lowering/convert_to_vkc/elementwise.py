"""convert-to-vkc rules of elementwise ops: the unary and binary kernels (op codes
by name from qopt.kernels.opcodes), where / masked_fill and triangular masks on the
where kernel, casts and the logical ops."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import Operation, SSAValue

from qopt.dialects.aten import elementwise as el
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.base import integer, real, text
from qopt.dialects.tensors import dtype_of, numel, shape_of
from qopt.lowering.convert_to_vkc.lowering import (
    Buf,
    Lowering,
    RuleTable,
    abi_dtype,
    binary,
    broadcast_strides,
    operand_shape_buf,
    pad6,
    row_major,
    same_dtype,
    unary,
    unsupported,
)

RULES = RuleTable()

UNARY_NAMES: dict[type[el.UnaryOp], str] = {
    el.ReluOp: "relu",
    el.SiluOp: "silu",
    el.SigmoidOp: "sigmoid",
    el.TanhOp: "tanh",
    el.ExpOp: "exp",
    el.LogOp: "log",
    el.Log10Op: "log10",
    el.Log2Op: "log2",
    el.SqrtOp: "sqrt",
    el.RsqrtOp: "rsqrt",
    el.ReciprocalOp: "reciprocal",
    el.SinOp: "sin",
    el.CosOp: "cos",
    el.TanOp: "tan",
    el.AsinOp: "asin",
    el.AcosOp: "acos",
    el.AtanOp: "atan",
    el.SinhOp: "sinh",
    el.Expm1Op: "expm1",
    el.Log1pOp: "log1p",
    el.CoshOp: "cosh",
    el.TruncOp: "trunc",
    el.SignOp: "sign",
    el.ErfOp: "erf",
    el.NegOp: "neg",
    el.AbsOp: "abs",
    el.FloorOp: "floor",
    el.CeilOp: "ceil",
    el.RoundOp: "round",
    el.ClampOp: "clamp",
    el.LeakyReluOp: "leaky_relu",
    el.HardswishOp: "hardswish",
    el.HardsigmoidOp: "hardsigmoid",
    el.HardshrinkOp: "hardshrink",
    el.SoftshrinkOp: "softshrink",
}
"""The aten unary ops that are one op of the unary kernel (UNARY_OPS names)."""
INTEGER_UNARY = (el.ReluOp, el.NegOp, el.AbsOp, el.ClampOp, el.SignOp)
"""The unary ops the kernel also computes on i32 buffers."""
ROUNDING = (el.FloorOp, el.CeilOp, el.RoundOp, el.TruncOp)
"""The unary ops that leave an integer tensor as it is."""

BINARY_NAMES: dict[type[el.BinaryOp], str] = {
    el.AddOp: "add",
    el.SubOp: "sub",
    el.MulOp: "mul",
    el.DivOp: "div",
    el.PowOp: "pow",
    el.MaximumOp: "maximum",
    el.MinimumOp: "minimum",
    el.EqOp: "eq",
    el.NeOp: "ne",
    el.LtOp: "lt",
    el.LeOp: "le",
    el.GtOp: "gt",
    el.GeOp: "ge",
    el.LogicalAndOp: "logical_and",
    el.LogicalOrOp: "logical_or",
    el.RemainderOp: "remainder",
    el.FmodOp: "fmod",
    el.BitwiseAndOp: "bitwise_and",
    el.BitwiseOrOp: "bitwise_or",
    el.BitwiseXorOp: "bitwise_xor",
    el.BitwiseLeftShiftOp: "bitwise_left_shift",
    el.BitwiseRightShiftOp: "bitwise_right_shift",
}
"""The aten binary ops that are one op of the binary kernel (BINARY_OPS names)."""
BITWISE = (
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_left_shift",
    "bitwise_right_shift",
)
"""Integer-only ops. Shifts compute on the i32 buffers with the 32-bit width's rules, as
every int64 op here computes in int32: exact while values and results fit in int32."""


# ----- unary ---------------------------------------------------------------------------------


def _unary_op(lw: Lowering, op: el.UnaryOp, a: float = 0.0, b: float = 0.0) -> Sequence[Buf]:
    x = lw.buffer(op.input)
    if x.dtype != "f32" and not isinstance(op, INTEGER_UNARY):
        if isinstance(op, ROUNDING):
            return [lw.view(x, shape_of(op.result))]
        if abi_dtype(op.result) != "f32":
            raise unsupported(
                op, "integer inputs are not supported by this Vulkan op", "cast first"
            )
        x = same_dtype(lw, x, "f32")  # exp / sin / ... of an integer tensor: a float result
    out = unary(lw, x, UNARY_NAMES[type(op)], a, b, abi_dtype(op.result))
    return [lw.view(out, shape_of(op.result))]


_WITH_PARAMETER = (el.ClampOp, el.LeakyReluOp, el.HardshrinkOp, el.SoftshrinkOp)


@RULES(*(cls for cls in UNARY_NAMES if cls not in _WITH_PARAMETER))
def lower_unary(lw: Lowering, op: el.UnaryOp) -> Sequence[Buf]:
    return _unary_op(lw, op)


I32_MIN, I32_MAX = int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max)


def _integer_clamp(lw: Lowering, op: el.ClampOp, x: Buf) -> Buf:
    """clamp of an i32 buffer, exact for every bound: `maximum` / `minimum` against a
    one-element i32 constant (the unary kernel's bounds are f32 push constants, which
    hold neither an absent bound nor integers beyond 2**24)."""
    out = x
    for bound, name in ((op.min, "maximum"), (op.max, "minimum")):
        if bound is None:
            continue
        value = bound.value.data
        if value != int(value):
            raise unsupported(op, f"integer clamp to the non-integer bound {value}", "cast first")
        if (name == "maximum" and value <= I32_MIN) or (name == "minimum" and value >= I32_MAX):
            continue  # no 32-bit value lies beyond it
        if not I32_MIN <= value <= I32_MAX:
            raise unsupported(
                op,
                f"clamp bound {int(value)} is outside the 32-bit integers Vulkan computes in",
                "clamp within the int32 range",
            )
        limit = lw.constant(np.full(1, int(value), np.int32), "i32")
        out = binary(lw, out, limit, name, x.shape, "i32")
    return out


@RULES(el.ClampOp)
def lower_clamp(lw: Lowering, op: el.ClampOp) -> Sequence[Buf]:
    x = lw.buffer(op.input)
    if x.dtype == "i32" and abi_dtype(op.result) == "i32":
        return [lw.view(_integer_clamp(lw, op, x), shape_of(op.result))]
    if x.dtype == "i32":  # a float bound on an integer tensor: torch computes in float
        x = same_dtype(lw, x, "f32")
    a = real(op.min, -np.inf) if op.min is not None else float("-inf")
    b = real(op.max, np.inf) if op.max is not None else float("inf")
    out = unary(lw, x, "clamp", a, b)
    return [lw.view(out, shape_of(op.result))]


@RULES(el.LeakyReluOp)
def lower_leaky_relu(lw: Lowering, op: el.LeakyReluOp) -> Sequence[Buf]:
    return _unary_op(lw, op, real(op.negative_slope, 0.01))


@RULES(el.HardshrinkOp, el.SoftshrinkOp)
def lower_shrink(lw: Lowering, op: el.HardshrinkOp | el.SoftshrinkOp) -> Sequence[Buf]:
    return _unary_op(lw, op, real(op.lambd, 0.5))


@RULES(el.GeluOp)
def lower_gelu(lw: Lowering, op: el.GeluOp) -> Sequence[Buf]:
    x = lw.buffer(op.input)
    approximate = text(op.approximate, "none")
    return [unary(lw, x, "gelu_tanh" if approximate == "tanh" else "gelu")]


@RULES(el.CastOp)
def lower_cast(lw: Lowering, op: el.CastOp) -> Sequence[Buf]:
    x = lw.buffer(op.input)
    want = abi_dtype(op.result)
    result_dtype = dtype_of(op.result)
    if result_dtype == np.bool_:
        return [unary(lw, x, "to_bool", out_dtype="i32")]
    if want == x.dtype and not (want == "i32" and result_dtype.itemsize < 4):
        return [lw.view(x, shape_of(op.result))]
    if want == x.dtype:
        raise unsupported(op, f"narrowing to {result_dtype} is not supported on Vulkan", "keep i32")
    return [lw.view(same_dtype(lw, x, want), shape_of(op.result))]


@RULES(el.LogicalNotOp)
def lower_logical_not(lw: Lowering, op: el.LogicalNotOp) -> Sequence[Buf]:
    return [unary(lw, lw.buffer(op.input), "logical_not", out_dtype="i32")]


def _is_bool(value: SSAValue) -> bool:
    return dtype_of(value) == np.bool_


@RULES(el.BitwiseNotOp)
def lower_bitwise_not(lw: Lowering, op: el.BitwiseNotOp) -> Sequence[Buf]:
    x = lw.buffer(op.input)
    if _is_bool(op.input):
        return [unary(lw, x, "logical_not", out_dtype="i32")]
    if x.dtype != "i32":
        raise unsupported(op, "bitwise_not of floats", "bitwise ops take integer or bool tensors")
    ones = lw.constant(np.full(1, -1, np.int32), "i32")
    return [binary(lw, x, ones, "bitwise_xor", x.shape, "i32")]


@RULES(el.IsInfOp, el.IsFiniteOp)
def lower_isinf_isfinite(lw: Lowering, op: el.IsInfOp | el.IsFiniteOp) -> Sequence[Buf]:
    """`abs(x) == inf` / `abs(x) < inf` (NaN: neither), exact; an integer tensor is
    compared as f32 (never infinite)."""
    x = same_dtype(lw, lw.buffer(op.input), "f32")
    magnitude = unary(lw, x, "abs")
    inf = lw.constant(np.full(1, np.inf, np.float32), "f32")
    name = "eq" if isinstance(op, el.IsInfOp) else "lt"
    out = binary(lw, magnitude, inf, name, x.shape or (1,), "i32")
    return [lw.view(out, shape_of(op.result))]


@RULES(el.SignbitOp)
def lower_signbit(lw: Lowering, op: el.SignbitOp) -> Sequence[Buf]:
    """The unary kernel's signbit: the f32 sign bit itself (-0.0 and a negative NaN
    included), `x < 0` on i32 (bools: never)."""
    x = lw.buffer(op.input)
    return [lw.view(unary(lw, x, "signbit", out_dtype="i32"), shape_of(op.result))]


@RULES(el.IsNanOp)
def lower_isnan(lw: Lowering, op: el.IsNanOp) -> Sequence[Buf]:
    x = lw.buffer(op.input)
    return [binary(lw, x, x, "ne", x.shape, "i32")]  # NaN != NaN (integers: never)


# ----- binary --------------------------------------------------------------------------------


def _binary_op(lw: Lowering, op: el.BinaryOp, name: str, alpha: float = 1.0) -> Sequence[Buf]:
    out_dims = shape_of(op.result) or (1,)
    # f32 when an operand or the result is float (torch's int / int is a float division)
    values = (*op.operands, op.result)
    compute = "f32" if any(abi_dtype(v) == "f32" for v in values) else "i32"
    a = same_dtype(lw, operand_shape_buf(lw, op.lhs), compute)
    b = same_dtype(lw, operand_shape_buf(lw, op.rhs), compute)
    if compute == "f32" and name in BITWISE:
        raise unsupported(op, f"{op.name} of floats", "bitwise ops take integer or bool tensors")
    if compute == "i32" and isinstance(op, el.DivOp) and op.rounding_mode is None:
        raise unsupported(op, "true division of integers", "cast the operands to float")
    a = lw.view(a, shape_of(op.lhs) or (1,))
    b = lw.view(b, shape_of(op.rhs) or (1,))
    return [binary(lw, a, b, name, out_dims, abi_dtype(op.result), alpha)]


@RULES(*(cls for cls in BINARY_NAMES if cls not in (el.AddOp, el.SubOp, el.DivOp)))
def lower_binary(lw: Lowering, op: el.BinaryOp) -> Sequence[Buf]:
    return _binary_op(lw, op, BINARY_NAMES[type(op)])


@RULES(el.AddOp, el.SubOp)
def lower_add_sub(lw: Lowering, op: el.AddOp | el.SubOp) -> Sequence[Buf]:
    alpha = op.alpha.value.data if op.alpha is not None else 1.0
    return _binary_op(lw, op, BINARY_NAMES[type(op)], alpha)


@RULES(el.DivOp)
def lower_div(lw: Lowering, op: el.DivOp) -> Sequence[Buf]:
    name = "div"
    if op.rounding_mode is not None:
        name = "floor_divide" if op.rounding_mode.data == "floor" else "trunc_divide"
    return _binary_op(lw, op, name)


def _as_bool(lw: Lowering, value: SSAValue) -> Buf:
    buf = lw.buffer(value)
    if _is_bool(value):
        return buf
    return unary(lw, buf, "to_bool", out_dtype="i32")


@RULES(el.LogicalXorOp)
def lower_logical_xor(lw: Lowering, op: el.LogicalXorOp) -> Sequence[Buf]:
    out_dims = shape_of(op.result) or (1,)
    a, b = _as_bool(lw, op.lhs), _as_bool(lw, op.rhs)
    a = lw.view(a, shape_of(op.lhs) or (1,))
    b = lw.view(b, shape_of(op.rhs) or (1,))
    return [binary(lw, a, b, "ne", out_dims, "i32")]


# ----- selection -----------------------------------------------------------------------------


def _select(lw: Lowering, op: Operation, c: SSAValue, a: SSAValue, b: SSAValue) -> Sequence[Buf]:
    """where(c, a, b) into the result of `op` (broadcasting all three)."""
    out_dims = shape_of(op.results[0]) or (1,)
    dtype = abi_dtype(op.results[0])
    bufs = [operand_shape_buf(lw, c)] + [
        same_dtype(lw, operand_shape_buf(lw, v), dtype) for v in (a, b)
    ]
    out = lw.alloc(out_dims, dtype)
    strides = [broadcast_strides(shape_of(v) or (1,), out_dims) for v in (c, a, b)]
    d, sc, sa, sb = pad6(out_dims, *strides)
    lw.dispatch("where", [*bufs, out], [numel(out_dims), *d, *sc, *sa, *sb])
    return [out]


@RULES(el.WhereOp)
def lower_where(lw: Lowering, op: el.WhereOp) -> Sequence[Buf]:
    return _select(lw, op, op.condition, op.lhs, op.rhs)


@RULES(el.MaskedFillOp)
def lower_masked_fill(lw: Lowering, op: el.MaskedFillOp) -> Sequence[Buf]:
    """`value` where `mask` is set, `input` elsewhere."""
    return _select(lw, op, op.mask, op.value, op.input)


def _triangular(lw: Lowering, op: sh.TrilOp | sh.TriuOp, keep: np.ndarray) -> Sequence[Buf]:
    """where(keep, x, 0) with the [H, W] mask `keep` of kept positions built now."""
    dims = shape_of(op.input)
    h, w = dims[-2:]
    mask = lw.view(lw.constant(keep.astype(np.int32).reshape(-1), "i32"), (h, w))
    x = lw.buffer(op.input)
    zero = lw.constant(np.zeros(1, np.float32 if x.dtype == "f32" else np.int32), x.dtype)
    out = lw.alloc(dims, x.dtype)
    strides = [broadcast_strides((h, w), dims), row_major(dims), [0] * len(dims)]
    d, sc, sa, sb = pad6(dims, *strides)
    lw.dispatch("where", [mask, x, zero, out], [numel(dims), *d, *sc, *sa, *sb])
    return [out]


def _offsets(op: sh.TrilOp | sh.TriuOp) -> tuple[np.ndarray, int]:
    """(column - row over the last two dims, the diagonal k)."""
    h, w = shape_of(op.input)[-2:]
    return np.arange(w)[None, :] - np.arange(h)[:, None], integer(op.diagonal, 0)


@RULES(sh.TrilOp)
def lower_tril(lw: Lowering, op: sh.TrilOp) -> Sequence[Buf]:
    offset, k = _offsets(op)
    return _triangular(lw, op, offset <= k)


@RULES(sh.TriuOp)
def lower_triu(lw: Lowering, op: sh.TriuOp) -> Sequence[Buf]:
    offset, k = _offsets(op)
    return _triangular(lw, op, offset >= k)

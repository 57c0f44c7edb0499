"""convert-to-coreml rules for the aten elementwise family
(qopt/dialects/aten/elementwise.py): arithmetic, comparisons, logic, selects,
casts, activations, rounding and logs."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import IntegerType, StringAttr, TensorType, f32, i1, i32
from xdsl.ir import Attribute, Operation, SSAValue

from qopt.dialects import coreml
from qopt.dialects.aten import elementwise as ew
from qopt.dialects.coreml import storage_dtype
from qopt.dialects.tensors import elem_of, shape_of
from qopt.errors import QoptError, where
from qopt.lowering.convert_to_coreml.lowering import (
    Lowering,
    Rule,
    RuleTable,
    float_attr,
    mil_elem,
    mil_tensor,
)

RULES = RuleTable()


_BOOL_ARITHMETIC: dict[type[coreml.CoremlOp], type[coreml.CoremlOp]] = {
    coreml.AddOp: coreml.LogicalOrOp,
    coreml.MulOp: coreml.LogicalAndOp,
    coreml.MaximumOp: coreml.LogicalOrOp,
    coreml.MinimumOp: coreml.LogicalAndOp,
}
"""torch's arithmetic on bools (a bool result) as MIL logic: MIL arithmetic takes
fp16, fp32 or int32 only."""


def _arithmetic(
    lw: Lowering,
    op: Operation,
    cls: type[coreml.CoremlOp],
    operands: Sequence[SSAValue],
    **attrs: Attribute,
) -> SSAValue:
    """MIL `cls` on `operands` in the type of the op's result, as torch computes it
    (`exp` of an int tensor and int / int are float; the operands are cast); a bool
    result is `logical_or` / `logical_and` (add, maximum / mul, minimum) or an error."""
    out = mil_tensor(op.results[0].type)
    elem = out.get_element_type()
    if elem == i1:
        logic = _BOOL_ARITHMETIC.get(cls)
        if logic is None:
            raise QoptError(
                f"convert-to-coreml: {where(op)}: {cls.name.removeprefix('coreml.')} of bool "
                "tensors has no CoreML (MIL) op (it takes fp16, fp32 or int32): cast the "
                "operands to a number type first"
            )
        return lw.build(logic, [lw.as_elem(v, i1) for v in operands], out)
    return lw.build(cls, [lw.as_elem(v, elem) for v in operands], out, **attrs)


def _simple(cls: type[coreml.CoremlOp], **props: Callable[[Operation], Attribute]) -> Rule[Any]:
    """The MIL op `cls` on the op's operands (in the result's type), with constant
    parameters `props`."""

    def lower(lw: Lowering, op: Operation) -> Sequence[SSAValue]:
        attrs = {k: fn(op) for k, fn in props.items()}
        return [_arithmetic(lw, op, cls, list(op.operands), **attrs)]

    return lower


for _aten, _coreml in (
    (ew.SiluOp, coreml.SiluOp), (ew.SigmoidOp, coreml.SigmoidOp),
    (ew.TanhOp, coreml.TanhOp), (ew.ExpOp, coreml.ExpOp), (ew.SqrtOp, coreml.SqrtOp),
    (ew.SinOp, coreml.SinOp), (ew.CosOp, coreml.CosOp), (ew.TanOp, coreml.TanOp),
    (ew.AsinOp, coreml.AsinOp), (ew.AcosOp, coreml.AcosOp), (ew.AtanOp, coreml.AtanOp),
    (ew.SinhOp, coreml.SinhOp), (ew.CoshOp, coreml.CoshOp), (ew.ErfOp, coreml.ErfOp),
    (ew.MulOp, coreml.MulOp), (ew.MaximumOp, coreml.MaximumOp),
    (ew.MinimumOp, coreml.MinimumOp),
):  # fmt: skip
    RULES.add(_aten, _simple(_coreml))


@RULES(ew.RsqrtOp)
def _rsqrt(lw: Lowering, op: ew.RsqrtOp) -> Sequence[SSAValue]:
    """MIL `rsqrt` (epsilon 0), as coremltools writes it, where its input cannot be
    -0.0: MIL computes `1 / sqrt(x + epsilon)`, and -0.0 + 0 is +0.0 (+inf where
    torch's 1 / sqrt(-0.0) is -inf). A sum with a constant that holds no -0.0 is
    never -0.0 (IEEE round-to-nearest: a sum is -0.0 only when both addends are),
    which covers RMSNorm's `rsqrt(mean(x * x) + eps)`. Elsewhere `real_div(1,
    sqrt(x))`, torch's two roundings."""
    x, out = lw.float_input(op)
    if _never_negative_zero(lw, x):
        return [lw.build(coreml.RsqrtOp, [x], out, epsilon=float_attr(0.0))]
    root = lw.build(coreml.SqrtOp, [x], out)
    return [lw.build(coreml.RealDivOp, [lw.scalar(1.0, root), root], out)]


def _never_negative_zero(lw: Lowering, x: SSAValue) -> bool:
    """Whether `x` is an `add` with a compile-time operand holding no -0.0 (so no
    element of `x` is -0.0)."""
    if not isinstance(x.owner, coreml.AddOp):
        return False
    for operand in x.owner.operands:
        array = lw.array(operand)
        if array is not None and not np.any((array == 0) & np.signbit(array)):
            return True
    return False


@RULES(ew.PowOp)
def _pow(lw: Lowering, op: ew.PowOp) -> Sequence[SSAValue]:
    """MIL `pow`. Integer powers only with a constant, non-negative exponent: MIL
    leaves int32 `pow` of a negative exponent unspecified (torch gives 0, or +-1 for
    a base of +-1)."""
    if coreml.mil_dtype_name(mil_elem(elem_of(op.result))) == "int32":
        exponent = lw.array(op.operands[1])
        if exponent is None or bool((exponent < 0).any()):
            raise QoptError(
                f"convert-to-coreml: {where(op)}: integer pow with a run-time or negative "
                "exponent has no exact CoreML lowering (MIL leaves negative int32 powers "
                "unspecified): cast to float, or use a constant non-negative exponent"
            )
    return [_arithmetic(lw, op, coreml.PowOp, list(op.operands))]


@RULES(ew.ReluOp)
def _relu(lw: Lowering, op: ew.ReluOp) -> Sequence[SSAValue]:
    """MIL `relu` takes fp16 / fp32 only: an int32 (or int64, narrowed) tensor is
    `maximum(x, 0)` (exact), an unsigned one is its input (never negative); other
    integer types are an error naming them."""
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    name = coreml.mil_dtype_name(elem)
    x = op.input
    if name in ("fp16", "fp32"):
        return [lw.build(coreml.ReluOp, [lw.as_elem(x, elem)], out)]
    if name == "int32":
        x = lw.as_elem(x, elem)
        return [lw.build(coreml.MaximumOp, [x, lw.scalar(0, x)], out)]
    if name.startswith("uint") and x.type == out:
        return [x]
    raise QoptError(
        f"convert-to-coreml: {where(op)}: relu on {name} tensors has no CoreML lowering "
        "(MIL relu takes fp16 or fp32, maximum fp16, fp32 or int32): cast the input first"
    )


@RULES(ew.GeluOp)
def _gelu(lw: Lowering, op: ew.GeluOp) -> Sequence[SSAValue]:
    tanh = op.approximate is not None and op.approximate.data == "tanh"
    mode = StringAttr("TANH_APPROXIMATION" if tanh else "EXACT")
    return [lw.build(coreml.GeluOp, [op.input], mil_tensor(op.result.type), mode=mode)]


@RULES(ew.AddOp, ew.SubOp)
def _add_sub(lw: Lowering, op: ew.AddOp | ew.SubOp) -> Sequence[SSAValue]:
    x, y = op.operands
    alpha = op.alpha
    if alpha is not None and float(alpha.value.data) != 1.0:
        if elem_of(op.results[0]) == i1:
            raise QoptError(
                f"convert-to-coreml: {where(op)}: add of bool tensors with alpha has no "
                "CoreML lowering: cast the operands to a number type first"
            )
        y = lw.as_elem(y, mil_elem(elem_of(op.results[0])))
        y = lw.build(coreml.MulOp, [y, lw.scalar(float(alpha.value.data), y)], y.type)
    cls = coreml.AddOp if isinstance(op, ew.AddOp) else coreml.SubOp
    return [_arithmetic(lw, op, cls, [x, y])]


_COMPARISONS: dict[type[ew.CompareOp], type[coreml.CoremlOp]] = {
    ew.EqOp: coreml.EqualOp,
    ew.NeOp: coreml.NotEqualOp,
    ew.LtOp: coreml.LessOp,
    ew.LeOp: coreml.LessEqualOp,
    ew.GtOp: coreml.GreaterOp,
    ew.GeOp: coreml.GreaterEqualOp,
}


def _compared_elem(a: Attribute, b: Attribute) -> Attribute:
    """The type both sides of a MIL comparison get (fp16, fp32 or int32)."""
    for elem in (a, b):
        if coreml.mil_dtype_name(elem) in ("fp32", "fp16"):
            return f32 if f32 in (a, b) else elem
    return i32


@RULES(*_COMPARISONS)
def _compare(lw: Lowering, op: ew.CompareOp) -> Sequence[SSAValue]:
    """Comparisons: MIL compares two operands of one type (fp16, fp32, int32)."""
    x, y = op.operands
    elem = _compared_elem(mil_elem(elem_of(x)), mil_elem(elem_of(y)))
    x, y = lw.as_elem(x, elem), lw.as_elem(y, elem)
    out = mil_tensor(op.results[0].type)
    return [lw.build(_COMPARISONS[type(op)], [x, y], out)]


@RULES(ew.WhereOp)
def _where(lw: Lowering, op: ew.WhereOp) -> Sequence[SSAValue]:
    """`where(cond, a, b)`: MIL select, both branches in the result's type."""
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    if coreml.mil_dtype_name(elem) not in ("fp16", "fp32", "int32", "bool"):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: MIL select takes fp16, fp32, int32 or bool "
            f"values, not {coreml.mil_dtype_name(elem)}; cast the operands first"
        )
    a, b = lw.as_elem(op.lhs, elem), lw.as_elem(op.rhs, elem)
    shape = tuple(out.get_shape())
    if coreml.broadcast(shape_of(a), shape_of(b)) != shape:
        # coremltools types select as broadcast(a, b), without cond: one branch
        # gets the result's shape (a constant at compile time).
        if (array := lw.array(b)) is not None:
            b = lw.const(np.broadcast_to(array.astype(storage_dtype(elem)), shape), elem, "where")
        elif (array := lw.array(a)) is not None:
            a = lw.const(np.broadcast_to(array.astype(storage_dtype(elem)), shape), elem, "where")
        else:
            a = lw.broadcast_to(op, a, shape)
    return [lw.build(coreml.SelectOp, [op.condition, a, b], out)]


_LOGICAL: dict[type[ew.BinaryOp], type[coreml.CoremlOp]] = {
    ew.BitwiseAndOp: coreml.LogicalAndOp,
    ew.BitwiseOrOp: coreml.LogicalOrOp,
    ew.BitwiseXorOp: coreml.LogicalXorOp,
    ew.LogicalAndOp: coreml.LogicalAndOp,
    ew.LogicalOrOp: coreml.LogicalOrOp,
    ew.LogicalXorOp: coreml.LogicalXorOp,
}
_BITWISE = (ew.BitwiseAndOp, ew.BitwiseOrOp, ew.BitwiseXorOp)


@RULES(*_LOGICAL)
def _logical(lw: Lowering, op: ew.BinaryOp) -> Sequence[SSAValue]:
    """`&`, `|`, `^` on bools and `logical_and/or/xor`: MIL logical_and/or/xor,
    which take bools only. Integer bitwise ops have no MIL op: `compose` writes them in
    integer arithmetic (static shapes, at most 32 bits); what it leaves is an error. The
    operands of a logical op that are not bools become `x != 0` through a cast."""
    x, y = op.operands
    if isinstance(op, _BITWISE) and (elem_of(x) != i1 or elem_of(y) != i1):
        names = ", ".join(coreml.mil_dtype_name(mil_elem(elem_of(v))) for v in (x, y))
        raise QoptError(
            f"convert-to-coreml: {where(op)}: integer bitwise operations ({names} operands) "
            "have no CoreML (MIL) op; qopt writes them in integer arithmetic for static "
            "shapes of integers of at most 32 bits (unsigned: 16), which this one is not"
        )
    out = mil_tensor(op.results[0].type)
    return [lw.build(_LOGICAL[type(op)], [lw.as_elem(x, i1), lw.as_elem(y, i1)], out)]


@RULES(ew.LogicalNotOp, ew.BitwiseNotOp, ew.IsNanOp)
def _not_isnan(lw: Lowering, op: ew.UnaryOp) -> Sequence[SSAValue]:
    """`logical_not(x)` (and `~` of bools) is `equal(x, 0)` in x's MIL type (bools as
    int32); `isnan(x)` is `not_equal(x, x)` (false for integers). MIL has no
    bitwise_not for integers: `compose` writes it as `-1 - x`; what it leaves (an
    unsigned type wider than 16 bits) is an error."""
    x = op.operands[0]
    out = mil_tensor(op.results[0].type)
    elem = mil_elem(elem_of(x))
    if isinstance(op, ew.BitwiseNotOp) and elem != i1:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: bitwise_not of {coreml.mil_dtype_name(elem)} "
            "tensors has no CoreML (MIL) op; qopt writes it in integer arithmetic for "
            "integers of at most 32 bits (unsigned: 16), which this one is not"
        )
    if elem == i1:
        x = lw.as_elem(x, i32)
    if isinstance(op, ew.IsNanOp):
        return [lw.build(coreml.NotEqualOp, [x, x], out)]
    return [lw.build(coreml.EqualOp, [x, lw.scalar(0, x)], out)]


@RULES(ew.DivOp)
def _div(lw: Lowering, op: ew.DivOp) -> Sequence[SSAValue]:
    """True division is MIL `real_div`. Rounding division (`//`, `div(...,
    rounding_mode=...)`): on floats torch's floor division (`_floor_divide`), or the
    truncation of `q = x / y`, `select(q < 0, ceil(q), floor(q))`; on int32 MIL
    `floor_div`, and for "trunc" `q + 1` where the remainder `x - q * y` is nonzero
    and the signs of x and y differ (all exact integer steps)."""
    out = mil_tensor(op.result.type)
    if op.rounding_mode is None:
        return [_arithmetic(lw, op, coreml.RealDivOp, list(op.operands))]
    elem = out.get_element_type()
    name = coreml.mil_dtype_name(elem)
    if name not in coreml.FI:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: rounding division of {name} tensors has no "
            "CoreML lowering (fp16, fp32 or int32): cast the operands first"
        )
    x, y = (lw.as_elem(v, elem) for v in op.operands)
    trunc = op.rounding_mode.data == "trunc"
    flags = TensorType(i1, out.get_shape())
    if name == "int32":
        floor = lw.build(coreml.FloorDivOp, [x, y], out)
        if not trunc:
            return [floor]
        rem = lw.build(coreml.SubOp, [x, lw.build(coreml.MulOp, [floor, y], out)], out)
        inexact = lw.build(coreml.NotEqualOp, [rem, lw.scalar(0, rem)], flags)
        x_negative = lw.build(coreml.LessOp, [x, lw.scalar(0, x)], _bool_like(x))
        y_negative = lw.build(coreml.LessOp, [y, lw.scalar(0, y)], _bool_like(y))
        signs = lw.build(coreml.LogicalXorOp, [x_negative, y_negative], flags)
        fix = lw.build(coreml.LogicalAndOp, [inexact, signs], flags)
        up = lw.build(coreml.AddOp, [floor, lw.scalar(1, floor)], out)
        return [lw.build(coreml.SelectOp, [fix, up, floor], out)]
    quotient = lw.build(coreml.RealDivOp, [x, y], out)
    if not trunc:
        return [_floor_divide(lw, x, y, quotient, out)]
    floor = lw.build(coreml.FloorOp, [quotient], out)
    negative = lw.build(coreml.LessOp, [quotient, lw.scalar(0, quotient)], flags)
    ceil = lw.build(coreml.CeilOp, [quotient], out)
    return [lw.build(coreml.SelectOp, [negative, ceil, floor], out)]


def _floor_divide(
    lw: Lowering, x: SSAValue, y: SSAValue, quotient: SSAValue, out: TensorType
) -> SSAValue:
    """torch's float floor division, not `floor(x / y)` (whose rounding gives 1 // 0.1 =
    10, torch 9, and 3 // -inf = -0, torch -1): with m = fmod(x, y) (`_fmod_of`), d = (x
    - m) / y, less 1 where m is nonzero with y's other sign; floor(d), plus 1 where d is
    above it by more than 1/2; where d is 0 a zero with x / y's sign; x / y where y is
    0. NaN where x is infinite (fmod), as torch."""
    flags = TensorType(i1, out.get_shape())
    zero = lw.scalar(0.0, quotient)
    m = _fmod_of(lw, x, y, out)
    d = lw.build(coreml.RealDivOp, [lw.build(coreml.SubOp, [x, m], out), y], out)
    m_negative = lw.build(coreml.LessOp, [m, zero], flags)
    y_negative = lw.build(coreml.LessOp, [y, zero], _bool_like(y))
    fix = lw.build(
        coreml.LogicalAndOp,
        [
            lw.build(coreml.NotEqualOp, [m, zero], flags),
            lw.build(coreml.LogicalXorOp, [m_negative, y_negative], flags),
        ],
        flags,
    )
    d = lw.build(
        coreml.SelectOp, [fix, lw.build(coreml.SubOp, [d, lw.scalar(1.0, d)], out), d], out
    )
    f = lw.build(coreml.FloorOp, [d], out)
    above = lw.build(
        coreml.GreaterOp, [lw.build(coreml.SubOp, [d, f], out), lw.scalar(0.5, f)], flags
    )
    f = lw.build(
        coreml.SelectOp, [above, lw.build(coreml.AddOp, [f, lw.scalar(1.0, f)], out), f], out
    )
    d_zero = lw.build(coreml.EqualOp, [d, zero], flags)
    unsigned = lw.build(coreml.SelectOp, [d_zero, lw.build(coreml.AbsOp, [f], out), f], out)
    negative_zero = lw.build(coreml.LogicalAndOp, [d_zero, _negative(lw, quotient)], flags)
    r = lw.build(coreml.SelectOp, [negative_zero, lw.scalar(-0.0, f), unsigned], out)
    by_zero = lw.build(coreml.EqualOp, [y, zero], _bool_like(y))
    return lw.build(coreml.SelectOp, [by_zero, quotient, r], out)


@RULES(ew.NegOp)
def _neg(lw: Lowering, op: ew.NegOp) -> Sequence[SSAValue]:
    x = op.operands[0]
    return [lw.build(coreml.MulOp, [x, lw.scalar(-1.0, x)], mil_tensor(op.results[0].type))]


INT32_RANGE = (int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max))


def _integer_clamp(lw: Lowering, op: ew.ClampOp, out: TensorType) -> SSAValue:
    """MIL `clip` takes fp16 / fp32 only: an int32 (or int64, narrowed) clamp is
    `maximum` / `minimum` with int32 bounds (exact); a bound no int32 value passes
    is dropped, one outside int32 that would be the result is an error."""
    x = lw.as_elem(op.input, out.get_element_type())
    low, high = INT32_RANGE
    for bound, cls in ((op.min, coreml.MaximumOp), (op.max, coreml.MinimumOp)):
        if bound is None:
            continue
        value = bound.value.data
        if (cls is coreml.MaximumOp and value <= low) or (
            cls is coreml.MinimumOp and value >= high
        ):
            continue
        if not low <= value <= high or value != int(value):
            raise QoptError(
                f"convert-to-coreml: {where(op)}: integer clamp to {value}, which is not an "
                "int32 value (Core ML computes integers in int32): clamp within int32"
            )
        x = lw.build(cls, [x, lw.const(np.asarray(int(value), np.int32))], out)
    return x


@RULES(ew.ClampOp)
def _clamp(lw: Lowering, op: ew.ClampOp) -> Sequence[SSAValue]:
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    name = coreml.mil_dtype_name(elem)
    if name == "int32":
        return [_integer_clamp(lw, op, out)]
    if name not in ("fp16", "fp32"):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: clamp on {name} tensors has no CoreML lowering "
            "(MIL clip takes fp16 or fp32, maximum/minimum fp16, fp32 or int32): cast first"
        )
    lo = -math.inf if op.min is None else float(op.min.value.data)
    hi = math.inf if op.max is None else float(op.max.value.data)
    x = lw.as_elem(op.input, elem)  # an integer input with a float bound clamps in float
    if lo >= hi:  # torch: min(max(x, lo), hi), hi wherever lo >= hi; MIL clip needs lo < hi
        dtype = coreml.storage_dtype(elem)
        x = lw.build(coreml.MaximumOp, [x, lw.const(np.asarray(lo, dtype), elem)], out)
        return [lw.build(coreml.MinimumOp, [x, lw.const(np.asarray(hi, dtype), elem)], out)]
    return [lw.build(coreml.ClipOp, [x], out, alpha=float_attr(lo), beta=float_attr(hi))]


@RULES(ew.CastOp, ew.CloneOp)
def _cast(lw: Lowering, op: ew.CastOp | ew.CloneOp) -> Sequence[SSAValue]:
    x = op.operands[0]
    out = mil_tensor(op.results[0].type)
    if (array := lw.array(x)) is not None:  # fold: casts of constants (codebook codes)
        return [
            lw.const(array.astype(storage_dtype(out.get_element_type())), out.get_element_type())
        ]
    if out == x.type:
        return [x]
    dtype = coreml.mil_dtype_name(out.get_element_type())
    return [lw.build(coreml.CastOp, [x], out, dtype=StringAttr(dtype))]


# ----- activations, rounding and logs -------------------------------------------------


def _bool_like(value: SSAValue) -> TensorType:
    return TensorType(i1, shape_of(value))


@RULES(ew.HardsigmoidOp, ew.HardswishOp)
def _hard_activation(lw: Lowering, op: ew.HardsigmoidOp | ew.HardswishOp) -> Sequence[SSAValue]:
    """`hardsigmoid(x) = clamp(x + 3, 0, 6) / 6` is MIL `sigmoid_hard(x, alpha=1/6,
    beta=0.5)` = `clip(x / 6 + 0.5, 0, 1)`; `hardswish(x) = x * hardsigmoid(x)` is a
    `mul` with it (coremltools' MIL has no hardswish op in any opset up to iOS18).
    The two forms round differently: a few ulp from torch (measured in
    tests/unit/backends/coreml/test_coreml_ops.py)."""
    x, out = lw.float_input(op)
    gate = lw.build(
        coreml.SigmoidHardOp, [x], out, alpha=float_attr(1.0 / 6.0), beta=float_attr(0.5)
    )
    if isinstance(op, ew.HardsigmoidOp):
        return [gate]
    return [lw.build(coreml.MulOp, [x, gate], out)]


@RULES(ew.LeakyReluOp)
def _leaky_relu(lw: Lowering, op: ew.LeakyReluOp) -> Sequence[SSAValue]:
    """MIL `leaky_relu` with `alpha = negative_slope` (torch's default 0.01)."""
    x, out = lw.float_input(op)
    slope = 0.01 if op.negative_slope is None else float(op.negative_slope.value.data)
    return [lw.build(coreml.LeakyReluOp, [x], out, alpha=float_attr(slope))]


@RULES(ew.LogOp)
def _log(lw: Lowering, op: ew.LogOp) -> Sequence[SSAValue]:
    """MIL `log` with epsilon 0 (its default 1e-45 would make log(0) finite)."""
    x, out = lw.float_input(op)
    return [lw.build(coreml.LogOp, [x], out, epsilon=float_attr(0.0))]


@RULES(ew.Expm1Op)
def _expm1(lw: Lowering, op: ew.Expm1Op) -> Sequence[SSAValue]:
    """MIL has no expm1, and `exp(x) - 1` loses every digit near 0: Kahan's form, with
    u = exp(x): `x` where u == 1, `u` where u == inf, -1 where u - 1 == -1, else
    `(u - 1) * (x / log(u))` (the rounding of u cancels between u - 1 and log(u); the
    precision near 0 is the backend's log's relative precision near 1). NaN passes."""
    x, out = lw.float_input(op)
    flags = _bool_like(x)
    u = lw.build(coreml.ExpOp, [x], out)
    um1 = lw.build(coreml.SubOp, [u, lw.scalar(1.0, u)], out)
    log = lw.build(coreml.LogOp, [u], out, epsilon=float_attr(0.0))
    ratio = lw.build(coreml.RealDivOp, [x, log], out)
    r = lw.build(coreml.MulOp, [um1, ratio], out)
    for cond, value in (
        (lw.build(coreml.EqualOp, [um1, lw.scalar(-1.0, um1)], flags), lw.scalar(-1.0, x)),
        (lw.build(coreml.EqualOp, [u, lw.scalar(float("inf"), u)], flags), u),
        (lw.build(coreml.EqualOp, [u, lw.scalar(1.0, u)], flags), x),
    ):
        r = lw.build(coreml.SelectOp, [cond, value, r], out)
    return [r]


@RULES(ew.Log1pOp)
def _log1p(lw: Lowering, op: ew.Log1pOp) -> Sequence[SSAValue]:
    """MIL has no log1p, and `log(1 + x)` loses every digit near 0: with u = 1 + x,
    `x` where u == 1, `u` where u == +inf, else `log(u) * (x / (u - 1))` (u - 1 is
    exact near 1, the rounding of u cancels; the precision near 0 is the backend's
    log's relative precision near 1); -inf at -1, NaN below and for NaN."""
    x, out = lw.float_input(op)
    flags = _bool_like(x)
    u = lw.build(coreml.AddOp, [x, lw.scalar(1.0, x)], out)
    um1 = lw.build(coreml.SubOp, [u, lw.scalar(1.0, u)], out)
    log = lw.build(coreml.LogOp, [u], out, epsilon=float_attr(0.0))
    ratio = lw.build(coreml.RealDivOp, [x, um1], out)
    r = lw.build(coreml.MulOp, [log, ratio], out)
    for cond, value in (
        (lw.build(coreml.EqualOp, [u, lw.scalar(float("inf"), u)], flags), u),
        (lw.build(coreml.EqualOp, [u, lw.scalar(1.0, u)], flags), x),
    ):
        r = lw.build(coreml.SelectOp, [cond, value, r], out)
    return [r]


@RULES(ew.Log10Op, ew.Log2Op)
def _log_base(lw: Lowering, op: ew.Log10Op | ew.Log2Op) -> Sequence[SSAValue]:
    """MIL has only the natural log: `log10(x) = log(x) / ln(10)`, `log2(x) = log(x) /
    ln(2)` (epsilon 0, the divisor rounded to x's type; within 2 ulp of torch, measured
    in tests/unit/backends/test_new_ops.py)."""
    x, out = lw.float_input(op)
    log = lw.build(coreml.LogOp, [x], out, epsilon=float_attr(0.0))
    base = math.log(10.0) if isinstance(op, ew.Log10Op) else math.log(2.0)
    return [lw.build(coreml.RealDivOp, [log, lw.scalar(base, log)], out)]


@RULES(ew.HardshrinkOp, ew.SoftshrinkOp)
def _shrink(lw: Lowering, op: ew.HardshrinkOp | ew.SoftshrinkOp) -> Sequence[SSAValue]:
    """torch's comparisons, with `select`: hardshrink is `select(-l <= x <= l, 0, x)`,
    softshrink `select(x > l, x - l, select(x < -l, x + l, x * 0))` (NaN passes through
    both, as in torch; `x * 0` keeps the sign of zero)."""
    x, out = lw.float_input(op)
    lambd = 0.5 if op.lambd is None else float(op.lambd.value.data)
    flags = TensorType(i1, out.get_shape())
    hi, lo = lw.scalar(lambd, x), lw.scalar(-lambd, x)
    if isinstance(op, ew.HardshrinkOp):
        above_lo = lw.build(coreml.GreaterEqualOp, [x, lo], flags)
        below_hi = lw.build(coreml.LessEqualOp, [x, hi], flags)
        inside = lw.build(coreml.LogicalAndOp, [above_lo, below_hi], flags)
        return [lw.build(coreml.SelectOp, [inside, lw.scalar(0.0, x), x], out)]
    zero = lw.build(coreml.MulOp, [x, lw.scalar(0.0, x)], out)
    below = lw.build(coreml.LessOp, [x, lo], flags)
    raised = lw.build(coreml.AddOp, [x, hi], out)
    low_part = lw.build(coreml.SelectOp, [below, raised, zero], out)
    above = lw.build(coreml.GreaterOp, [x, hi], flags)
    lowered = lw.build(coreml.SubOp, [x, hi], out)
    return [lw.build(coreml.SelectOp, [above, lowered, low_part], out)]


@RULES(ew.ReciprocalOp)
def _reciprocal(lw: Lowering, op: ew.ReciprocalOp) -> Sequence[SSAValue]:
    """`real_div(1, x)`. Not MIL `inverse`: it computes `1 / (x + epsilon)`, and even
    with epsilon 0, -0.0 + 0 is +0.0, +inf where torch's 1 / -0.0 is -inf."""
    x, out = lw.float_input(op)
    return [lw.build(coreml.RealDivOp, [lw.scalar(1.0, x), x], out)]


@RULES(ew.AbsOp)
def _abs(lw: Lowering, op: ew.AbsOp) -> Sequence[SSAValue]:
    x = op.operands[0]
    name = coreml.mil_dtype_name(elem_of(x))
    if name not in coreml.FI:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: abs of a {name} tensor has no CoreML lowering "
            "(MIL abs takes fp16, fp32 or int32): cast the input first"
        )
    return [lw.build(coreml.AbsOp, [x], mil_tensor(op.results[0].type))]


@RULES(ew.FloorOp, ew.CeilOp)
def _floor_ceil(lw: Lowering, op: ew.FloorOp | ew.CeilOp) -> Sequence[SSAValue]:
    """MIL `floor` / `ceil`; of an integer tensor they are the input, as in torch."""
    x = op.operands[0]
    if isinstance(elem_of(x), IntegerType):
        return [x]
    cls = coreml.FloorOp if isinstance(op, ew.FloorOp) else coreml.CeilOp
    return [lw.build(cls, [x], mil_tensor(op.results[0].type))]


@RULES(ew.TruncOp)
def _trunc(lw: Lowering, op: ew.TruncOp) -> Sequence[SSAValue]:
    """MIL has no trunc: `select(x < 0, ceil(x), floor(x))` (exact; NaN and +-inf pass,
    -0.0 stays -0.0 through ceil). Integer tensors are their input."""
    x = op.operands[0]
    if isinstance(elem_of(x), IntegerType):
        return [x]
    out = mil_tensor(op.results[0].type)
    negative = lw.build(coreml.LessOp, [x, lw.scalar(0.0, x)], _bool_like(x))
    up = lw.build(coreml.CeilOp, [x], out)
    down = lw.build(coreml.FloorOp, [x], out)
    return [lw.build(coreml.SelectOp, [negative, up, down], out)]


@RULES(ew.SignOp)
def _sign(lw: Lowering, op: ew.SignOp) -> Sequence[SSAValue]:
    """torch's sign, `(x > 0) - (x < 0)`: the two comparisons cast to x's type (fp or
    int32) and subtracted (MIL `sign` leaves NaN unspecified; torch gives 0, as this
    does); a bool tensor is its input."""
    x = op.operands[0]
    out = mil_tensor(op.results[0].type)
    elem = out.get_element_type()
    if elem == i1:
        return [x]
    name = coreml.mil_dtype_name(elem)
    if name not in coreml.FI:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: sign of a {name} tensor has no CoreML lowering "
            "(MIL comparisons take fp16, fp32 or int32): cast the input first"
        )
    x = lw.as_elem(x, elem)
    flags = _bool_like(x)
    zero = lw.scalar(0, x)
    above = lw.as_elem(lw.build(coreml.GreaterOp, [x, zero], flags), elem)
    below = lw.as_elem(lw.build(coreml.LessOp, [x, zero], flags), elem)
    return [lw.build(coreml.SubOp, [above, below], out)]


@RULES(ew.IsInfOp, ew.IsFiniteOp)
def _isinf_isfinite(lw: Lowering, op: ew.IsInfOp | ew.IsFiniteOp) -> Sequence[SSAValue]:
    """`abs(x) == inf` / `abs(x) < inf` (NaN: neither), exact; an integer or bool
    tensor is compared as fp32 (never infinite)."""
    x = op.operands[0]
    if coreml.mil_dtype_name(mil_elem(elem_of(x))) not in coreml.F:
        x = lw.as_elem(x, f32)
    flags = _bool_like(x)
    magnitude = lw.build(coreml.AbsOp, [x], TensorType(elem_of(x), shape_of(x)))
    cls = coreml.EqualOp if isinstance(op, ew.IsInfOp) else coreml.LessOp
    return [lw.build(cls, [magnitude, lw.scalar(float("inf"), magnitude)], flags)]


@RULES(ew.SignbitOp)
def _signbit(lw: Lowering, op: ew.SignbitOp) -> Sequence[SSAValue]:
    """`x < 0 or 1 / x < 0` (the division catches -0.0); an integer or bool tensor is
    compared as fp32. MIL has no bitcast, so the sign bit of a NaN is not observable:
    signbit(NaN) is false whatever its bit (torch reads the bit)."""
    x = op.operands[0]
    if coreml.mil_dtype_name(mil_elem(elem_of(x))) not in coreml.F:
        x = lw.as_elem(x, f32)
    return [_negative(lw, x)]


@RULES(ew.RoundOp)
def _round(lw: Lowering, op: ew.RoundOp) -> Sequence[SSAValue]:
    """torch rounds halves to even. MIL `round` leaves halves to the backend (the
    spec's "0.5 is rounded to 0"; Apple: X.5 may go up or down depending on the
    compute unit, webmachinelearning/webnn#817), so round is composed from exact
    steps: `f = floor(x)`, `d = x - f` (exact), `f + 1` where `d > 0.5`, or where
    `d == 0.5` and f is odd (`floor(f / 2) != f / 2`), else `f`. NaN and +-inf
    pass through; a negative x that rounds to zero gives -0.0 as torch (a select of
    the constant -0.0 where `x < 0` and the result is 0). Integer tensors are their
    input."""
    x = op.operands[0]
    if isinstance(elem_of(x), IntegerType):
        return [x]
    r = lw.round_half_to_even(x)
    flags = TensorType(i1, shape_of(x))
    negative = lw.build(coreml.LessOp, [x, lw.scalar(0.0, x)], flags)
    zero = lw.build(coreml.EqualOp, [r, lw.scalar(0.0, r)], flags)
    to_negative_zero = lw.build(coreml.LogicalAndOp, [negative, zero], flags)
    return [lw.build(coreml.SelectOp, [to_negative_zero, lw.scalar(-0.0, r), r], r.type)]


@RULES(ew.RemainderOp)
def _remainder(lw: Lowering, op: ew.RemainderOp) -> Sequence[SSAValue]:
    """torch's `remainder` has the sign of the divisor (floor-mod, computed as
    `m = fmod(x, y)`, then `m + y` where `m != 0` and its sign differs from y's).
    MIL `mod` is Python's `%` in coremltools' definition, but its device tests
    use positive operands only, so the sign fix-up is emitted too: it is exact
    whether the backend computes floor-mod (never fires) or fmod. With a constant
    divisor of one sign the fix-up is one comparison. A float zero result takes x's
    sign, as torch's fmod-based one (floor-mod gives y's)."""
    out = mil_tensor(op.results[0].type)
    elem = out.get_element_type()
    name = coreml.mil_dtype_name(elem)
    if name not in coreml.FI:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: remainder on {name} tensors has no CoreML "
            "lowering (MIL mod takes fp16, fp32 or int32): cast the operands first"
        )
    x, y = (lw.as_elem(v, elem) for v in op.operands)
    flags = TensorType(i1, out.get_shape())
    rem = lw.build(coreml.ModOp, [x, y], out)
    zero = lw.scalar(0, rem)
    divisor = lw.array(y)
    if divisor is not None and np.all(divisor > 0):
        fix = lw.build(coreml.LessOp, [rem, zero], flags)
    elif divisor is not None and np.all(divisor < 0):
        fix = lw.build(coreml.GreaterOp, [rem, zero], flags)
    else:
        nonzero = lw.build(coreml.NotEqualOp, [rem, zero], flags)
        rem_negative = lw.build(coreml.LessOp, [rem, zero], flags)
        y_negative = lw.build(coreml.LessOp, [y, lw.scalar(0, y)], _bool_like(y))
        signs = lw.build(coreml.LogicalXorOp, [rem_negative, y_negative], flags)
        fix = lw.build(coreml.LogicalAndOp, [nonzero, signs], flags)
    shifted = lw.build(coreml.AddOp, [rem, y], out)
    r = lw.build(coreml.SelectOp, [fix, shifted, rem], out)
    if name == "int32":
        return [r]
    is_zero = lw.build(coreml.EqualOp, [r, lw.scalar(0.0, r)], flags)
    unsigned = lw.build(coreml.SelectOp, [is_zero, lw.build(coreml.AbsOp, [r], out), r], out)
    negative_zero = lw.build(coreml.LogicalAndOp, [is_zero, _negative(lw, x)], flags)
    return [lw.build(coreml.SelectOp, [negative_zero, lw.scalar(-0.0, r), unsigned], out)]


def _negative(lw: Lowering, x: SSAValue) -> SSAValue:
    """`x < 0 or 1 / x < 0` of a float x: its sign bit but for NaN (false)."""
    zero = lw.scalar(0.0, x)
    below = lw.build(coreml.LessOp, [x, zero], _bool_like(x))
    inverse = lw.build(coreml.RealDivOp, [lw.scalar(1.0, x), x], x.type)
    negative_zero = lw.build(coreml.LessOp, [inverse, zero], _bool_like(x))
    return lw.build(coreml.LogicalOrOp, [below, negative_zero], _bool_like(x))


@RULES(ew.FmodOp)
def _fmod(lw: Lowering, op: ew.FmodOp) -> Sequence[SSAValue]:
    """C's fmod as `mod(|x|, |y|)` with x's sign: MIL mod of non-negative operands is
    the same under either sign rule (Python's or C's), and exact; the sign is x's sign
    bit where x is float (`x < 0 or 1 / x < 0`: -0.0 and negatives, as C; a negative
    zero result is `r * -1`), `x < 0` for int32."""
    out = mil_tensor(op.results[0].type)
    elem = out.get_element_type()
    name = coreml.mil_dtype_name(elem)
    if name not in coreml.FI:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: fmod on {name} tensors has no CoreML "
            "lowering (MIL mod takes fp16, fp32 or int32): cast the operands first"
        )
    x, y = (lw.as_elem(v, elem) for v in op.operands)
    return [_fmod_of(lw, x, y, out)]


def _fmod_of(lw: Lowering, x: SSAValue, y: SSAValue, out: TensorType) -> SSAValue:
    """`mod(|x|, |y|)` with x's sign (`_fmod`), in `out`'s type (x and y in it)."""
    elem = out.get_element_type()
    magnitude = lw.build(
        coreml.ModOp,
        [
            lw.build(coreml.AbsOp, [x], TensorType(elem, shape_of(x))),
            lw.build(coreml.AbsOp, [y], TensorType(elem, shape_of(y))),
        ],
        out,
    )
    if coreml.mil_dtype_name(elem) == "int32":
        negative = lw.build(coreml.LessOp, [x, lw.scalar(0, x)], _bool_like(x))
    else:
        negative = _negative(lw, x)
    negated = lw.build(coreml.MulOp, [magnitude, lw.scalar(-1, magnitude)], out)
    return lw.build(coreml.SelectOp, [negative, negated, magnitude], out)


@RULES(ew.MaskedFillOp)
def _masked_fill(lw: Lowering, op: ew.MaskedFillOp) -> Sequence[SSAValue]:
    """`select(mask, value, input)`: the 0-d value (a constant in the input's type,
    or a run-time 0-d tensor cast to it) broadcasts against the input, which has
    the result's shape, so coremltools types the select from its branches."""
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    name = coreml.mil_dtype_name(elem)
    if name not in ("fp16", "fp32", "int32", "bool"):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: masked_fill of a {name} tensor has no CoreML "
            "lowering (MIL select takes fp16, fp32, int32 or bool): cast the input first"
        )
    x = lw.as_elem(op.input, elem)
    if (array := lw.array(op.value)) is not None:
        value = lw.const(np.asarray(array).reshape(()).astype(storage_dtype(elem)), elem, "fill")
    else:
        value = lw.as_elem(op.value, elem)
    return [lw.build(coreml.SelectOp, [op.mask, value, x], out)]

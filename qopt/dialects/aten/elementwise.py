"""Elementwise aten ops: unary math and activations, broadcasting binary ops,
comparisons, boolean logic, `where`, `masked_fill`, casts and clamps.

Arithmetic is carried out in the result's element type (torch's common dtype:
a Python scalar operand does not widen a tensor's type).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import FloatAttr, StringAttr, TensorType
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, result_def

from qopt.dialects.aten.base import AtenOp, broadcast_shapes, shape_of
from qopt.dialects.tensors import Shape


class UnaryOp(AtenOp):
    """`result = f(input)`, same shape."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        return [shape_of(self.input)]


class FloatUnaryOp(UnaryOp):
    def check(self) -> None:
        self.require_float(self.result, "result")


class BinaryOp(AtenOp):
    """`result = f(lhs, rhs)` with numpy/torch broadcasting."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        shape = broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))
        if shape is None:
            raise self.fail(
                f"operand shapes {list(shape_of(self.lhs))} and {list(shape_of(self.rhs))} "
                "do not broadcast"
            )
        return [shape]


class CompareOp(BinaryOp):
    def check(self) -> None:
        self.require_bool(self.result, "result")


class LogicalOp(BinaryOp):
    def check(self) -> None:
        self.require_bool(self.result, "result")


# ----- unary -----------------------------------------------------------------


@irdl_op_definition
class NegOp(UnaryOp):
    name = "aten.neg"


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "aten.abs"


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "aten.relu"


@irdl_op_definition
class SiluOp(FloatUnaryOp):
    name = "aten.silu"


@irdl_op_definition
class SigmoidOp(FloatUnaryOp):
    name = "aten.sigmoid"


@irdl_op_definition
class TanhOp(FloatUnaryOp):
    name = "aten.tanh"


@irdl_op_definition
class ExpOp(FloatUnaryOp):
    name = "aten.exp"


@irdl_op_definition
class LogOp(FloatUnaryOp):
    name = "aten.log"


@irdl_op_definition
class Log10Op(FloatUnaryOp):
    name = "aten.log10"


@irdl_op_definition
class Log2Op(FloatUnaryOp):
    name = "aten.log2"


@irdl_op_definition
class SqrtOp(FloatUnaryOp):
    name = "aten.sqrt"


@irdl_op_definition
class RsqrtOp(FloatUnaryOp):
    name = "aten.rsqrt"


@irdl_op_definition
class ReciprocalOp(FloatUnaryOp):
    name = "aten.reciprocal"


@irdl_op_definition
class SinOp(FloatUnaryOp):
    name = "aten.sin"


@irdl_op_definition
class CosOp(FloatUnaryOp):
    name = "aten.cos"


@irdl_op_definition
class TanOp(FloatUnaryOp):
    name = "aten.tan"


@irdl_op_definition
class AsinOp(FloatUnaryOp):
    """arcsine (NaN outside [-1, 1])."""

    name = "aten.asin"


@irdl_op_definition
class AcosOp(FloatUnaryOp):
    """arccosine (NaN outside [-1, 1])."""

    name = "aten.acos"


@irdl_op_definition
class AtanOp(FloatUnaryOp):
    name = "aten.atan"


@irdl_op_definition
class Expm1Op(FloatUnaryOp):
    """`exp(x) - 1`, accurate near 0 (never computed as exp(x) - 1 alone)."""

    name = "aten.expm1"


@irdl_op_definition
class Log1pOp(FloatUnaryOp):
    """`log(1 + x)`, accurate near 0 (-inf at -1, NaN below)."""

    name = "aten.log1p"


@irdl_op_definition
class SinhOp(FloatUnaryOp):
    name = "aten.sinh"


@irdl_op_definition
class CoshOp(FloatUnaryOp):
    name = "aten.cosh"


@irdl_op_definition
class ErfOp(FloatUnaryOp):
    name = "aten.erf"


@irdl_op_definition
class FloorOp(UnaryOp):
    name = "aten.floor"


@irdl_op_definition
class CeilOp(UnaryOp):
    name = "aten.ceil"


@irdl_op_definition
class TruncOp(UnaryOp):
    """Round toward zero (`trunc`, `fix`); an integer tensor is its input."""

    name = "aten.trunc"


@irdl_op_definition
class SignOp(UnaryOp):
    """`(x > 0) - (x < 0)` in x's type: -1, 0 or 1 (0 for NaN and for -0.0, as torch);
    a bool tensor is its input."""

    name = "aten.sign"


@irdl_op_definition
class RoundOp(UnaryOp):
    """Round half to even (torch.round with decimals=0)."""

    name = "aten.round"


@irdl_op_definition
class GeluOp(FloatUnaryOp):
    """`approximate`: "none" (erf, default) or "tanh"."""

    name = "aten.gelu"
    approximate = opt_prop_def(StringAttr)

    def check(self) -> None:
        super().check()
        if self.approximate is not None and self.approximate.data not in (
            "none",
            "tanh",
        ):
            raise self.fail(f"approximate must be 'none' or 'tanh', got '{self.approximate.data}'")


@irdl_op_definition
class HardswishOp(FloatUnaryOp):
    name = "aten.hardswish"


@irdl_op_definition
class HardsigmoidOp(FloatUnaryOp):
    name = "aten.hardsigmoid"


@irdl_op_definition
class LeakyReluOp(FloatUnaryOp):
    name = "aten.leaky_relu"
    negative_slope = opt_prop_def(FloatAttr)


class ShrinkOp(FloatUnaryOp):
    """A shrink activation with threshold `lambd` (torch's default 0.5)."""

    lambd = opt_prop_def(FloatAttr)


@irdl_op_definition
class HardshrinkOp(ShrinkOp):
    """`0` where `-lambd <= x <= lambd`, else `x`."""

    name = "aten.hardshrink"


@irdl_op_definition
class SoftshrinkOp(ShrinkOp):
    """`x - lambd` where `x > lambd`, `x + lambd` where `x < -lambd`, else `0 * x`."""

    name = "aten.softshrink"

    def check(self) -> None:
        super().check()
        if self.lambd is not None and not self.lambd.value.data >= 0:
            raise self.fail(f"lambd must be >= 0, got {self.lambd.value.data}")


@irdl_op_definition
class ClampOp(UnaryOp):
    """`clamp(input, min, max)`; either bound may be absent (hardtanh, relu6, clamp)."""

    name = "aten.clamp"
    min = opt_prop_def(FloatAttr)
    max = opt_prop_def(FloatAttr)


@irdl_op_definition
class LogicalNotOp(UnaryOp):
    name = "aten.logical_not"

    def check(self) -> None:
        self.require_bool(self.result, "result")


@irdl_op_definition
class BitwiseNotOp(UnaryOp):
    name = "aten.bitwise_not"


@irdl_op_definition
class IsNanOp(UnaryOp):
    name = "aten.isnan"

    def check(self) -> None:
        self.require_bool(self.result, "result")


@irdl_op_definition
class IsInfOp(UnaryOp):
    """`x == +inf or x == -inf` (never for integers)."""

    name = "aten.isinf"

    def check(self) -> None:
        self.require_bool(self.result, "result")


@irdl_op_definition
class SignbitOp(UnaryOp):
    """The sign bit of x: true for negatives, -0.0 and a NaN whose sign bit is set
    (torch.signbit); `x < 0` for integers, false for bools."""

    name = "aten.signbit"

    def check(self) -> None:
        self.require_bool(self.result, "result")


@irdl_op_definition
class IsFiniteOp(UnaryOp):
    """Neither infinite nor NaN (always for integers)."""

    name = "aten.isfinite"

    def check(self) -> None:
        self.require_bool(self.result, "result")


@irdl_op_definition
class CastOp(UnaryOp):
    """Element type conversion (`aten.to`, `_to_copy`, `type_as`): the result type
    carries the target dtype. Float to integer truncates toward zero."""

    name = "aten.to"


@irdl_op_definition
class CloneOp(UnaryOp):
    """Identity (`clone`, `contiguous`, `alias`, `detach`, `lift_fresh_copy`, eval dropout)."""

    name = "aten.clone"

    def check(self) -> None:
        if self.input.type != self.result.type:
            raise self.fail("result type must equal the input type")


# ----- binary ----------------------------------------------------------------


@irdl_op_definition
class AddOp(BinaryOp):
    """`lhs + alpha * rhs`."""

    name = "aten.add"
    alpha = opt_prop_def(FloatAttr)


@irdl_op_definition
class SubOp(BinaryOp):
    """`lhs - alpha * rhs` (`rsub` imports with its operands swapped)."""

    name = "aten.sub"
    alpha = opt_prop_def(FloatAttr)


@irdl_op_definition
class MulOp(BinaryOp):
    name = "aten.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """`rounding_mode`: absent (true division), "trunc" or "floor"."""

    name = "aten.div"
    rounding_mode = opt_prop_def(StringAttr)

    def check(self) -> None:
        if self.rounding_mode is not None and self.rounding_mode.data not in (
            "trunc",
            "floor",
        ):
            raise self.fail(
                f"rounding_mode must be 'trunc' or 'floor', got '{self.rounding_mode.data}'"
            )


@irdl_op_definition
class RemainderOp(BinaryOp):
    """Python-style modulo, torch's formula: `m = fmod(lhs, rhs)`, then `m + rhs` where
    m is nonzero and its sign differs from rhs's (a zero keeps lhs's sign; 3 % -inf
    is -inf)."""

    name = "aten.remainder"


@irdl_op_definition
class FmodOp(BinaryOp):
    """C's fmod: `lhs - trunc(lhs / rhs) * rhs`, exact, with lhs's sign (a zero result
    too); NaN where lhs is infinite, rhs is 0 or either is NaN; lhs where rhs is
    infinite. Integers: truncating division's remainder; an integer rhs of 0 gives 0
    (torch raises ZeroDivisionError)."""

    name = "aten.fmod"


@irdl_op_definition
class PowOp(BinaryOp):
    name = "aten.pow"


@irdl_op_definition
class MaximumOp(BinaryOp):
    name = "aten.maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    name = "aten.minimum"


@irdl_op_definition
class EqOp(CompareOp):
    name = "aten.eq"


@irdl_op_definition
class NeOp(CompareOp):
    name = "aten.ne"


@irdl_op_definition
class LtOp(CompareOp):
    name = "aten.lt"


@irdl_op_definition
class LeOp(CompareOp):
    name = "aten.le"


@irdl_op_definition
class GtOp(CompareOp):
    name = "aten.gt"


@irdl_op_definition
class GeOp(CompareOp):
    name = "aten.ge"


@irdl_op_definition
class LogicalAndOp(LogicalOp):
    name = "aten.logical_and"


@irdl_op_definition
class LogicalOrOp(LogicalOp):
    name = "aten.logical_or"


@irdl_op_definition
class LogicalXorOp(LogicalOp):
    name = "aten.logical_xor"


@irdl_op_definition
class BitwiseAndOp(BinaryOp):
    name = "aten.bitwise_and"


@irdl_op_definition
class BitwiseOrOp(BinaryOp):
    name = "aten.bitwise_or"


@irdl_op_definition
class BitwiseXorOp(BinaryOp):
    name = "aten.bitwise_xor"


class ShiftOp(BinaryOp):
    """A bit shift of integer tensors, torch's rules for a shift amount outside [0,
    width) (width: the element type's bits)."""

    def check(self) -> None:
        self.require_integer(self.result, "result")


@irdl_op_definition
class BitwiseLeftShiftOp(ShiftOp):
    """`lhs << rhs` (`<<`, bitwise_left_shift), wrapping at the element width; 0 where
    rhs is negative or at least the width."""

    name = "aten.bitwise_left_shift"


@irdl_op_definition
class BitwiseRightShiftOp(ShiftOp):
    """`lhs >> rhs` (`>>`, bitwise_right_shift), arithmetic for signed types; where rhs
    is negative or at least the width less the sign bit, `lhs >> (width - 1)` for signed
    types (0 or -1), 0 for unsigned ones."""

    name = "aten.bitwise_right_shift"


# ----- ternary ---------------------------------------------------------------


@irdl_op_definition
class WhereOp(AtenOp):
    """`condition ? lhs : rhs`, broadcasting all three."""

    name = "aten.where"
    condition = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    def check(self) -> None:
        self.require_bool(self.condition, "condition")

    def expected_shapes(self) -> Sequence[Shape]:
        shape = broadcast_shapes(shape_of(self.condition), shape_of(self.lhs), shape_of(self.rhs))
        if shape is None:
            raise self.fail("condition and operand shapes do not broadcast")
        return [shape]


@irdl_op_definition
class MaskedFillOp(AtenOp):
    """`mask ? value : input` where `value` is a 0-d tensor; mask broadcasts to input."""

    name = "aten.masked_fill"
    input = operand_def(TensorType)
    mask = operand_def(TensorType)
    value = operand_def(TensorType)
    result = result_def(TensorType)

    def check(self) -> None:
        self.require_bool(self.mask, "mask")
        if shape_of(self.value) != ():
            raise self.fail("value must be a 0-d tensor")

    def expected_shapes(self) -> Sequence[Shape]:
        if broadcast_shapes(shape_of(self.input), shape_of(self.mask)) != shape_of(self.input):
            raise self.fail("mask must broadcast to the input shape")
        return [shape_of(self.input)]


OPS = [
    NegOp, AbsOp, ReluOp, SiluOp, SigmoidOp, TanhOp, ExpOp, LogOp, Log10Op, Log2Op, SqrtOp,
    RsqrtOp, ReciprocalOp, SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp, SinhOp, CoshOp, ErfOp,
    Expm1Op, Log1pOp,
    FloorOp, CeilOp, TruncOp, SignOp, RoundOp, GeluOp,
    HardswishOp, HardsigmoidOp, LeakyReluOp, HardshrinkOp, SoftshrinkOp, ClampOp,
    LogicalNotOp, BitwiseNotOp, IsNanOp, IsInfOp, IsFiniteOp, SignbitOp, CastOp, CloneOp,
    AddOp, SubOp, MulOp, DivOp, RemainderOp, FmodOp, PowOp, MaximumOp, MinimumOp,
    EqOp, NeOp, LtOp, LeOp, GtOp, GeOp, LogicalAndOp, LogicalOrOp, LogicalXorOp,
    BitwiseAndOp, BitwiseOrOp, BitwiseXorOp, BitwiseLeftShiftOp, BitwiseRightShiftOp,
    WhereOp, MaskedFillOp,
]  # fmt: skip

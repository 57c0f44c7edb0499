"""Converters of ATen ops that import as chains of aten elementwise ops (activations such
as elu, softplus and mish; lerp, addcmul, copysign, atan2; hypot, logaddexp and the
inverse hyperbolics from accurate pieces): see qopt/dialects/aten/elementwise.py. The
one-op converters are elementwise.py's."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from torch.fx import Node
from xdsl.dialects.builtin import AnyFloat, TensorType, i1
from xdsl.ir import Operation, SSAValue

from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten.base import broadcast_shapes, shape_of
from qopt.dialects.tensors import elem_of
from qopt.dtypes import numpy_dtype
from qopt.frontend.converters.table import ConverterTable
from qopt.frontend.importer import Importer, node_location

CONVERTERS = ConverterTable()


# ----- activations composed of elementwise ops ------------------------------------------------
# elu / selu / celu, softplus, mish and log_sigmoid import as the chains of aten elementwise
# ops below, as torch computes them: with the accurate expm1 and log1p ops (exp(x) - 1 and
# log(1 + exp(x)) lose every digit where the result is small: elu(-1e-6) was 7% off on
# Vulkan, log_sigmoid(7) 5e-5), so each is within a few ulp of the float64 answer. Every
# target then runs them with the ops it has, and Vulkan fuses each chain into one
# fused_elementwise dispatch.

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


class _Chain:
    """Builds a chain of elementwise ops in the node's result element type (each
    intermediate of its operands' broadcast shape), inserted before the node's own op
    and located at the node."""

    def __init__(self, imp: Importer, node: Node) -> None:
        self.imp, self.node = imp, node
        self.type = imp.result_type()
        self.elem = self.type.get_element_type()

    def emit(self, op: Operation) -> SSAValue:
        if (loc := node_location(self.node)) is not None:
            op.location = loc
        self.imp.builder.insert(op)
        return op.results[0]

    def const(self, value: float) -> SSAValue:
        return self.imp.constant(np.array(value, dtype=numpy_dtype(self.elem)), "scalar")

    def shape(self, *values: SSAValue) -> list[int]:
        shape = broadcast_shapes(*(shape_of(v) for v in values))
        if shape is None:
            raise self.imp.error("operand shapes do not broadcast")
        return list(shape)

    def unary(self, op_type: type[ew.UnaryOp], x: SSAValue) -> SSAValue:
        return self.emit(
            op_type.create(operands=[x], result_types=[TensorType(self.elem, self.shape(x))])
        )

    def binary(self, op_type: type[ew.BinaryOp], x: SSAValue, y: SSAValue) -> SSAValue:
        elem = i1 if issubclass(op_type, ew.CompareOp) else self.elem
        return self.emit(
            op_type.create(operands=[x, y], result_types=[TensorType(elem, self.shape(x, y))])
        )

    def scaled(self, x: SSAValue, factor: float) -> SSAValue:
        return x if factor == 1 else self.binary(ew.MulOp, x, self.const(factor))

    def log1p_exp(self, x: SSAValue) -> SSAValue:
        """log1p(exp(x))."""
        return self.unary(ew.Log1pOp, self.unary(ew.ExpOp, x))

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> Operation:
        """`cond ? a : b` (not inserted: emit it, or return it as the node's op)."""
        return ew.WhereOp.create(
            operands=[cond, a, b], result_types=[TensorType(self.elem, self.shape(cond, a, b))]
        )


def _float_input(imp: Importer, args: dict[str, Any], what: str) -> SSAValue:
    x = imp.value(args["self"])
    if not isinstance(imp.result_type().get_element_type(), AnyFloat):
        raise imp.error(f"{what} takes a float tensor")
    return x


def _number(imp: Importer, args: dict[str, Any], name: str, default: float, what: str) -> float:
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise imp.error(f"{name} of {what} must be a number, got {value!r}")
    return float(value)


def _elu(chain: _Chain, x: SSAValue, alpha: float, scale: float, input_scale: float) -> Operation:
    """`x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale` (torch's elu; NaN
    takes the second branch and stays NaN; -0.0 stays -0.0)."""
    e = chain.unary(ew.Expm1Op, chain.scaled(x, input_scale))
    negative = chain.scaled(e, alpha * scale)
    positive = chain.scaled(x, scale)
    return chain.select(chain.binary(ew.GtOp, x, chain.const(0.0)), positive, negative)


@CONVERTERS("aten.elu.default")
def convert_elu(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`elu(x, alpha=1, scale=1, input_scale=1)`: where, gt, exp, sub, mul."""
    x = _float_input(imp, args, "elu")
    alpha = _number(imp, args, "alpha", 1.0, "elu")
    scale = _number(imp, args, "scale", 1.0, "elu")
    input_scale = _number(imp, args, "input_scale", 1.0, "elu")
    return _elu(_Chain(imp, node), x, alpha, scale, input_scale)


@CONVERTERS("aten.selu.default")
def convert_selu(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`selu(x)`: elu with torch's fixed alpha 1.67326... and scale 1.05070..."""
    x = _float_input(imp, args, "selu")
    return _elu(_Chain(imp, node), x, SELU_ALPHA, SELU_SCALE, 1.0)


@CONVERTERS("aten.celu.default")
def convert_celu(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`celu(x, alpha=1)`: elu with input_scale 1 / alpha (alpha != 0)."""
    x = _float_input(imp, args, "celu")
    alpha = _number(imp, args, "alpha", 1.0, "celu")
    if alpha == 0:
        raise imp.error("alpha of celu must not be 0 (torch's ZeroDivisionError)")
    return _elu(_Chain(imp, node), x, alpha, 1.0, 1.0 / alpha)


@CONVERTERS("aten.softplus.default")
def convert_softplus(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`softplus(x, beta=1, threshold=20)`: `x` where `x * beta > threshold`, else
    `log1p(exp(x * beta)) / beta`."""
    x = _float_input(imp, args, "softplus")
    beta = _number(imp, args, "beta", 1.0, "softplus")
    threshold = _number(imp, args, "threshold", 20.0, "softplus")
    chain = _Chain(imp, node)
    bx = chain.scaled(x, beta)
    smooth = chain.log1p_exp(bx)
    if beta != 1:
        smooth = chain.binary(ew.DivOp, smooth, chain.const(beta))
    return chain.select(chain.binary(ew.GtOp, bx, chain.const(threshold)), x, smooth)


@CONVERTERS("aten.mish.default")
def convert_mish(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`mish(x) = x * tanh(log1p(exp(x)))` (torch's, no threshold: exp's overflow to
    inf makes tanh 1)."""
    x = _float_input(imp, args, "mish")
    chain = _Chain(imp, node)
    gate = chain.unary(ew.TanhOp, chain.log1p_exp(x))
    return ew.MulOp.create(operands=[x, gate], result_types=[chain.type])


@CONVERTERS("aten.log_sigmoid.default")
def convert_log_sigmoid(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|))` (torch's stable form: no
    overflow for any x)."""
    x = _float_input(imp, args, "log_sigmoid")
    chain = _Chain(imp, node)
    low = chain.binary(ew.MinimumOp, x, chain.const(0.0))
    tail = chain.log1p_exp(chain.unary(ew.NegOp, chain.unary(ew.AbsOp, x)))
    return ew.SubOp.create(operands=[low, tail], result_types=[chain.type])


@CONVERTERS("aten.positive.default")
def convert_positive(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`+x`: the input itself."""
    return ew.CloneOp.create(operands=[imp.value(args["self"])], result_types=[imp.result_type()])


@CONVERTERS("aten.square.default")
def convert_square(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`x * x` in the result's type (a bool tensor squares to int64, as torch)."""
    x = imp.value(args["self"])
    return ew.MulOp.create(operands=[x, x], result_types=[imp.result_type()])


@CONVERTERS("aten.deg2rad.default", "aten.rad2deg.default")
def convert_deg2rad(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`x * (pi / 180)` / `x * (180 / pi)` in the (float) result type, the factor rounded
    to it, as torch multiplies by the double scalar (an integer x is cast first)."""
    factor = math.pi / 180 if "deg2rad" in str(node.target) else 180 / math.pi
    result = imp.result_type()
    if not isinstance(result.get_element_type(), AnyFloat):
        raise imp.error(f"{node.target} of a non-float result is not supported")
    dtype = numpy_dtype(result.get_element_type())
    scale = imp.constant(np.array(factor, dtype=dtype), "scalar")
    return ew.MulOp.create(operands=[imp.value(args["self"]), scale], result_types=[result])


@CONVERTERS("aten.heaviside.default")
def convert_heaviside(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`heaviside(x, values) = x == 0 ? values : (x > 0)` (NaN: 0, as torch), in the
    result's type."""
    x, values = imp.value(args["self"]), imp.value(args["values"])
    chain = _Chain(imp, node)
    zero = imp.constant(np.array(0, dtype=numpy_dtype(elem_of(x))), "scalar")
    step = chain.emit(chain.select(chain.binary(ew.GtOp, x, zero), chain.const(1), chain.const(0)))
    return chain.select(chain.binary(ew.EqOp, x, zero), values, step)


@CONVERTERS("aten.xlogy.Tensor", "aten.xlogy.Scalar_Other", "aten.xlogy.Scalar_Self")
def convert_xlogy(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`xlogy(x, y)`: NaN where y is NaN, else 0 where x == 0, else `x * log(y)` (torch's
    order), in the float result type."""
    chain = _Chain(imp, node)
    if not isinstance(chain.type.get_element_type(), AnyFloat):
        raise imp.error("xlogy of a non-float result is not supported")
    x_arg, y_arg = args["self"], args["other"]
    x = imp.operand(x_arg) if isinstance(x_arg, Node) else chain.const(float(x_arg))
    y = imp.operand(y_arg) if isinstance(y_arg, Node) else chain.const(float(y_arg))
    product = chain.binary(ew.MulOp, x, chain.unary(ew.LogOp, y))
    zero = chain.const(0.0)
    finite = chain.emit(chain.select(chain.binary(ew.EqOp, x, zero), zero, product))
    y_nan = chain.emit(ew.IsNanOp.create(operands=[y], result_types=[TensorType(i1, shape_of(y))]))
    return chain.select(y_nan, y, finite)


@CONVERTERS("aten.lerp.Scalar", "aten.lerp.Tensor")
def convert_lerp(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`lerp(start, end, w)` with torch's two formulas: `start + w * (end - start)` where
    `|w| < 0.5`, else `end - (end - start) * (1 - w)` (a NaN weight takes the second),
    in the float result type; a scalar weight is rounded to it and picks the formula
    at import, a tensor weight per element through a select."""
    chain = _Chain(imp, node)
    if not isinstance(chain.elem, AnyFloat):
        raise imp.error("lerp of a non-float result is not supported (torch refuses it too)")
    start, end = imp.value(args["self"]), imp.value(args["end"])
    weight_arg = args["weight"]
    if isinstance(weight_arg, Node):
        weight = imp.value(weight_arg)
    elif isinstance(weight_arg, int | float) and not isinstance(weight_arg, bool):
        weight = chain.const(float(weight_arg))
    else:
        raise imp.error(f"the weight of lerp must be a tensor or a number, got {weight_arg!r}")
    diff = chain.binary(ew.SubOp, end, start)
    if not isinstance(weight_arg, Node):
        w = float(np.array(weight_arg, dtype=numpy_dtype(chain.elem)))
        if abs(w) < 0.5:
            return _binary_op(chain, ew.AddOp, start, chain.binary(ew.MulOp, weight, diff))
        rest = chain.binary(ew.SubOp, chain.const(1.0), weight)
        return _binary_op(chain, ew.SubOp, end, chain.binary(ew.MulOp, diff, rest))
    small = chain.binary(ew.LtOp, chain.unary(ew.AbsOp, weight), chain.const(0.5))
    near_start = chain.binary(ew.AddOp, start, chain.binary(ew.MulOp, weight, diff))
    rest = chain.binary(ew.SubOp, chain.const(1.0), weight)
    near_end = chain.binary(ew.SubOp, end, chain.binary(ew.MulOp, diff, rest))
    return chain.select(small, near_start, near_end)


def _binary_op(chain: _Chain, op_type: type[ew.BinaryOp], x: SSAValue, y: SSAValue) -> Operation:
    """The node's own (last) binary op: not inserted, of the broadcast shape."""
    return op_type.create(operands=[x, y], result_types=[TensorType(chain.elem, chain.shape(x, y))])


@CONVERTERS("aten.addcmul.default", "aten.addcdiv.default")
def convert_addcmul(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`addcmul(x, t1, t2, value) = x + value * t1 * t2` and `addcdiv(...) = x + value *
    t1 / t2`, in torch's order (`(value * t1) op t2`, the mul skipped for value 1), in
    the promoted result type (the value rounded to it); addcdiv of integers is refused,
    as torch does."""
    chain = _Chain(imp, node)
    divide = "addcdiv" in str(node.target)
    if divide and not isinstance(chain.elem, AnyFloat):
        raise imp.error("addcdiv of integer tensors is not supported (torch refuses it too)")
    value = args.get("value", 1)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise imp.error(f"the value of {node.target} must be a number, got {value!r}")
    if not isinstance(chain.elem, AnyFloat) and not float(value).is_integer():
        raise imp.error(f"a fractional value {value} for integer tensors is not supported")
    x, t1, t2 = imp.value(args["self"]), imp.value(args["tensor1"]), imp.value(args["tensor2"])
    scaled = t1 if value == 1 else chain.binary(ew.MulOp, chain.const(value), t1)
    product = chain.binary(ew.DivOp if divide else ew.MulOp, scaled, t2)
    return _binary_op(chain, ew.AddOp, x, product)


@CONVERTERS("aten.nan_to_num.default")
def convert_nan_to_num(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`nan_to_num(x, nan, posinf, neginf)`: NaN -> `nan` (default 0), +inf -> `posinf`
    (default the type's largest finite value), -inf -> `neginf` (default its lowest),
    the replacements rounded to the float result type, as selects; an integer or bool
    tensor is its input (a copy, as torch)."""
    x = imp.value(args["self"])
    chain = _Chain(imp, node)
    if not isinstance(chain.elem, AnyFloat):
        return ew.CloneOp.create(operands=[x], result_types=[chain.type])
    info = np.finfo(numpy_dtype(chain.elem))
    values: list[float] = []
    for name, default in (("nan", 0.0), ("posinf", float(info.max)), ("neginf", float(info.min))):
        value = args.get(name)
        if value is None:
            value = default
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise imp.error(f"{name} of nan_to_num must be a number, got {value!r}")
        values.append(float(value))
    nan, posinf, neginf = (chain.const(v) for v in values)
    below = chain.binary(ew.EqOp, x, chain.const(float("-inf")))
    r = chain.emit(chain.select(below, neginf, x))
    above = chain.binary(ew.EqOp, x, chain.const(float("inf")))
    r = chain.emit(chain.select(above, posinf, r))
    is_nan = chain.emit(ew.IsNanOp.create(operands=[x], result_types=[TensorType(i1, shape_of(x))]))
    return chain.select(is_nan, nan, r)


@CONVERTERS("aten.copysign.Tensor", "aten.copysign.Scalar")
def convert_copysign(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`copysign(a, b)`: |a| with b's sign, in the float result type (integers cast
    first), as `select(signbit(b), -|a|, |a|)`: the sign bit, as torch, so -0.0 and a
    NaN b with its sign bit set count as negative (on CoreML, which cannot read a
    NaN's bit, a NaN b counts as positive); a scalar b's sign is taken at import."""
    chain = _Chain(imp, node)
    if not isinstance(chain.elem, AnyFloat):
        raise imp.error("copysign of a non-float result is not supported")

    def as_float(v: SSAValue) -> SSAValue:
        return v if elem_of(v) == chain.elem else chain.unary(ew.CastOp, v)

    magnitude = chain.unary(ew.AbsOp, as_float(imp.value(args["self"])))
    other = args["other"]
    if not isinstance(other, Node):
        if not isinstance(other, int | float) or isinstance(other, bool):
            raise imp.error(f"the sign of copysign must be a tensor or a number, got {other!r}")
        if math.copysign(1.0, float(other)) < 0:
            return ew.NegOp.create(operands=[magnitude], result_types=[chain.type])
        return ew.CloneOp.create(operands=[magnitude], result_types=[chain.type])
    b = imp.value(other)
    negative = chain.emit(
        ew.SignbitOp.create(operands=[b], result_types=[TensorType(i1, shape_of(b))])
    )
    return chain.select(negative, chain.unary(ew.NegOp, magnitude), magnitude)


def _sign_bit(chain: _Chain, v: SSAValue) -> SSAValue:
    """`v < 0 or 1 / v < 0` (float v): true for negatives and -0.0, false for NaN."""
    below = chain.binary(ew.LtOp, v, chain.const(0.0))
    inverse = chain.binary(ew.DivOp, chain.const(1.0), v)
    return _or(chain, below, chain.binary(ew.LtOp, inverse, chain.const(0.0)))


def _or(chain: _Chain, a: SSAValue, b: SSAValue) -> SSAValue:
    return chain.emit(
        ew.LogicalOrOp.create(operands=[a, b], result_types=[TensorType(i1, chain.shape(a, b))])
    )


def _and(chain: _Chain, a: SSAValue, b: SSAValue) -> SSAValue:
    return chain.emit(
        ew.LogicalAndOp.create(operands=[a, b], result_types=[TensorType(i1, chain.shape(a, b))])
    )


@CONVERTERS("aten.atan2.default")
def convert_atan2(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`atan2(y, x)` as C's atan2, composed: `atan(y / x)`, plus pi with y's sign where
    x is negative or -0.0 (signs by `_sign_bit`); where y and x are both zero, y (x
    positive) or pi with y's sign (x negative); where both are infinite, pi/4 or 3pi/4
    with y's sign; NaN where either is. Integers are cast to the float result type."""
    chain = _Chain(imp, node)
    if not isinstance(chain.elem, AnyFloat):
        raise imp.error("atan2 of a non-float result is not supported")

    def as_float(v: SSAValue) -> SSAValue:
        return v if elem_of(v) == chain.elem else chain.unary(ew.CastOp, v)

    y, x = as_float(imp.value(args["self"])), as_float(imp.value(args["other"]))
    y_neg, x_neg = _sign_bit(chain, y), _sign_bit(chain, x)

    def signed(value: float) -> SSAValue:
        """`value` with y's sign."""
        return chain.emit(chain.select(y_neg, chain.const(-value), chain.const(value)))

    base = chain.unary(ew.AtanOp, chain.binary(ew.DivOp, y, x))
    turned = chain.binary(ew.AddOp, base, signed(math.pi))
    r = chain.emit(chain.select(x_neg, turned, base))
    zero = chain.const(0.0)
    both_zero = _and(chain, chain.binary(ew.EqOp, y, zero), chain.binary(ew.EqOp, x, zero))
    at_zero = chain.emit(chain.select(x_neg, signed(math.pi), y))
    r = chain.emit(chain.select(both_zero, at_zero, r))
    inf = [
        chain.emit(ew.IsInfOp.create(operands=[v], result_types=[TensorType(i1, shape_of(v))]))
        for v in (y, x)
    ]
    at_inf = chain.emit(chain.select(x_neg, signed(3 * math.pi / 4), signed(math.pi / 4)))
    return chain.select(_and(chain, inf[0], inf[1]), at_inf, r)


# ----- math composed of accurate pieces (hypot, logaddexp, inverse hyperbolics) ---------------

LN2 = math.log(2.0)
_HUGE = 1e18
"""Above this, x * x overflows float32: asinh / acosh take log(x) + ln 2."""


def _float_operand(imp: Importer, chain: _Chain, value: Any, what: str) -> SSAValue:
    """A tensor or number operand in the chain's float type (integers cast)."""
    if not isinstance(chain.elem, AnyFloat):
        raise imp.error(f"{what} of a non-float result is not supported")
    if not isinstance(value, Node):
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise imp.error(f"an operand of {what} must be a tensor or a number, got {value!r}")
        return chain.const(float(value))
    v = imp.value(value)
    return v if elem_of(v) == chain.elem else chain.unary(ew.CastOp, v)


def _flag(chain: _Chain, op_type: type[ew.UnaryOp], x: SSAValue) -> SSAValue:
    """A bool-valued unary op (isinf, isnan, signbit) of x."""
    return chain.emit(op_type.create(operands=[x], result_types=[TensorType(i1, shape_of(x))]))


def _with_sign_of(chain: _Chain, r: SSAValue, x: SSAValue) -> Operation:
    """r (non-negative) with x's sign bit: `select(signbit(x), -r, r)` (-0.0 kept)."""
    return chain.select(_flag(chain, ew.SignbitOp, x), chain.unary(ew.NegOp, r), r)


@CONVERTERS("aten.hypot.default")
def convert_hypot(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`hypot(x, y)` without overflow or underflow: with m = max(|x|, |y|) and n =
    min(|x|, |y|), `m * sqrt(1 + (n / m)^2)` (~1.5 ulp); 0 where m is 0; +inf where
    either is infinite, even with a NaN (C's hypot); else NaN passes (maximum)."""
    chain = _Chain(imp, node)
    x = chain.unary(ew.AbsOp, _float_operand(imp, chain, args["self"], "hypot"))
    y = chain.unary(ew.AbsOp, _float_operand(imp, chain, args["other"], "hypot"))
    m, n = chain.binary(ew.MaximumOp, x, y), chain.binary(ew.MinimumOp, x, y)
    q = chain.binary(ew.DivOp, n, m)
    root = chain.unary(
        ew.SqrtOp, chain.binary(ew.AddOp, chain.const(1.0), chain.binary(ew.MulOp, q, q))
    )
    r = chain.binary(ew.MulOp, m, root)
    zero = chain.const(0.0)
    r = chain.emit(chain.select(chain.binary(ew.EqOp, m, zero), zero, r))
    infinite = _or(chain, _flag(chain, ew.IsInfOp, x), _flag(chain, ew.IsInfOp, y))
    return chain.select(infinite, chain.const(float("inf")), r)


@CONVERTERS("aten.logaddexp.default", "aten.logaddexp2.default")
def convert_logaddexp(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`logaddexp(x, y) = max(x, y) + log1p(exp(-|x - y|))` (torch's form, through the
    accurate log1p), `logaddexp2` with exp2(z) = exp(z ln 2) and the log1p divided by
    ln 2; x where x and y are the same infinity (their difference is NaN); NaN passes."""
    base2 = "logaddexp2" in str(node.target)
    what = "logaddexp2" if base2 else "logaddexp"
    chain = _Chain(imp, node)
    x = _float_operand(imp, chain, args["self"], what)
    y = _float_operand(imp, chain, args["other"], what)
    m = chain.binary(ew.MaximumOp, x, y)
    z = chain.unary(ew.NegOp, chain.unary(ew.AbsOp, chain.binary(ew.SubOp, x, y)))
    tail = chain.unary(ew.Log1pOp, chain.unary(ew.ExpOp, chain.scaled(z, LN2 if base2 else 1.0)))
    if base2:
        tail = chain.binary(ew.MulOp, tail, chain.const(1.0 / LN2))
    r = chain.binary(ew.AddOp, m, tail)
    same_infinity = _and(chain, _flag(chain, ew.IsInfOp, x), chain.binary(ew.EqOp, x, y))
    return chain.select(same_infinity, x, r)


def _log_twice(chain: _Chain, a: SSAValue) -> SSAValue:
    """`log(a) + ln 2` (= log(2a) without overflow): asinh / acosh of a huge a."""
    return chain.binary(ew.AddOp, chain.unary(ew.LogOp, a), chain.const(LN2))


@CONVERTERS("aten.asinh.default")
def convert_asinh(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`asinh(x)` to a few ulp: with a = |x|, `log1p(a + a^2 / (1 + sqrt(1 + a^2)))`
    (no cancellation near 0), `log(a) + ln 2` above 1e18; x's sign (-0.0 kept), NaN
    and +-inf pass. Integers promote to float."""
    chain = _Chain(imp, node)
    x = _float_operand(imp, chain, args["self"], "asinh")
    a = chain.unary(ew.AbsOp, x)
    a2 = chain.binary(ew.MulOp, a, a)
    root = chain.unary(ew.SqrtOp, chain.binary(ew.AddOp, chain.const(1.0), a2))
    inner = chain.binary(ew.DivOp, a2, chain.binary(ew.AddOp, chain.const(1.0), root))
    near = chain.unary(ew.Log1pOp, chain.binary(ew.AddOp, a, inner))
    huge = chain.binary(ew.GtOp, a, chain.const(_HUGE))
    r = chain.emit(chain.select(huge, _log_twice(chain, a), near))
    return _with_sign_of(chain, r, x)


@CONVERTERS("aten.acosh.default")
def convert_acosh(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`acosh(x)` to a few ulp: with t = x - 1 (exact near 1), `log1p(t + sqrt(t (t +
    2)))`, `log(x) + ln 2` above 1e18; NaN below 1 and for NaN, +inf at +inf. Integers
    promote to float."""
    chain = _Chain(imp, node)
    x = _float_operand(imp, chain, args["self"], "acosh")
    t = chain.binary(ew.SubOp, x, chain.const(1.0))
    root = chain.unary(
        ew.SqrtOp, chain.binary(ew.MulOp, t, chain.binary(ew.AddOp, t, chain.const(2.0)))
    )
    near = chain.unary(ew.Log1pOp, chain.binary(ew.AddOp, t, root))
    huge = chain.binary(ew.GtOp, x, chain.const(_HUGE))
    r = chain.emit(chain.select(huge, _log_twice(chain, x), near))
    below = chain.binary(ew.LtOp, x, chain.const(1.0))
    return chain.select(below, chain.const(float("nan")), r)


@CONVERTERS("aten.atanh.default")
def convert_atanh(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`atanh(x)` to a few ulp: with a = |x|, `log1p(2a / (1 - a)) / 2` (1 - a exact near
    1, no cancellation near 0) with x's sign: +-inf at +-1, NaN beyond and for NaN,
    -0.0 kept. Integers promote to float."""
    chain = _Chain(imp, node)
    x = _float_operand(imp, chain, args["self"], "atanh")
    a = chain.unary(ew.AbsOp, x)
    ratio = chain.binary(
        ew.DivOp, chain.binary(ew.AddOp, a, a), chain.binary(ew.SubOp, chain.const(1.0), a)
    )
    r = chain.binary(ew.MulOp, chain.unary(ew.Log1pOp, ratio), chain.const(0.5))
    return _with_sign_of(chain, r, x)


@CONVERTERS("aten.fmax.default", "aten.fmin.default")
def convert_fmax_fmin(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`fmax` / `fmin`: maximum / minimum ignoring NaN (the other operand where one is
    NaN, NaN where both are), as selects around the NaN-propagating maximum / minimum;
    on integers and bools the plain maximum / minimum, in the promoted result type."""
    op_type = ew.MaximumOp if "fmax" in str(node.target) else ew.MinimumOp
    chain = _Chain(imp, node)

    def promoted(value: Any) -> SSAValue:
        v = imp.value(value)
        return v if elem_of(v) == chain.elem else chain.unary(ew.CastOp, v)

    x, y = promoted(args["self"]), promoted(args["other"])
    if not isinstance(chain.elem, AnyFloat):
        return _binary_op(chain, op_type, x, y)
    r = chain.binary(op_type, x, y)
    r = chain.emit(chain.select(_flag(chain, ew.IsNanOp, y), x, r))
    return chain.select(_flag(chain, ew.IsNanOp, x), y, r)

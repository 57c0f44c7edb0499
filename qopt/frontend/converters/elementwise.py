"""Converters for elementwise ATen ops that import as one aten op (see
qopt/dialects/aten/elementwise.py); those that import as chains of them are composed.py's."""

from __future__ import annotations

from typing import Any

import numpy as np
from torch.fx import Node
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerType, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten.base import shape_of
from qopt.dialects.tensors import elem_of
from qopt.dtypes import numpy_dtype
from qopt.frontend.converters.table import ConverterTable
from qopt.frontend.importer import Importer, node_location

CONVERTERS = ConverterTable()


def _f64(value: float) -> FloatAttr:
    return FloatAttr(float(value), 64)


def _unary(op_type: type[ew.UnaryOp], *targets: str) -> None:
    def convert(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
        return op_type.create(operands=[imp.value(args["self"])], result_types=[imp.result_type()])

    CONVERTERS(*targets)(convert)


for _op, _names in [
    (ew.NegOp, ["neg"]),
    (ew.AbsOp, ["abs"]),
    (ew.ReluOp, ["relu"]),
    (ew.SiluOp, ["silu"]),
    (ew.SigmoidOp, ["sigmoid"]),
    (ew.TanhOp, ["tanh"]),
    (ew.ExpOp, ["exp"]),
    (ew.LogOp, ["log"]),
    (ew.Log10Op, ["log10"]),
    (ew.Log2Op, ["log2"]),
    (ew.SqrtOp, ["sqrt"]),
    (ew.RsqrtOp, ["rsqrt"]),
    (ew.ReciprocalOp, ["reciprocal"]),
    (ew.SinOp, ["sin"]),
    (ew.CosOp, ["cos"]),
    (ew.TanOp, ["tan"]),
    (ew.AsinOp, ["asin", "arcsin"]),
    (ew.AcosOp, ["acos", "arccos"]),
    (ew.AtanOp, ["atan", "arctan"]),
    (ew.Expm1Op, ["expm1"]),
    (ew.Log1pOp, ["log1p"]),
    (ew.SinhOp, ["sinh"]),
    (ew.CoshOp, ["cosh"]),
    (ew.ErfOp, ["erf"]),
    (ew.FloorOp, ["floor"]),
    (ew.TruncOp, ["trunc", "fix"]),
    (ew.SignOp, ["sign", "sgn"]),  # sgn: sign of a real tensor
    (ew.IsInfOp, ["isinf"]),
    (ew.IsFiniteOp, ["isfinite"]),
    (ew.SignbitOp, ["signbit"]),
    (ew.CeilOp, ["ceil"]),
    (ew.RoundOp, ["round"]),
    (ew.HardswishOp, ["hardswish"]),
    (ew.HardsigmoidOp, ["hardsigmoid"]),
    (ew.LogicalNotOp, ["logical_not"]),
    (ew.BitwiseNotOp, ["bitwise_not"]),
    (ew.IsNanOp, ["isnan"]),
]:
    _unary(_op, *(f"aten.{n}.default" for n in _names))

_unary(
    ew.CloneOp,
    "aten.clone.default",
    "aten.contiguous.default",
    "aten.alias.default",
    "aten.detach.default",
    "aten.detach_.default",  # value-preserving: only drops autograd history
    "aten.lift_fresh_copy.default",
)
_unary(
    ew.CastOp,
    "aten.to.dtype",
    "aten.to.dtype_layout",
    "aten.to.device",
    "aten._to_copy.default",
    "aten.type_as.default",
)


@CONVERTERS("aten.dropout.default")
def convert_dropout(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """Eval-mode dropout is the identity. Also the functional form of the in-place
    `dropout_` (`nn.Dropout(inplace=True)`), whose schema names the input `self`."""
    if args.get("train"):
        raise imp.error("dropout in training mode is random: export the model in eval mode")
    x = args["input"] if "input" in args else args["self"]
    return ew.CloneOp.create(operands=[imp.value(x)], result_types=[imp.result_type()])


@CONVERTERS("aten.gelu.default")
def convert_gelu(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    approximate = args.get("approximate") or "none"
    props: dict[str, Attribute] = {}
    if approximate != "none":
        props["approximate"] = StringAttr(approximate)
    return ew.GeluOp.create(
        operands=[imp.value(args["self"])],
        result_types=[imp.result_type()],
        properties=props,
    )


@CONVERTERS("aten.leaky_relu.default")
def convert_leaky_relu(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    slope = args.get("negative_slope")
    return ew.LeakyReluOp.create(
        operands=[imp.value(args["self"])],
        result_types=[imp.result_type()],
        properties={"negative_slope": _f64(0.01 if slope is None else slope)},
    )


@CONVERTERS("aten.hardshrink.default", "aten.softshrink.default")
def convert_shrink(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    op_type = ew.HardshrinkOp if "hardshrink" in str(node.target) else ew.SoftshrinkOp
    lambd = args.get("lambd")
    lambd = 0.5 if lambd is None else lambd
    if not isinstance(lambd, int | float):
        raise imp.error(f"lambd of {op_type.name} must be a number, got {lambd!r}")
    if op_type is ew.SoftshrinkOp and not lambd >= 0:
        raise imp.error(f"lambd of {op_type.name} must be >= 0, got {lambd}")
    return op_type.create(
        operands=[imp.value(args["self"])],
        result_types=[imp.result_type()],
        properties={"lambd": _f64(lambd)},
    )


def _clamp(imp: Importer, x: Any, lo: Any, hi: Any) -> Operation:
    if isinstance(lo, Node) or isinstance(hi, Node):
        return _runtime_clamp(imp, x, lo, hi)
    props: dict[str, Attribute] = {}
    for name, bound in (("min", lo), ("max", hi)):
        if bound is None:
            continue
        if not isinstance(bound, int | float):
            raise imp.error(f"{name} of clamp must be a number, got {bound!r}")
        props[name] = _f64(bound)
    return ew.ClampOp.create(
        operands=[imp.value(x)], result_types=[imp.result_type()], properties=props
    )


def _runtime_clamp(imp: Importer, x: Any, lo: Any, hi: Any) -> Operation:
    """`clamp` with a bound computed at run time (a SymInt: `max=x.shape[0]`):
    `minimum(maximum(x, lo), hi)` in the result's dtype, as torch clamps."""
    result = imp.result_type()
    elem = result.get_element_type()
    value = imp.value(x)
    if elem_of(value) != elem:
        cast = ew.CastOp.create(operands=[value], result_types=[TensorType(elem, shape_of(value))])
        value = _insert(imp, cast)
    op: Operation | None = None
    for op_type, bound in ((ew.MaximumOp, lo), (ew.MinimumOp, hi)):
        if bound is None:
            continue
        if op is not None:
            value = _insert(imp, op)
        limit = imp.operand(bound, like=value)
        if shape_of(limit):
            raise imp.error("a clamp bound must be a number")
        if elem_of(limit) != elem:
            cast = ew.CastOp.create(operands=[limit], result_types=[TensorType(elem, [])])
            limit = _insert(imp, cast)
        op = op_type.create(operands=[value, limit], result_types=[result])
    assert op is not None
    return op


def _insert(imp: Importer, op: Operation) -> SSAValue:
    """Insert an intermediate op at the current node's line."""
    if imp.node is not None and (loc := node_location(imp.node)) is not None:
        op.location = loc
    imp.builder.insert(op)
    return op.results[0]


@CONVERTERS("aten.clamp.default")
def convert_clamp(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _clamp(imp, args["self"], args.get("min"), args.get("max"))


@CONVERTERS("aten.clamp_min.default")
def convert_clamp_min(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _clamp(imp, args["self"], args["min"], None)


@CONVERTERS("aten.clamp_max.default")
def convert_clamp_max(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _clamp(imp, args["self"], None, args["max"])


@CONVERTERS("aten.hardtanh.default")
def convert_hardtanh(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _clamp(imp, args["self"], args.get("min_val", -1.0), args.get("max_val", 1.0))


@CONVERTERS("aten.relu6.default")
def convert_relu6(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _clamp(imp, args["self"], 0.0, 6.0)


def _binary(
    imp: Importer,
    op_type: type[ew.BinaryOp],
    lhs: Any,
    rhs: Any,
    props: dict[str, Attribute] | None = None,
) -> Operation:
    lhs_v = imp.value(lhs) if not isinstance(lhs, int | float) else None
    rhs_v = imp.value(rhs) if not isinstance(rhs, int | float) else None
    if lhs_v is None and rhs_v is None:
        raise imp.error("at least one operand must be a tensor")
    lhs_v = lhs_v if lhs_v is not None else imp.operand(lhs, like=rhs_v)
    rhs_v = rhs_v if rhs_v is not None else imp.operand(rhs, like=lhs_v)
    return op_type.create(
        operands=[lhs_v, rhs_v],
        result_types=[imp.result_type()],
        properties=props or {},
    )


def _alpha(args: dict[str, Any]) -> dict[str, Attribute]:
    alpha = args.get("alpha")
    return {} if alpha is None or alpha == 1 else {"alpha": _f64(alpha)}


@CONVERTERS("aten.add.Tensor", "aten.add.Scalar")
def convert_add(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _binary(imp, ew.AddOp, args["self"], args["other"], _alpha(args))


@CONVERTERS("aten.sub.Tensor", "aten.sub.Scalar")
def convert_sub(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _binary(imp, ew.SubOp, args["self"], args["other"], _alpha(args))


@CONVERTERS("aten.rsub.Scalar", "aten.rsub.Tensor")
def convert_rsub(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _binary(imp, ew.SubOp, args["other"], args["self"], _alpha(args))


@CONVERTERS(
    "aten.div.Tensor",
    "aten.div.Scalar",
    "aten.div.Tensor_mode",
    "aten.div.Scalar_mode",
    "aten.true_divide.Tensor",
)
def convert_div(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    mode = args.get("rounding_mode")
    props: dict[str, Attribute] = {} if mode is None else {"rounding_mode": StringAttr(mode)}
    if mode is not None:
        _refuse_integer_division_by_zero(imp, node, args["other"])
    return _binary(imp, ew.DivOp, args["self"], args["other"], props)


def _refuse_integer_division_by_zero(imp: Importer, node: Node, divisor: Any) -> None:
    """An integer floor / trunc division, remainder or fmod by the number 0: torch raises
    ZeroDivisionError, so the program is refused (a run-time zero gives 0 instead)."""
    if (
        not isinstance(divisor, Node)
        and not isinstance(imp.result_type().get_element_type(), AnyFloat)
        and divisor == 0
    ):
        raise imp.error(
            f"integer {node.target} by 0 (torch raises ZeroDivisionError): fix the divisor"
        )


@CONVERTERS("aten.floor_divide.default", "aten.floor_divide.Scalar")
def convert_floor_divide(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    _refuse_integer_division_by_zero(imp, node, args["other"])
    return _binary(
        imp,
        ew.DivOp,
        args["self"],
        args["other"],
        {"rounding_mode": StringAttr("floor")},
    )


@CONVERTERS("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.pow.Scalar")
def convert_pow(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _binary(imp, ew.PowOp, args["self"], args["exponent"])


def _simple_binary(op_type: type[ew.BinaryOp], *targets: str) -> None:
    def convert(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
        return _binary(imp, op_type, args["self"], args["other"])

    CONVERTERS(*targets)(convert)


for _op, _name in [
    (ew.MulOp, "mul"),
    (ew.EqOp, "eq"),
    (ew.NeOp, "ne"),
    (ew.LtOp, "lt"),
    (ew.LeOp, "le"),
    (ew.GtOp, "gt"),
    (ew.GeOp, "ge"),
    (ew.BitwiseAndOp, "bitwise_and"),
    (ew.BitwiseOrOp, "bitwise_or"),
    (ew.BitwiseXorOp, "bitwise_xor"),
]:
    _simple_binary(_op, f"aten.{_name}.Tensor", f"aten.{_name}.Scalar")


@CONVERTERS("aten.fmod.Tensor", "aten.fmod.Scalar")
def convert_fmod(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """C's fmod; an integer fmod by the number 0 is refused (torch raises
    ZeroDivisionError; a tensor of zeros gives 0 at run time)."""
    _refuse_integer_division_by_zero(imp, node, args["other"])
    return _binary(imp, ew.FmodOp, args["self"], args["other"])


@CONVERTERS("aten.remainder.Tensor", "aten.remainder.Scalar")
def convert_remainder(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """torch's remainder; an integer remainder by the number 0 is refused, as fmod's."""
    _refuse_integer_division_by_zero(imp, node, args["other"])
    return _binary(imp, ew.RemainderOp, args["self"], args["other"])


@CONVERTERS(
    "aten.__lshift__.Tensor",
    "aten.__lshift__.Scalar",
    "aten.bitwise_left_shift.Tensor",
    "aten.bitwise_left_shift.Tensor_Scalar",
    "aten.bitwise_left_shift.Scalar_Tensor",
    "aten.__rshift__.Tensor",
    "aten.__rshift__.Scalar",
    "aten.bitwise_right_shift.Tensor",
    "aten.bitwise_right_shift.Tensor_Scalar",
    "aten.bitwise_right_shift.Scalar_Tensor",
)
def convert_shift(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`<<` / `>>` of integer tensors (torch refuses floats and bools too)."""
    elem = imp.result_type().get_element_type()
    if not isinstance(elem, IntegerType) or elem.width.data == 1:
        raise imp.error(f"{node.target} takes integer tensors, got {elem}")
    left = "lshift" in str(node.target) or "left" in str(node.target)
    op_type = ew.BitwiseLeftShiftOp if left else ew.BitwiseRightShiftOp
    return _binary(imp, op_type, args["self"], args["other"])


_simple_binary(ew.BitwiseAndOp, "aten.__and__.Tensor")
_simple_binary(ew.BitwiseOrOp, "aten.__or__.Tensor")
_simple_binary(ew.MaximumOp, "aten.maximum.default", "aten.max.other")
_simple_binary(ew.MinimumOp, "aten.minimum.default", "aten.min.other")
_simple_binary(ew.LogicalAndOp, "aten.logical_and.default")
_simple_binary(ew.LogicalOrOp, "aten.logical_or.default")
_simple_binary(ew.LogicalXorOp, "aten.logical_xor.default")


@CONVERTERS(
    "aten.where.self",
    "aten.where.ScalarOther",
    "aten.where.ScalarSelf",
    "aten.where.Scalar",
)
def convert_where(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    cond = imp.value(args["condition"])
    a, b = args["self"], args["other"]
    a_v = imp.value(a) if not isinstance(a, int | float) else None
    b_v = imp.value(b) if not isinstance(b, int | float) else None
    result = imp.result_type()

    like = a_v if a_v is not None else b_v
    a_v = a_v if a_v is not None else imp.scalar(a, like)
    b_v = b_v if b_v is not None else imp.scalar(b, like)
    if like is None:
        dtype = numpy_dtype(result.get_element_type())
        a_v = imp.constant(np.array(a, dtype=dtype), "scalar")
        b_v = imp.constant(np.array(b, dtype=dtype), "scalar")
    return ew.WhereOp.create(operands=[cond, a_v, b_v], result_types=[result])


@CONVERTERS("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def convert_masked_fill(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["self"])
    value = args["value"]
    if isinstance(value, Node):
        fill = imp.value(value)
    else:
        dtype = numpy_dtype(imp.result_type().get_element_type())
        fill = imp.constant(np.array(value, dtype=dtype), "scalar")
    return ew.MaskedFillOp.create(
        operands=[x, imp.value(args["mask"]), fill], result_types=[imp.result_type()]
    )


@CONVERTERS("aten.clamp.Tensor", "aten.clamp_min.Tensor", "aten.clamp_max.Tensor")
def convert_clamp_tensor(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`clamp` with tensor bounds (either may be absent): `minimum(maximum(x, min), max)`
    in the result's type, broadcasting all three (as torch: a NaN in x or in a bound
    gives NaN, min > max gives max)."""
    target = str(node.target)
    lo = None if "clamp_max" in target else args.get("min")
    hi = None if "clamp_min" in target else args.get("max")
    if lo is None and hi is None:
        raise imp.error("clamp needs at least one of min and max")
    if hi is None:
        return _binary(imp, ew.MaximumOp, args["self"], lo)
    if lo is None:
        return _binary(imp, ew.MinimumOp, args["self"], hi)
    x = imp.value(args["self"])
    low = ew.MaximumOp.create(
        operands=[x, imp.operand(lo, like=x)], result_types=[imp.result_type()]
    )
    if (loc := node_location(node)) is not None:
        low.location = loc
    imp.builder.insert(low)
    high = imp.operand(hi, like=x)
    return ew.MinimumOp.create(operands=[low.results[0], high], result_types=[imp.result_type()])

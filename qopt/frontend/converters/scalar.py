"""Converters for run-time scalars (see qopt/dialects/aten/scalar.py): `.item()`,
`x.shape[d]` (`aten.sym_size.int`), the `operator` / `torch.sym_*` arithmetic and
comparisons torch records on SymInts and SymBools, and its run-time assertions.

A value torch knows at export (a static dim's size, arithmetic on such sizes)
stays a Python int and folds away; a value only known at run time is a 0-d
tensor (`tensor<i64>`, `tensor<i1>`) computed by ordinary elementwise aten ops.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch.fx import Node
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, TensorType, i1, i64
from xdsl.ir import Attribute, Operation, SSAValue

from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten import scalar as sc
from qopt.dialects.tensors import elem_of, shape_of
from qopt.frontend.converters.table import ConverterTable
from qopt.frontend.importer import Importer, node_location

CONVERTERS = ConverterTable()

I64 = TensorType(i64, [])
I1 = TensorType(i1, [])


def _insert(imp: Importer, node: Node, op: Operation) -> SSAValue:
    _place(imp, node, op)
    return op.results[0]


def _place(imp: Importer, node: Node, op: Operation) -> None:
    """Insert `op` at the node's source line."""
    if (loc := node_location(node)) is not None:
        op.location = loc
    imp.builder.insert(op)


def _range_prop(bounds: tuple[int, int] | None) -> dict[str, Attribute]:
    if bounds is None:
        return {}
    return {"range": DenseArrayBase.from_list(i64, list(bounds))}


@CONVERTERS("aten.item.default", "aten._local_scalar_dense.default")
def convert_item(imp: Importer, node: Node, args: dict[str, Any]) -> SSAValue:
    """`x.item()`: a 0-d tensor of `x`'s element type, with the range torch asserts
    for it; an integer of another type is then cast to int64 (a SymInt) and its
    range asserted there."""
    x = imp.value(args["self"])
    elem = elem_of(x)
    if any(d < 0 for d in shape_of(x)):
        raise imp.error("item of a tensor with a dynamic dim")
    integer = isinstance(node.meta.get("val"), torch.SymInt)
    bounds = imp.symbol_range(node.meta.get("val")) if integer else None
    props = _range_prop(bounds) if elem == i64 else {}
    item = sc.ItemOp.create(operands=[x], result_types=[TensorType(elem, [])], properties=props)
    value = _insert(imp, node, item)
    if integer and elem != i64:  # an int32 / bool / uint8 element read as a SymInt
        value = _insert(imp, node, ew.CastOp.create(operands=[value], result_types=[I64]))
        if bounds is not None:
            _assert_range(imp, node, value, node.name, *bounds)
    return value


def _assert_range(
    imp: Importer, node: Node, value: SSAValue, name: str, low: Any, high: Any
) -> None:
    """`low <= value <= high` asserted (an unbounded end, None or int64's, is not)."""
    for compare, bound, sign in ((ew.GeOp, low, ">="), (ew.LeOp, high, "<=")):
        if bound is None or bound in (sc.INT64_MIN, sc.INT64_MAX):
            continue
        if isinstance(bound, float) and math.isinf(bound):
            continue
        limit = imp.constant(np.array(int(bound), dtype=np.int64), "scalar")
        ok = _insert(imp, node, compare.create(operands=[value, limit], result_types=[I1]))
        message = StringAttr(f"{name} {sign} {int(bound)}")
        _place(imp, node, sc.AssertScalarOp.create(operands=[ok], properties={"message": message}))


@CONVERTERS("aten.sym_size.int")
def convert_sym_size(imp: Importer, node: Node, args: dict[str, Any]) -> int | SSAValue:
    """`x.shape[d]`: an int for a static dim, `aten.sym_size` for a dynamic one."""
    x = imp.value(args["self"])
    shape = shape_of(x)
    if not shape:
        raise imp.error("sym_size of a 0-d tensor")
    d = int(args["dim"])
    if not -len(shape) <= d < len(shape):
        raise imp.error(f"dim {d} is out of range for rank {len(shape)}")
    d %= len(shape)
    if shape[d] >= 0:
        return shape[d]
    op = sc.SymSizeOp.create(
        operands=[x],
        result_types=[I64],
        properties={
            "dim": IntegerAttr(d, i64),
            **_range_prop(imp.symbol_range(node.meta.get("val"))),
        },
    )
    return _insert(imp, node, op)


@CONVERTERS("aten.sym_numel.default")
def convert_sym_numel(imp: Importer, node: Node, args: dict[str, Any]) -> int | SSAValue:
    """`x.numel()`: the product of its static dims, times each dynamic dim's
    `aten.sym_size`."""
    x = imp.value(args["self"])
    shape = shape_of(x)
    total: int | SSAValue = math.prod(d for d in shape if d >= 0)
    for d, size in enumerate(shape):
        if size >= 0:
            continue
        op = sc.SymSizeOp.create(
            operands=[x], result_types=[I64], properties={"dim": IntegerAttr(d, i64)}
        )
        size_value = _insert(imp, node, op)
        mul = ew.MulOp.create(operands=[size_value, imp.scalar_operand(total)], result_types=[I64])
        total = _insert(imp, node, mul)
    return total


# ----- arithmetic and comparisons on SymInts / SymBools -------------------------

#: Python's operator on constants, and the aten op on run-time scalars.
_BINARY: dict[Any, tuple[Callable[[Any, Any], Any], type[Operation], bool]] = {
    operator.add: (operator.add, ew.AddOp, False),
    operator.sub: (operator.sub, ew.SubOp, False),
    operator.mul: (operator.mul, ew.MulOp, False),
    operator.floordiv: (operator.floordiv, ew.DivOp, False),
    operator.mod: (operator.mod, ew.RemainderOp, False),
    operator.pow: (operator.pow, ew.PowOp, False),
    operator.ge: (operator.ge, ew.GeOp, True),
    operator.gt: (operator.gt, ew.GtOp, True),
    operator.le: (operator.le, ew.LeOp, True),
    operator.lt: (operator.lt, ew.LtOp, True),
    operator.eq: (operator.eq, ew.EqOp, True),
    operator.ne: (operator.ne, ew.NeOp, True),
    operator.and_: (operator.and_, ew.LogicalAndOp, True),
    operator.or_: (operator.or_, ew.LogicalOrOp, True),
    torch.sym_max: (max, ew.MaximumOp, False),
    torch.sym_min: (min, ew.MinimumOp, False),
}


def _scalar(imp: Importer, arg: Any) -> int | float | bool | SSAValue:
    """A scalar argument: a Python number, or a symbolic node's value."""
    if isinstance(arg, Node):
        value = imp.values.get(imp.resolve(arg))
        if isinstance(value, bool | int | float):
            return value
        if isinstance(value, SSAValue) and not shape_of(value):
            return value
        raise imp.error(f"argument {arg.name} is not a scalar")
    if isinstance(arg, bool | int | float):
        return arg
    raise imp.error(f"expected a number, got {arg!r}")


def _as_i64(imp: Importer, node: Node, value: SSAValue) -> SSAValue:
    """An integer or bool scalar as int64 (SymInt arithmetic is in int64)."""
    if elem_of(value) == i64:
        return value
    return _insert(imp, node, ew.CastOp.create(operands=[value], result_types=[I64]))


def _binary(target: Any) -> Callable[[Importer, Node, dict[str, Any]], Any]:
    fold, op_type, boolean = _BINARY[target]

    def convert(imp: Importer, node: Node, args: dict[str, Any]) -> Any:
        if len(node.args) != 2 or node.kwargs:
            raise imp.error(f"{node.target} takes two arguments")
        lhs, rhs = (_scalar(imp, a) for a in node.args)
        if not isinstance(lhs, SSAValue) and not isinstance(rhs, SSAValue):
            return fold(lhs, rhs)  # both known at export
        if any(isinstance(v, float) for v in (lhs, rhs)) or any(
            isinstance(v, SSAValue) and elem_of(v) not in (i64, i1) for v in (lhs, rhs)
        ):
            raise imp.error(f"{node.target} on a float scalar (a SymFloat) is not supported")
        logical = op_type in (ew.LogicalAndOp, ew.LogicalOrOp)
        operands = [imp.scalar_operand(v) for v in (lhs, rhs)]
        if not logical:
            operands = [_as_i64(imp, node, v) for v in operands]
        props: dict[str, Attribute] = {}
        if op_type is ew.DivOp:
            props["rounding_mode"] = StringAttr("floor")
        return op_type.create(
            operands=operands, result_types=[I1 if boolean else I64], properties=props
        )

    return convert


for _target in _BINARY:
    CONVERTERS(str(_target))(_binary(_target))


@CONVERTERS(str(operator.neg))
def convert_neg(imp: Importer, node: Node, args: dict[str, Any]) -> Any:
    value = _scalar(imp, node.args[0])
    if not isinstance(value, SSAValue):
        return -value
    return ew.NegOp.create(operands=[_as_i64(imp, node, value)], result_types=[I64])


@CONVERTERS(str(torch.sym_not))
def convert_sym_not(imp: Importer, node: Node, args: dict[str, Any]) -> Any:
    value = _scalar(imp, node.args[0])
    if not isinstance(value, SSAValue):
        return not value
    return ew.LogicalNotOp.create(operands=[value], result_types=[I1])


# ----- run-time assertions ------------------------------------------------------


def _assert(imp: Importer, node: Node, condition: Any, message: str) -> None:
    value = _scalar(imp, condition)
    if not isinstance(value, SSAValue):
        if not value:
            raise imp.error(f"the program asserts something false at export: {message}")
        return  # proved at export
    if elem_of(value) != i1:
        value = _insert(imp, node, ew.CastOp.create(operands=[value], result_types=[I1]))
    props: dict[str, Attribute] = {"message": StringAttr(message)} if message else {}
    _place(imp, node, sc.AssertScalarOp.create(operands=[value], properties=props))


@CONVERTERS("aten._assert_scalar.default")
def convert_assert_scalar(imp: Importer, node: Node, args: dict[str, Any]) -> None:
    message = str(args.get("assert_msg") or "")
    message = message.removeprefix("Runtime assertion failed for expression ")
    message = re.sub(r" on node '[^']*'$", "", message)
    _assert(imp, node, args["self"], message)


@CONVERTERS("aten.sym_constrain_range_for_size.default", "aten.sym_constrain_range.default")
def convert_constrain_range(imp: Importer, node: Node, args: dict[str, Any]) -> None:
    """`torch._check_is_size(u)` / `torch._constrain_as_size(u, min, max)` in older
    graphs: `min <= u <= max` asserted (a size is at least 0)."""
    value = _scalar(imp, args["size"])
    low, high = args.get("min"), args.get("max")
    if low is None and str(node.target).startswith("aten.sym_constrain_range_for_size"):
        low = 0
    name = args["size"].name if isinstance(args["size"], Node) else str(value)
    if not isinstance(value, SSAValue):
        if (low is not None and value < low) or (high is not None and value > high):
            raise imp.error(f"{value} is outside the range [{low}, {high}] the program asserts")
        return
    _assert_range(imp, node, _as_i64(imp, node, value), name, low, high)


@CONVERTERS(str(torch.sym_sum))
def convert_sym_sum(imp: Importer, node: Node, args: dict[str, Any]) -> Any:
    """`torch.sym_sum([a, b, ...])`: a chain of `aten.add` (constants folded)."""
    (terms,) = node.args
    if not isinstance(terms, list | tuple) or not terms:
        raise imp.error("sym_sum takes a non-empty list")
    values = [_scalar(imp, t) for t in terms]
    constant = sum(int(v) for v in values if not isinstance(v, SSAValue))
    dynamic = [_as_i64(imp, node, v) for v in values if isinstance(v, SSAValue)]
    if not dynamic:
        return constant
    total = dynamic[0]
    for term in [*dynamic[1:], *([imp.scalar_operand(constant)] if constant else [])]:
        total = _insert(imp, node, ew.AddOp.create(operands=[total, term], result_types=[I64]))
    return total

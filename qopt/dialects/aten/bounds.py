"""Upper bounds of dynamic shapes: how a target allocates for a bounded `Dim`.

A function imported from a program exported with a bounded `torch.export.Dim`
has `?` dims; its `qopt.symbols` give each symbol's `[min, max]` and its
arguments' `qopt.dims` which dim is which symbol (qopt/dialects/signature.py).
`upper_bounds(func)` gives every tensor value of the function its largest shape:
the arguments' `?` dims at their symbols' `max`, every op's result derived from
its operands' bounds by the op's own shape rule (a `dynamic_slice` of a run-time
length is at most its input's dim, and at most its length's asserted `range`).
A target allocates each buffer for its bound and passes the actual sizes (the
arguments' shapes, `aten.sym_size`) at run time, e.g. as push constants.
"""

from __future__ import annotations

import math

from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue

from qopt.dialects.aten import indexing as ix
from qopt.dialects.aten import scalar as sc
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.base import DYNAMIC, AtenOp, Shape, assumed_shapes, integer, norm_dim
from qopt.dialects.signature import argument_dims, symbol_ranges
from qopt.dialects.tensors import shape_of
from qopt.errors import QoptError, where


def upper_bounds(func: FuncOp) -> dict[SSAValue, Shape]:
    """Every tensor value of `func` (arguments and op results) with its largest
    shape (see the module docstring); a static shape is its own bound."""
    ranges = symbol_ranges(func)
    bounds: dict[SSAValue, Shape] = {}
    for arg, names in zip(func.args, argument_dims(func), strict=True):
        declared = shape_of(arg)
        if DYNAMIC in declared and names is None:
            raise QoptError(
                f"@{func.sym_name.data}: argument {arg.index} has `?` dims but no qopt.dims"
            )
        bounds[arg] = tuple(
            ranges[name][1] if d == DYNAMIC and names and name in ranges else d
            for d, name in zip(declared, names or [""] * len(declared), strict=True)
        )
        if DYNAMIC in bounds[arg]:
            raise QoptError(
                f"@{func.sym_name.data}: argument {arg.index} has a `?` dim with no range"
            )
    for op in func.body.walk():
        for result in op.results:
            declared = shape_of(result)
            bounds[result] = (
                declared if DYNAMIC not in declared else result_bound(op, result, bounds)
            )
    return bounds


def result_bound(op: Operation, result: SSAValue, bounds: dict[SSAValue, Shape]) -> Shape:
    """The largest shape of `op`'s `?` result `result` when its operands have (at most)
    the shapes `bounds` gives them (the interpreter passes their actual shapes to bound
    a result before the op runs, qopt.interpreters.common.RuntimeSizes); a QoptError
    if no rule bounds it."""
    declared = shape_of(result)
    if isinstance(op, ix.DynamicSliceOp):
        x = bounds[op.input]
        d = norm_dim(integer(op.dim), len(x))
        limit = x[d]
        if op.length is not None and isinstance(op.length.owner, sc.ItemOp | sc.SymSizeOp):
            limit = min(limit, sc.scalar_range(op.length.owner.range)[1])
        return (*x[:d], limit, *x[d + 1 :])
    if isinstance(op, sh.ViewOp):
        count = math.prod(bounds[op.input])
        static = math.prod(d for d in declared if d != DYNAMIC)
        if declared.count(DYNAMIC) != 1 or static == 0:
            raise QoptError(f"{where(op)}: no bound for a view with several dynamic dims")
        return tuple(count // static if d == DYNAMIC else d for d in declared)
    if isinstance(op, sh.ExpandOp):
        x = bounds[op.input]
        offset = len(declared) - len(x)
        return tuple(x[i - offset] if d == DYNAMIC else d for i, d in enumerate(declared))
    if not isinstance(op, AtenOp):
        raise QoptError(f"{where(op)}: no bound rule for a dynamic result of this op")
    with assumed_shapes(bounds):
        expected = op.expected_shapes()
    if expected is None:
        raise QoptError(f"{where(op)}: no bound rule for a dynamic result of this op")
    index = next(i for i, r in enumerate(op.results) if r is result)
    derived = tuple(expected[index])
    if len(derived) != len(declared) or any(d < 0 for d in derived):
        raise QoptError(f"{where(op)}: no bound for its result of type {result.type}")
    return derived


__all__ = ["result_bound", "upper_bounds"]

"""Run-time windows as run-time indices, before a static target's lowering.

ExecuTorch's dynamic-shape KV cache reads its start with `.item()` and writes with
`cache.narrow(2, start, S).copy_(k)`: at the aten level an `aten.item`, an
`aten.dynamic_update_slice` (and `aten.dynamic_slice` for reads) and the range
checks torch records (`aten.assert_scalar`). Both targets already gather and
scatter along any dim at run-time indices (index_select, index_copy: MIL gather /
scatter, Vulkan gather_dim / scatter_dim, the in-place cache update included), so
a window of static length L at a run-time start s is those indices, s + arange(L):

    dynamic_slice(x, s, dim)            -> index_select(x, dim, s + arange(L))
    dynamic_update_slice(x, u, s, dim)  -> index_copy(x, dim, s + arange(L), u)
    item(x) of a 0-d x                  -> x  (of a one-element x: a view to 0-d)

The results are the same elements; a window outside the input, which torch
refuses, is an out-of-range index: an error naming the op on Vulkan (its status
word). The pass `expand-dynamic-windows` runs it; both pipelines list it before
their conversion (convert-to-coreml and convert-to-vkc, run alone, run it first
themselves); a window of run-time length (a `?` dim) is left for the target's
dynamic-shape error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from xdsl.context import Context
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten import indexing as ix
from qopt.dialects.aten import scalar as sc
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.base import integer, norm_dim
from qopt.dialects.tensors import shape_of


def _window_indices(
    op: Operation, start: SSAValue, length: int, made: dict[tuple[SSAValue, int], SSAValue]
) -> SSAValue:
    """`start + arange(length)` (int64, [length]), made once per (start, length) right
    after `start` is defined (every window at that start reads it)."""
    if (start, length) in made:
        return made[(start, length)]
    owner = start.owner
    where = (
        InsertPoint.after(owner)
        if isinstance(owner, Operation)
        else InsertPoint.at_start(cast(Block, owner))
    )
    steps = np.arange(length, dtype=np.int64)
    arange = ConstantOp(
        DenseIntOrFPElementsAttr(TensorType(i64, [length]), BytesAttr(steps.tobytes()))
    )
    new: list[Operation] = [arange]
    start64 = start
    if start.type != TensorType(i64, []):
        widen = ew.CastOp.create(operands=[start], result_types=[TensorType(i64, [])])
        new.append(widen)
        start64 = widen.results[0]
    add = ew.AddOp.create(
        operands=[start64, arange.result], result_types=[TensorType(i64, [length])]
    )
    new.append(add)
    for made_op in new:
        made_op.location = op.location
    Rewriter.insert_op(new, where)
    made[(start, length)] = add.results[0]
    return add.results[0]


def _replace(op: Operation, new: Operation) -> None:
    new.location = op.location
    Rewriter.replace_op(op, new)


def expand_dynamic_windows(module: ModuleOp) -> None:
    """Rewrite the run-time windows and `item`s of `module` (see the module docstring)."""
    made: dict[tuple[SSAValue, int], SSAValue] = {}
    for op in list(module.walk()):
        if isinstance(op, ix.DynamicSliceOp) and op.length is None:
            dims = shape_of(op.input)
            d = norm_dim(integer(op.dim), len(dims))
            length = shape_of(op.result)[d]
            index = _window_indices(op, op.start, length, made)
            _replace(
                op,
                ix.IndexSelectOp.create(
                    operands=[op.input, index],
                    result_types=[op.result.type],
                    properties={"dim": IntegerAttr(d, i64)},
                ),
            )
        elif isinstance(op, ix.DynamicUpdateSliceOp):
            dims = shape_of(op.input)
            d = norm_dim(integer(op.dim), len(dims))
            length = shape_of(op.update)[d]
            if length < 0:
                continue
            index = _window_indices(op, op.start, length, made)
            _replace(
                op,
                ix.IndexCopyOp.create(
                    operands=[op.input, index, op.update],
                    result_types=[op.result.type],
                    properties={"dim": IntegerAttr(d, i64)},
                ),
            )
        elif isinstance(op, sc.ItemOp):
            if not shape_of(op.input):
                op.result.replace_all_uses_with(op.input)
                Rewriter.erase_op(op)
            else:
                _replace(op, sh.ViewOp.create(operands=[op.input], result_types=[op.result.type]))


@dataclass(frozen=True)
class ExpandDynamicWindowsPass(ModulePass):
    """Run-time windows (`dynamic_slice`, `dynamic_update_slice`) as `index_select` /
    `index_copy` at the indices `start + arange(L)`, and `item`s as their 0-d input
    (see the module docstring); the same elements, so the program's meaning stays."""

    name = "expand-dynamic-windows"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        expand_dynamic_windows(op)


__all__ = ["ExpandDynamicWindowsPass", "expand_dynamic_windows"]

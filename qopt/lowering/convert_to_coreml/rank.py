"""Core ML tensors have rank 5 or less (coremltools refuses a rank-6 value when it
builds the program). After the rules ran, `collapse_high_rank` removes the rank > 5
values an elementwise computation leaves: an elementwise op whose operands have
its result's shape (or one element) computes on the flattened tensors, and a
`reshape` of a `reshape` reads the first one's input, so a chain
`reshape (to rank 6) -> elementwise ... -> reshape (back)` keeps no rank-6 value;
a transpose moving runs of adjacent dims transposes the runs merged.
Any rank > 5 value left is a QoptError naming the op that makes it."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import DenseArrayBase, TensorType, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from qopt.dialects import coreml
from qopt.dialects.coreml.elementwise import BinaryOp, CastOp, SelectOp, UnaryOp
from qopt.dialects.tensors import elem_of, numel, shape_of
from qopt.errors import QoptError, where

MAX_RANK = 5
ELEMENTWISE = (BinaryOp, UnaryOp, CastOp, SelectOp)


def _rank(value: SSAValue) -> int:
    return len(shape_of(value)) if isinstance(value.type, TensorType) else 0


def _reshape(value: SSAValue, shape: tuple[int, ...], before: Operation) -> SSAValue:
    if shape_of(value) == shape:
        return value
    op = coreml.ReshapeOp.build(
        operands=[value],
        properties={"shape": DenseArrayBase.from_list(i64, list(shape))},
        result_types=[TensorType(elem_of(value), shape)],
    )
    op.location = before.location
    Rewriter.insert_op(op, InsertPoint.before(before))
    return op.result


def _flatten_elementwise(op: BinaryOp | UnaryOp | CastOp | SelectOp) -> None:
    """`op` (elementwise, rank > 5 result) on its operands flattened to 1-D, its
    result reshaped back; one-element operands become `[1]`. Left alone when an
    operand broadcasts along some dims (no flat form) or the op has an axis."""
    shape = shape_of(op.results[0])
    if "axis" in op.properties:
        return
    size = numel(shape)
    if any(shape_of(v) != shape and numel(shape_of(v)) != 1 for v in op.operands):
        return
    flat = (size,)
    operands = [
        _reshape(v, flat if shape_of(v) == shape else (1,), op)
        if _rank(v) > MAX_RANK or shape_of(v) == shape
        else v
        for v in op.operands
    ]
    new = type(op).build(
        operands=operands,
        properties=dict(op.properties),
        result_types=[TensorType(elem_of(op.results[0]), flat)],
    )
    new.location = op.location
    Rewriter.insert_op(new, InsertPoint.before(op))
    back = _reshape(new.results[0], shape, op)
    op.results[0].replace_all_uses_with(back)
    Rewriter.erase_op(op)


def _collapse_transpose(op: coreml.TransposeOp) -> None:
    """A rank > 5 transpose that moves runs of adjacent dims together (Swin's window
    partition `[B, H/w, w, W/w, w, C] -> [B, H/w, W/w, w, w, C]`) as a transpose of
    those runs merged, between reshapes; left alone when more than 5 runs remain."""
    x = shape_of(op.x)
    perm = [int(p) for p in op.perm.get_values()]
    runs: list[list[int]] = []
    for p in perm:
        if runs and runs[-1][-1] + 1 == p:
            runs[-1].append(p)
        else:
            runs.append([p])
    if len(runs) > MAX_RANK:
        return
    by_start = sorted(runs, key=lambda run: run[0])
    grouped = tuple(numel(tuple(x[d] for d in run)) for run in by_start)
    group_perm = [by_start.index(run) for run in runs]
    merged = _reshape(op.x, grouped, op)
    moved = tuple(grouped[g] for g in group_perm)
    new = coreml.TransposeOp.build(
        operands=[merged],
        properties={"perm": DenseArrayBase.from_list(i64, group_perm)},
        result_types=[TensorType(elem_of(op.x), moved)],
    )
    new.location = op.location
    Rewriter.insert_op(new, InsertPoint.before(op))
    op.result.replace_all_uses_with(_reshape(new.result, shape_of(op.result), op))
    Rewriter.erase_op(op)


def _fold_reshapes(func: FuncOp) -> None:
    """A reshape of a reshape reads the first one's input (row-major reshapes
    compose); a reshape to its input's shape is its input."""
    for op in list(func.body.block.ops):
        if not isinstance(op, coreml.ReshapeOp):
            continue
        if any(d <= 0 for d in op.shape.get_values()):
            continue  # MIL's copied (0) or inferred (-1) dims read the input's shape
        source = op.x.owner
        if isinstance(source, coreml.ReshapeOp):
            op.operands[0] = source.x
        if shape_of(op.x) == shape_of(op.result):
            op.result.replace_all_uses_with(op.x)


def collapse_high_rank(func: FuncOp, erase_dead: Callable[[], None]) -> None:
    """Remove the function's rank > 5 values where elementwise ops and reshapes
    allow (see the module doc), else raise a QoptError naming the op."""
    block = func.body.block
    for index, arg in enumerate(block.args):
        if _rank(arg) > MAX_RANK:
            raise QoptError(
                f"convert-to-coreml: input {index} of @{func.sym_name.data} has rank "
                f"{_rank(arg)} ({list(shape_of(arg))}); Core ML tensors have rank "
                f"{MAX_RANK} or less: reshape the input before export"
            )
    if not any(_rank(r) > MAX_RANK for op in block.ops for r in op.results):
        return
    for op in list(block.ops):
        if isinstance(op, ELEMENTWISE) and _rank(op.results[0]) > MAX_RANK:
            _flatten_elementwise(op)
        elif isinstance(op, coreml.TransposeOp) and _rank(op.result) > MAX_RANK:
            _collapse_transpose(op)
    _fold_reshapes(func)
    erase_dead()
    # name the op that cannot be collapsed, not the reshape feeding it
    ops = sorted(block.ops, key=lambda op: isinstance(op, coreml.ReshapeOp))
    for op in ops:
        for value in (*op.results, *op.operands):
            if _rank(value) > MAX_RANK:
                raise QoptError(
                    f"convert-to-coreml: {where(op)}: a rank-{_rank(value)} tensor "
                    f"{list(shape_of(value))}; Core ML tensors have rank {MAX_RANK} or less "
                    "and only elementwise ops, reshapes and transposes of adjacent runs are "
                    f"collapsed: rewrite the model with tensors of rank {MAX_RANK} or less"
                )

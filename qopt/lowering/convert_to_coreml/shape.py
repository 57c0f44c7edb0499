"""convert-to-coreml rules for the aten shape and indexing families (qopt/dialects/aten/
shape.py, indexing.py):
reshapes, transposes, slices, selects, gathers, concatenation, expand, split,
advanced indexing (compile-time indices, or run-time ones on one dim: `gather`),
repeat_interleave (reshape + tile + reshape), the compile-time windows of
slice_scatter (step 1) / select_scatter (concat), and the KV-cache writes at
run-time positions: index_put (one indexed dim, no accumulate) and index_copy as
one MIL `scatter` (mode `update`) along the indexed axis.

Run-time indices: torch counts a negative index of `index` / `index_put` from the
end, MIL's gather and scatter (iOS17+) treat it as out of bounds, so a run-time
index is made non-negative first, `select(i < 0, i + size, i)`; compile-time
indices are checked and wrapped here. `index_copy` and `index_select` take no
negative index in torch (an error there), so theirs pass as they are. Repeated
indices in a write: torch leaves the result unspecified, so does MIL; qopt's
interpreters both let the last write win. MIL gather and scatter take no bool (and
scatter no 8/16-bit) tensors: those go through int32 casts."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import FloatAttr, StringAttr, TensorType, i1, i32
from xdsl.ir import Attribute, Operation, SSAValue

from qopt.dialects import coreml
from qopt.dialects.aten import indexing, scalar, shape
from qopt.dialects.coreml import storage_dtype
from qopt.dialects.tensors import elem_of, shape_of
from qopt.errors import QoptError, quoted, where
from qopt.lowering.convert_to_coreml.lowering import (
    Lowering,
    RuleTable,
    bool_attr,
    bools,
    int_attr,
    ints,
    mil_tensor,
)

RULES = RuleTable()


@RULES(shape.ViewOp, shape.UnsqueezeOp, shape.SqueezeOp)
def _reshape(
    lw: Lowering, op: shape.ViewOp | shape.UnsqueezeOp | shape.SqueezeOp
) -> Sequence[SSAValue]:
    out = mil_tensor(op.results[0].type)
    return [lw.build(coreml.ReshapeOp, [op.operands[0]], out, shape=ints(out.get_shape()))]


@RULES(shape.TransposeOp, shape.PermuteOp)
def _transpose(lw: Lowering, op: shape.TransposeOp | shape.PermuteOp) -> Sequence[SSAValue]:
    x = op.operands[0]
    rank = len(shape_of(x))
    if rank == 0:  # a 0-d tensor's transpose / permute (dims 0 / -1) is the tensor itself
        return [x]
    if isinstance(op, shape.TransposeOp):
        perm = list(range(rank))
        a, b = op.dim0.value.data % rank, op.dim1.value.data % rank
        perm[a], perm[b] = perm[b], perm[a]
    else:
        perm = [d % rank for d in op.dims.get_values()]
    return [lw.build(coreml.TransposeOp, [x], mil_tensor(op.results[0].type), perm=ints(perm))]


@RULES(shape.SliceOp)
def _slice(lw: Lowering, op: shape.SliceOp) -> Sequence[SSAValue]:
    dims = shape_of(op.input)
    axis = op.dim.value.data % len(dims)
    begin, end, stride = [0] * len(dims), list(dims), [1] * len(dims)
    start = op.start.value.data if op.start is not None else 0
    stop = op.end.value.data if op.end is not None else dims[axis]
    begin[axis] = max(0, min(dims[axis], start + dims[axis] if start < 0 else start))
    end[axis] = max(0, min(dims[axis], stop + dims[axis] if stop < 0 else stop))
    stride[axis] = op.step.value.data if op.step is not None else 1
    out = mil_tensor(op.result.type)
    return [
        lw.build(
            coreml.SliceByIndexOp,
            [op.input],
            out,
            begin=ints(begin),
            end=ints(end),
            stride=ints(stride),
        )
    ]


@RULES(shape.SelectOp)
def _select(lw: Lowering, op: shape.SelectOp) -> Sequence[SSAValue]:
    """`x.select(dim, i)`: slice_by_index taking `[i, i + 1)` on dim with its
    squeeze_mask set (the dim is removed)."""
    dims = shape_of(op.input)
    axis = op.dim.value.data % len(dims)
    index = op.index.value.data % dims[axis]
    begin, end = [0] * len(dims), list(dims)
    begin[axis], end[axis] = index, index + 1
    squeeze = [i == axis for i in range(len(dims))]
    return [
        lw.build(
            coreml.SliceByIndexOp,
            [op.input],
            mil_tensor(op.result.type),
            begin=ints(begin),
            end=ints(end),
            stride=ints([1] * len(dims)),
            squeeze_mask=bools(squeeze),
        )
    ]


@RULES(scalar.AssertScalarOp)
def _assert_scalar(lw: Lowering, op: scalar.AssertScalarOp) -> Sequence[SSAValue]:
    """A run-time check torch recorded (`torch._check`, an `.item()`'s range). Core ML
    has no op that fails a prediction, so the package cannot check it (coremltools'
    torch frontend drops them too); it only guards inputs torch itself refuses, which
    qopt's interpreter and the Vulkan target report as errors. A condition known at
    compile time to be false is an error now."""
    if (cond := lw.array(op.condition)) is not None and not bool(cond.reshape(-1)[0]):
        message = f" ({quoted(op.message.data)})" if op.message is not None else ""
        raise QoptError(
            f"convert-to-coreml: {where(op)}: asserts{message}, which is false for every input"
        )
    return []


@RULES(indexing.IndexSelectOp)
def _index_select(lw: Lowering, op: indexing.IndexSelectOp) -> Sequence[SSAValue]:
    """`index_select(x, dim, index)`: MIL gather on `dim` with 1-D int32 indices."""
    dims = shape_of(op.input)
    if not dims:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: index_select of a 0-d tensor is not supported; "
            "reshape the input to 1-D first"
        )
    axis = op.dim.value.data % len(dims)
    if (index := lw.array(op.index)) is not None:
        flat = index.reshape(-1).astype(np.int64)
        bad = flat[(flat < 0) | (flat >= dims[axis])]
        if bad.size:
            raise QoptError(
                f"convert-to-coreml: {where(op)}: index {int(bad[0])} ({bad.size} in all) is out "
                f"of range for dim {axis} of size {dims[axis]}"
            )
        indices = lw.const(flat.astype(np.int32), i32, "indices")
    else:
        indices = lw.to_int32(op.index)
        if not shape_of(indices):
            indices = lw.build(coreml.ReshapeOp, [indices], TensorType(i32, [1]), shape=ints([1]))
    out = mil_tensor(op.result.type)
    return [_gather(lw, op, op.input, indices, axis, out)]


def _gather_elem(lw: Lowering, op: Operation, elem: Attribute) -> Attribute:
    """The element type MIL gather reads an `elem` tensor in: itself, or int32 for
    bool (and before iOS17 8/16-bit) tensors, which go through casts."""
    name = coreml.mil_dtype_name(elem)
    allowed = {"fp16", "fp32", "int32"}
    if lw.opset >= 17:
        allowed |= {"int8", "uint8", "int16", "uint16"}
    if name in allowed:
        return elem
    if name != "bool":
        raise QoptError(
            f"convert-to-coreml: {where(op)}: indexing a {name} tensor needs iOS17 "
            f"(MIL gather), the target is {lw.target}: cast the input to int32 or float first"
        )
    return i32


def _gather(
    lw: Lowering, op: Operation, x: SSAValue, indices: SSAValue, axis: int, out: TensorType
) -> SSAValue:
    """MIL `gather(x, indices, axis)` with the result type `out` (bool inputs
    through int32)."""
    elem = out.get_element_type()
    work = _gather_elem(lw, op, elem)
    x = lw.as_elem(x, work)
    dims = shape_of(x)
    shape = (*dims[:axis], *shape_of(indices), *dims[axis + 1 :])
    value = lw.build(coreml.GatherOp, [x, indices], TensorType(work, shape), axis=int_attr(axis))
    if shape != tuple(out.get_shape()):
        value = lw.build(
            coreml.ReshapeOp,
            [value],
            TensorType(work, out.get_shape()),
            shape=ints(out.get_shape()),
        )
    return lw.as_elem(value, elem)


def _indices(
    lw: Lowering, op: Operation, index: SSAValue, size: int, *, wrap: bool, flat: bool
) -> SSAValue:
    """int32 indices into a dim of `size` from an index tensor (1-D if `flat`; a
    0-d one becomes `[1]`). Compile-time indices are checked here (negative ones
    allowed and wrapped with `wrap`, as torch counts them from the end); run-time
    ones are cast to int32 and, with `wrap`, made non-negative by
    `select(i < 0, i + size, i)` (MIL's gather and scatter from iOS17 take no
    negative index)."""
    if (array := lw.array(index)) is not None:
        values = array.astype(np.int64)
        low = -size if wrap else 0
        bad = values[(values < low) | (values >= size)]
        if bad.size:
            raise QoptError(
                f"convert-to-coreml: {where(op)}: index {int(bad.reshape(-1)[0])} ({bad.size} "
                f"in all) is out of range for a dim of size {size}"
            )
        values = np.where(values < 0, values + size, values)
        if flat or values.ndim == 0:
            values = values.reshape(-1)
        return lw.const(values.astype(np.int32), i32, "indices")
    shape = shape_of(index)
    want = (math.prod(shape),) if flat or not shape else shape
    key = ("indices", index, size, want, wrap)
    if key in lw.memo:
        return lw.memo[key]
    idx = lw.to_int32(index)
    if shape != want:
        idx = lw.build(coreml.ReshapeOp, [idx], TensorType(i32, want), shape=ints(want))
    if wrap:
        zero = lw.const(np.zeros((), np.int32), i32)
        negative = lw.build(coreml.LessOp, [idx, zero], TensorType(i1, want))
        dim = lw.const(np.asarray(size, np.int32), i32)
        shifted = lw.build(coreml.AddOp, [idx, dim], TensorType(i32, want))
        idx = lw.build(coreml.SelectOp, [negative, shifted, idx], TensorType(i32, want))
    lw.memo[key] = idx
    return idx


def _scatter(
    lw: Lowering, op: Operation, x: SSAValue, indices: SSAValue, updates: SSAValue, axis: int
) -> SSAValue:
    """MIL `scatter(x, indices, updates, axis, mode="update")` in the result's type
    (`updates` already has x's shape with `len(indices)` on `axis`); x types MIL
    scatter does not take (bool, 8/16-bit integers) go through int32."""
    out = mil_tensor(op.results[0].type)
    elem = out.get_element_type()
    work = elem if coreml.mil_dtype_name(elem) in ("fp16", "fp32", "int32") else i32
    x, updates = lw.as_elem(x, work), lw.as_elem(updates, work)
    value = lw.build(
        coreml.ScatterOp,
        [x, indices, updates],
        TensorType(work, out.get_shape()),
        axis=int_attr(axis),
        mode=StringAttr("update"),
    )
    return lw.as_elem(value, elem)


@RULES(indexing.IndexPutOp)
def _index_put(lw: Lowering, op: indexing.IndexPutOp) -> Sequence[SSAValue]:
    """`x[..., i, ...] = v` on one dim (the others whole; ExecuTorch's
    `k_cache[:, :, input_pos] = k`): `v` broadcast to the indexing result
    `x[:d] + B + x[d+1:]` (B: the index's shape), reshaped with B flattened, and
    scattered along d at the flattened, non-negative indices. Several indexed
    dims and `accumulate=True` (`x[i] += v`) have no lowering: a QoptError."""
    dims = [int(d) for d in op.indexed_dims.get_values()]
    if op.is_accumulate():
        raise QoptError(
            f"convert-to-coreml: {where(op)}: index_put with accumulate=True (x[i] += v) "
            "has no CoreML lowering; only assignment (accumulate=False) is supported"
        )
    if len(dims) != 1:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: index_put on {len(dims)} dims {dims}; CoreML "
            "lowers index_put with one index tensor (the other dims taken whole, as in "
            "cache[:, :, pos] = v)"
        )
    x = op.input
    x_shape = shape_of(x)
    d = dims[0]
    index = _indices(lw, op, op.indices[0], x_shape[d], wrap=True, flat=True)
    count = shape_of(index)[0]
    if count == 0:
        return [x]
    elem = mil_tensor(op.result.type).get_element_type()
    work = elem if coreml.mil_dtype_name(elem) in ("fp16", "fp32", "int32") else i32
    values = lw.as_elem(op.values, work)
    values = lw.broadcast_to(op, values, op.indexed_shape())
    rows = (*x_shape[:d], count, *x_shape[d + 1 :])
    if shape_of(values) != rows:
        values = lw.build(coreml.ReshapeOp, [values], TensorType(work, rows), shape=ints(rows))
    return [_scatter(lw, op, x, index, values, d)]


@RULES(indexing.IndexCopyOp)
def _index_copy(lw: Lowering, op: indexing.IndexCopyOp) -> Sequence[SSAValue]:
    """`x.index_copy(d, index, source)` (transformers' StaticCache, ExecuTorch's
    dynamic-shape cache): `scatter` of source along d at the indices (which torch
    requires in [0, size))."""
    x = op.input
    x_shape = shape_of(x)
    if not x_shape:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: index_copy into a 0-d tensor is not supported; "
            "reshape it to 1-D first"
        )
    d = op.dim.value.data % len(x_shape)
    index = _indices(lw, op, op.index, x_shape[d], wrap=False, flat=True)
    count = shape_of(index)[0]
    elem = mil_tensor(op.result.type).get_element_type()
    source = lw.as_elem(op.source, elem)
    rows = (*x_shape[:d], count, *x_shape[d + 1 :])
    if shape_of(source) != rows:
        source = lw.build(coreml.ReshapeOp, [source], TensorType(elem, rows), shape=ints(rows))
    return [_scatter(lw, op, x, index, source, d)]


@RULES(shape.CatOp)
def _cat(lw: Lowering, op: shape.CatOp) -> Sequence[SSAValue]:
    """MIL `concat` of the operands in the result's element type: torch promotes
    mixed operands (`cat` of fp32 and int64 is fp32), MIL concat takes one type,
    so an operand of another type gets a `cast` (a constant is converted at
    compile time). 1-D operands of size 0 are skipped, as torch skips them."""
    rank = len(shape_of(op.result))
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    values = [lw.as_elem(v, elem) for v in op.inputs if shape_of(v) != (0,)]
    if not values or 0 in out.get_shape():
        raise QoptError(
            f"convert-to-coreml: {where(op)}: cat with an empty result {list(out.get_shape())} "
            "is not supported (Core ML tensors are not empty)"
        )
    if len(values) == 1:
        return values
    concat = coreml.ConcatOp.build(
        operands=[values],
        properties={"axis": int_attr(op.dim.value.data % rank), "interleave": bool_attr(False)},
        result_types=[out],
    )
    return [lw.emit(concat)]


@RULES(shape.ExpandOp)
def _expand(lw: Lowering, op: shape.ExpandOp) -> Sequence[SSAValue]:
    """`expand` (broadcast to the result shape): MIL `tile` with `reps[i] =
    result[i]` on the input's size-1 dims; a `reshape` first gives the input
    the result's rank (leading 1s). An expand that changes nothing is its input."""
    return [lw.broadcast_to(op, op.input, shape_of(op.result))]


@RULES(shape.SplitOp)
def _split(lw: Lowering, op: shape.SplitOp) -> Sequence[SSAValue]:
    """`split` / `split_with_sizes` / `chunk`: one `slice_by_index` per piece."""
    dims = shape_of(op.input)
    axis = op.dim.value.data % len(dims)
    sizes = [int(v) for v in op.sizes.get_values()]
    if 0 in sizes:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: split into an empty piece (sizes {sizes}) is "
            "not supported (Core ML tensors are not empty)"
        )
    if len(sizes) == 1:
        return [op.input]
    pieces: list[SSAValue] = []
    start = 0
    for size, result in zip(sizes, op.outputs, strict=True):
        begin, end = [0] * len(dims), list(dims)
        begin[axis], end[axis] = start, start + size
        start += size
        pieces.append(
            lw.build(
                coreml.SliceByIndexOp,
                [op.input],
                mil_tensor(result.type),
                begin=ints(begin),
                end=ints(end),
                stride=ints([1] * len(dims)),
            )
        )
    return pieces


@RULES(indexing.IndexOp)
def _index(lw: Lowering, op: indexing.IndexOp) -> Sequence[SSAValue]:
    """Advanced indexing with compile-time index tensors (after fold-constants,
    the position and mask indices of transformers are constants): the flat
    offsets `arange(numel).reshape(shape)[indices]` are computed with numpy, and
    the input, reshaped to 1-D, is read with one MIL `gather` of those int32
    offsets, which has the result's shape. Offsets that read the whole input in
    order are a `reshape`. Bool (and, before iOS17, 8/16-bit) inputs are gathered
    as int32 (MIL gather takes no bools)."""
    dims = shape_of(op.input)
    indexed = [int(d) for d in op.indexed_dims.get_values()]
    if any(lw.array(index) is None for index in op.indices):
        return [_index_at_run_time(lw, op)]
    key: list[slice | np.ndarray] = [slice(None)] * len(dims)
    for dim, index in zip(indexed, op.indices, strict=True):
        array = lw.array(index)
        assert array is not None
        key[dim] = array.astype(np.int64)
    numel = math.prod(dims)
    if numel >= 2**31:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: the input has {numel} elements, more than "
            "int32 gather offsets address"
        )
    try:
        offsets = np.arange(numel, dtype=np.int64).reshape(dims)[tuple(key)]
    except IndexError as e:
        raise QoptError(f"convert-to-coreml: {where(op)}: {e}") from None
    out = mil_tensor(op.result.type)
    result_shape = tuple(out.get_shape())
    assert offsets.shape == result_shape, (offsets.shape, result_shape)
    x = op.input
    if offsets.size == numel and np.array_equal(offsets.reshape(-1), np.arange(numel)):
        if result_shape == dims:
            return [x]
        return [lw.build(coreml.ReshapeOp, [x], out, shape=ints(result_shape))]
    elem = out.get_element_type()
    gathered = coreml.mil_dtype_name(elem)
    allowed = {"fp16", "fp32", "int32"}
    if lw.opset >= 17:
        allowed |= {"int8", "uint8", "int16", "uint16"}
    work = elem if gathered in allowed else i32
    if gathered not in allowed and gathered != "bool":
        raise QoptError(
            f"convert-to-coreml: {where(op)}: indexing a {gathered} tensor needs iOS17 "
            f"(MIL gather), the target is {lw.target}: cast the input to int32 or float first"
        )
    if len(dims) != 1:
        x = lw.build(coreml.ReshapeOp, [x], TensorType(elem_of(x), [numel]), shape=ints([numel]))
    x = lw.as_elem(x, work)
    indices = lw.const(offsets.astype(np.int32), i32, "index_offsets")
    value = lw.build(
        coreml.GatherOp, [x, indices], TensorType(work, result_shape), axis=int_attr(0)
    )
    return [lw.as_elem(value, elem)]


def _index_at_run_time(lw: Lowering, op: indexing.IndexOp) -> SSAValue:
    """`x[..., i, ...]` with a run-time index tensor on one dim (ExecuTorch's
    `mask[input_pos]`, `rope_cos[input_pos]`): MIL `gather` on that axis with the
    index made non-negative (the result `x[:d] + B + x[d+1:]` is gather's)."""
    indexed = [int(d) for d in op.indexed_dims.get_values()]
    if len(indexed) != 1:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: advanced indexing on {len(indexed)} dims with "
            "index tensors computed at run time; CoreML lowers run-time indices on one dim "
            "(x[..., i, ...]), or compile-time indices on several"
        )
    d = indexed[0]
    size = shape_of(op.input)[d]
    index = _indices(lw, op, op.indices[0], size, wrap=True, flat=False)
    return _gather(lw, op, op.input, index, d, mil_tensor(op.result.type))


@RULES(shape.RepeatInterleaveOp)
def _repeat_interleave(lw: Lowering, op: shape.RepeatInterleaveOp) -> Sequence[SSAValue]:
    """`repeat_interleave(x, r, dim)`: `reshape` x `[*pre, n, *post]` to `[P, n, 1, Q]`,
    `tile` the size-1 dim `r` times, `reshape` to the result (the flattened input,
    `[numel, 1]` tiled, without `dim`); like `_repeat_heads` in layers.py. MIL tile
    takes fp16, fp32, int32 and bool: other types go through int32 (iOS17+ casts)."""
    x = op.input
    dims = shape_of(x)
    repeats = op.repeats.value.data
    out = mil_tensor(op.result.type)
    result_shape = tuple(out.get_shape())
    if 0 in result_shape:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: repeat_interleave to the empty shape "
            f"{list(result_shape)} is not supported (Core ML tensors are not empty)"
        )
    if op.dim is None:
        pre, n, post = 1, math.prod(dims), 1
    else:
        axis = op.dim.value.data % len(dims)
        pre, n, post = math.prod(dims[:axis]), dims[axis], math.prod(dims[axis + 1 :])
    elem = out.get_element_type()
    if repeats == 1:
        if shape_of(x) == result_shape:
            return [x]
        return [lw.build(coreml.ReshapeOp, [x], out, shape=ints(result_shape))]
    work = elem if coreml.mil_dtype_name(elem) in ("fp16", "fp32", "int32", "bool") else i32
    x = lw.as_elem(x, work)
    split = (pre, n, 1, post)
    x = lw.build(coreml.ReshapeOp, [x], TensorType(work, split), shape=ints(split))
    tiled = (pre, n, repeats, post)
    x = lw.build(coreml.TileOp, [x], TensorType(work, tiled), reps=ints((1, 1, repeats, 1)))
    x = lw.build(coreml.ReshapeOp, [x], TensorType(work, result_shape), shape=ints(result_shape))
    return [lw.as_elem(x, elem)]


def _scatter_window(
    lw: Lowering,
    op: indexing.SliceScatterOp | indexing.SelectScatterOp,
    axis: int,
    start: int,
    end: int,
    window: SSAValue,
) -> SSAValue:
    """`x` with `x[.., start:end, ..]` on `axis` replaced by `window` (of that slice's
    shape, in x's type): a `concat` of the part of x before, the window and the part
    after (the parts that are not empty)."""
    x = op.input
    dims = shape_of(x)
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    parts: list[SSAValue] = []
    for lo, hi in ((0, start), (None, None), (end, dims[axis])):
        if lo is None or hi is None:
            parts.append(window)
            continue
        if hi <= lo:
            continue
        begin, stop = [0] * len(dims), list(dims)
        begin[axis], stop[axis] = lo, hi
        piece = (*dims[:axis], hi - lo, *dims[axis + 1 :])
        parts.append(
            lw.build(
                coreml.SliceByIndexOp,
                [x],
                TensorType(elem, piece),
                begin=ints(begin),
                end=ints(stop),
                stride=ints([1] * len(dims)),
            )
        )
    if len(parts) == 1:
        return parts[0]
    concat = coreml.ConcatOp.build(
        operands=[parts],
        properties={"axis": int_attr(axis), "interleave": bool_attr(False)},
        result_types=[out],
    )
    return lw.emit(concat)


@RULES(indexing.SliceScatterOp)
def _slice_scatter(lw: Lowering, op: indexing.SliceScatterOp) -> Sequence[SSAValue]:
    """`slice_scatter` with step 1 (`x[:, :, a:b] = v`): the untouched parts of x and
    `src` (cast to x's type, as torch copies it) joined by `concat`. A step above 1
    has no lowering yet (an error, never a wrong answer)."""
    axis, start, end, step = op.bounds()
    if start == end:
        return [op.input]
    if step != 1:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: slice_scatter with step {step} is not "
            "supported on CoreML yet (only step 1)"
        )
    src = lw.as_elem(op.src, mil_tensor(op.result.type).get_element_type())
    return [_scatter_window(lw, op, axis, start, end, src)]


@RULES(indexing.SelectScatterOp)
def _select_scatter(lw: Lowering, op: indexing.SelectScatterOp) -> Sequence[SSAValue]:
    """`select_scatter` (`x[:, :, i] = v`): `src`, cast to x's type and given back the
    selected dim (size 1, by `reshape`), between the untouched parts of x (`concat`)."""
    dims = shape_of(op.input)
    axis = op.dim.value.data % len(dims)
    index = op.index.value.data % dims[axis]
    elem = mil_tensor(op.result.type).get_element_type()
    src = lw.as_elem(op.src, elem)
    piece = (*dims[:axis], 1, *dims[axis + 1 :])
    src = lw.build(coreml.ReshapeOp, [src], TensorType(elem, piece), shape=ints(piece))
    return [_scatter_window(lw, op, axis, index, index + 1, src)]


# ----- repeat, stack, flip, pixel_shuffle, constant_pad_nd ---------------------------------


def _reshaped(lw: Lowering, x: SSAValue, dims: Sequence[int]) -> SSAValue:
    if tuple(shape_of(x)) == tuple(dims):
        return x
    return lw.build(coreml.ReshapeOp, [x], TensorType(elem_of(x), list(dims)), shape=ints(dims))


def _concat(lw: Lowering, values: Sequence[SSAValue], axis: int, out: TensorType) -> SSAValue:
    if len(values) == 1:
        return values[0]
    concat = coreml.ConcatOp.build(
        operands=[list(values)],
        properties={"axis": int_attr(axis), "interleave": bool_attr(False)},
        result_types=[out],
    )
    return lw.emit(concat)


@RULES(shape.RepeatOp)
def _repeat(lw: Lowering, op: shape.RepeatOp) -> Sequence[SSAValue]:
    """`x.repeat(r)`: x reshaped to len(r) dims (leading 1s), then MIL `tile`."""
    reps = list(op.repeats.get_values())
    out = mil_tensor(op.result.type)
    if 0 in out.get_shape():
        raise QoptError(
            f"convert-to-coreml: {where(op)}: repeat to an empty result is not supported "
            "(Core ML tensors are not empty)"
        )
    dims = shape_of(op.input)
    x = _reshaped(lw, op.input, [1] * (len(reps) - len(dims)) + list(dims))
    if all(r == 1 for r in reps):
        return [x]
    return [lw.build(coreml.TileOp, [x], out, reps=ints(reps))]


@RULES(shape.StackOp)
def _stack(lw: Lowering, op: shape.StackOp) -> Sequence[SSAValue]:
    """`stack(xs, d)`: each x reshaped with a unit dim at d, then MIL `concat` on d
    (operands in the result's element type)."""
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    rank = len(out.get_shape())
    d = op.dim.value.data % rank
    values = []
    for value in op.inputs:
        dims = list(shape_of(value))
        values.append(_reshaped(lw, lw.as_elem(value, elem), [*dims[:d], 1, *dims[d:]]))
    return [_concat(lw, values, d, out)]


@RULES(shape.FlipOp)
def _flip(lw: Lowering, op: shape.FlipOp) -> Sequence[SSAValue]:
    """`flip(x, dims)`: one MIL `gather` of the reversed indices per flipped dim
    (size-1 dims are skipped)."""
    dims = shape_of(op.input)
    out = mil_tensor(op.result.type)
    x = op.input
    for axis in sorted({d % len(dims) for d in op.dims.get_values()}):
        if dims[axis] == 1:
            continue
        indices = lw.const(np.arange(dims[axis] - 1, -1, -1, dtype=np.int32), i32, "indices")
        x = _gather(lw, op, x, indices, axis, out)
    return [x]


@RULES(shape.ConstantPadNdOp)
def _constant_pad(lw: Lowering, op: shape.ConstantPadNdOp) -> Sequence[SSAValue]:
    """`constant_pad_nd(x, pad, value)`: on fp16 / fp32 with no negative amount, one
    MIL `pad` (constant mode), as coremltools writes it (exact: it copies x and
    fills the value). Otherwise dim by dim from the last: a negative amount crops
    (`slice_by_index`), a positive one concatenates a block of the value on that
    side (MIL `concat`; a block is a constant up to 16 elements, else the
    one-element constant tiled, so a large pad stores no large blob)."""
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    if 0 in out.get_shape() or 0 in shape_of(op.input):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: padding an empty tensor or to an empty result "
            "is not supported (Core ML tensors are not empty)"
        )
    x = lw.as_elem(op.input, elem)
    pads = list(op.pad.get_values())
    fill = np.asarray(op.value.value.data).astype(storage_dtype(elem))
    if not any(pads):  # Swin pads its windows by 0 when they fit: nothing to do
        return [x]
    if min(pads) >= 0 and coreml.mil_dtype_name(elem) in coreml.F:
        # MIL lists the padded dims first to last, torch last to first
        mil_pad = [a for i in reversed(range(len(pads) // 2)) for a in pads[2 * i : 2 * i + 2]]
        value = FloatAttr(float(fill), 64)
        return [lw.build(coreml.PadOp, [x], out, pad=ints(mil_pad), mode=StringAttr("constant"),
                         constant_val=value)]  # fmt: skip
    for i in range(len(pads) // 2):
        axis = len(shape_of(x)) - 1 - i
        lo, hi = pads[2 * i], pads[2 * i + 1]
        dims = list(shape_of(x))
        if lo < 0 or hi < 0:
            begin, end = [0] * len(dims), list(dims)
            begin[axis], end[axis] = max(0, -lo), dims[axis] - max(0, -hi)
            dims[axis] = end[axis] - begin[axis]
            x = lw.build(
                coreml.SliceByIndexOp,
                [x],
                TensorType(elem, dims),
                begin=ints(begin),
                end=ints(end),
                stride=ints([1] * len(dims)),
            )
        if lo <= 0 and hi <= 0:
            continue

        def block(amount: int) -> SSAValue:
            block_dims = [*dims[:axis], amount, *dims[axis + 1 :]]
            if math.prod(block_dims) <= 16:
                return lw.const(np.broadcast_to(fill, block_dims).copy(), elem, "pad")
            return lw.broadcast_to(op, lw.const(fill.reshape(1), elem, "pad"), block_dims)

        pieces = [*([block(lo)] if lo > 0 else []), x, *([block(hi)] if hi > 0 else [])]
        dims[axis] = sum(shape_of(p)[axis] for p in pieces)
        x = _concat(lw, pieces, axis, TensorType(elem, dims))
    return [x]


@RULES(shape.CumsumOp)
def _cumsum(lw: Lowering, op: shape.CumsumOp) -> Sequence[SSAValue]:
    """`cumsum(x, dim)`: MIL `cumsum` in the result's type (torch sums a bool or
    integer input as int64: int32 here, RoBERTa's position ids from the padding
    mask), the input cast to it first. Floats sum in order in fp32 (torch's CPU
    kernel accumulates in double: the two differ by rounding only)."""
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    if coreml.mil_dtype_name(elem) not in coreml.FI:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: MIL cumsum sums fp16, fp32 or int32, not "
            f"{coreml.mil_dtype_name(elem)}; cast the input first"
        )
    x = lw.as_elem(op.input, elem)
    rank = len(shape_of(op.input))
    if rank == 0:  # torch's cumsum of a scalar is the scalar
        return [x]
    axis = int_attr(op.dim.value.data % rank)
    flags = {"exclusive": bool_attr(False), "reverse": bool_attr(False)}
    return [lw.build(coreml.CumsumOp, [x], out, axis=axis, **flags)]


def _slice_axis(lw: Lowering, x: SSAValue, axis: int, start: int, stop: int) -> SSAValue:
    dims = list(shape_of(x))
    begin, end = [0] * len(dims), list(dims)
    begin[axis], end[axis] = start, stop
    out = TensorType(elem_of(x), [*dims[:axis], stop - start, *dims[axis + 1 :]])
    stride = ints([1] * len(dims))
    return lw.build(
        coreml.SliceByIndexOp, [x], out, begin=ints(begin), end=ints(end), stride=stride
    )


@RULES(shape.RollOp)
def _roll(lw: Lowering, op: shape.RollOp) -> Sequence[SSAValue]:
    """`roll(x, shifts, dims)` (Swin's shifted windows): per (shift, dim), the last
    `shift mod n` entries moved to the front, as two `slice_by_index` and a `concat`;
    without dims, the flattened tensor rolled and reshaped back."""
    dims = list(shape_of(op.input))
    shifts, axes = list(op.shifts.get_values()), list(op.dims.get_values())
    x = op.input
    if axes:
        work = dims
        pairs = [(s, a % len(dims)) for s, a in zip(shifts, axes, strict=True)]
    else:
        work = [math.prod(dims)]
        x = _reshaped(lw, x, work)
        pairs = [(shifts[0], 0)]
    for shift, axis in pairs:
        n = work[axis]
        k = shift % n if n else 0
        if k == 0:
            continue
        tail, head = _slice_axis(lw, x, axis, n - k, n), _slice_axis(lw, x, axis, 0, n - k)
        x = _concat(lw, [tail, head], axis, TensorType(elem_of(x), work))
    return [_reshaped(lw, x, dims)]


@RULES(indexing.GatherOp)
def _gather_along(lw: Lowering, op: indexing.GatherOp) -> Sequence[SSAValue]:
    """`torch.gather(x, dim, index)`: MIL `gather_along_axis`, x first sliced to the
    index's sizes in the other dims (torch allows a smaller index there, MIL does
    not); the index as int32 (RoBERTa's token types at its position ids)."""
    out = mil_tensor(op.result.type)
    if coreml.mil_dtype_name(out.get_element_type()) not in coreml.FI:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: MIL gather_along_axis gathers fp16, fp32 or "
            f"int32, not {coreml.mil_dtype_name(out.get_element_type())}"
        )
    dims, idx_dims = list(shape_of(op.input)), list(shape_of(op.index))
    if not dims:  # a 0-d gather: the value itself (the index must be 0), in the
        # index's shape (torch: a 0-d input with a [1] index gives [1])
        return [_reshaped(lw, lw.as_elem(op.input, out.get_element_type()), idx_dims)]
    axis = op.dim.value.data % len(dims)
    x = lw.as_elem(op.input, out.get_element_type())
    for d, (a, b) in enumerate(zip(dims, idx_dims, strict=True)):
        if d != axis and b < a:
            x = _slice_axis(lw, x, d, 0, b)
    index = lw.to_int32(op.index)
    return [lw.build(coreml.GatherAlongAxisOp, [x, index], out, axis=int_attr(axis))]

"""numpy semantics of the aten shape family (views, indexing, joins, creation)."""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Operation, SSAValue

from qopt.dialects.aten import indexing as ix
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.base import integer, ints, norm_dim
from qopt.dialects.tensors import dtype_of, shape_of
from qopt.errors import QoptError, where
from qopt.interpreters.common import as_result, checked_indices


def _fill(value: float, dtype: np.dtype) -> np.ndarray:
    """A 0-d array of `value` converted the way torch converts a fill scalar."""
    if dtype == np.bool_:
        return np.asarray(value != 0)
    if dtype.kind in "iu" and isinstance(value, float):
        value = math.trunc(value)
    return np.asarray(value).astype(dtype)


def _pad(x: np.ndarray, pad: tuple[int, ...], value: np.ndarray) -> np.ndarray:
    """torch.constant_pad_nd: (before, after) pairs from the last dim; negatives crop."""
    crop: list[slice] = [slice(None)] * x.ndim
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        crop[d] = slice(max(-before, 0), x.shape[d] - max(-after, 0))
        widths[d] = (max(before, 0), max(after, 0))
    return np.pad(x[tuple(crop)], widths, constant_values=value)


def _last_writes(keys: np.ndarray) -> np.ndarray:
    """Positions of the last occurrence of each distinct value of the 1-D `keys`:
    writing only those gives "last write wins" for repeated indices deterministically
    (numpy's assignment order for repeated indices is unspecified)."""
    _, first_from_end = np.unique(keys[::-1], return_index=True)
    return keys.size - 1 - first_from_end


def _index_put(op: ix.IndexPutOp, x: np.ndarray, indices: list[object], values: object):
    """`self[indices] = values` (or `+=`) on a copy of `x`; see `aten.index_put`."""
    dims = ints(op.indexed_dims)
    checked = [
        checked_indices(i, x.shape[d], op, negative=True)
        for d, i in zip(dims, indices, strict=True)
    ]
    wrapped = [np.where(i < 0, i + x.shape[d], i) for d, i in zip(dims, checked, strict=True)]
    # The shapes at run time (an index or the values may have `?` dims).
    try:
        grid = np.broadcast_arrays(*wrapped)
    except ValueError:
        shapes = " and ".join(str(list(i.shape)) for i in wrapped)
        raise QoptError(f"{where(op)}: index tensors of shapes {shapes} do not broadcast") from None
    count = grid[0].size
    # The indexing result has the index shape B in place of the indexed dims when they
    # are adjacent, else in front: bring B to the front and flatten it.
    indexed = ix.index_shape(x.shape, [grid[0].shape], dims)
    values = np.asarray(values)
    try:
        target = np.broadcast_to(values, indexed)
    except ValueError:
        raise QoptError(
            f"{where(op)}: values of shape {list(values.shape)} do not broadcast to the "
            f"indexing result's shape {list(indexed)} (torch raises a shape mismatch too)"
        ) from None
    b_rank = grid[0].ndim
    adjacent = list(dims) == list(range(dims[0], dims[0] + len(dims)))
    if adjacent and dims[0]:
        target = np.moveaxis(target, list(range(dims[0], dims[0] + b_rank)), list(range(b_rank)))
    rows = target.reshape(count, *target.shape[b_rank:])
    flat = [g.reshape(-1) for g in grid]
    out = np.array(x, copy=True)
    moved = np.moveaxis(out, list(dims), list(range(len(dims))))  # a view of `out`
    if op.is_accumulate():
        np.add.at(moved, tuple(flat), rows)  # in index order, as torch's CPU kernel adds
        return out
    keys = np.ravel_multi_index(tuple(flat), tuple(x.shape[d] for d in dims))
    keep = _last_writes(keys)
    moved[tuple(f[keep] for f in flat)] = rows[keep]
    return out


def _index_copy(op: ix.IndexCopyOp, x: np.ndarray, index: object, source: object):
    out = np.array(x, copy=True)
    if out.ndim == 0:
        idx = checked_indices(index, 1, op).reshape(-1)
        out[...] = np.asarray(source).reshape(-1)[-1]
        return out
    d = norm_dim(integer(op.dim), out.ndim)
    idx = checked_indices(index, out.shape[d], op).reshape(-1)
    src = np.asarray(source)
    rows = np.moveaxis(src, d, 0) if src.ndim else src.reshape(1)
    keep = _last_writes(idx)
    np.moveaxis(out, d, 0)[idx[keep]] = rows[keep]
    return out


def _arange(op: sh.ArangeOp, window: tuple[int, int] | None = None) -> np.ndarray:
    """The op's values; with `window` (begin, length), only those."""
    dtype = dtype_of(op.result)
    start, end, step = (sh.scalar_value(a) for a in (op.start, op.end, op.step))
    n = sh.arange_length(start, end, step, op.is_int64())
    i = np.arange(n, dtype=np.int64) if window is None else np.arange(*window, dtype=np.int64)
    if dtype.kind in "iu":
        return (int(start) + i * int(step)).astype(dtype)
    return (float(start) + i.astype(np.float64) * float(step)).astype(dtype)


LAZY_WINDOWS = "lazy_windows"
"""The interpreter data key (set by `make_interpreter` for whole-function runs) under
which creation ops at a bound are not materialised (`_windowed`)."""


def _windowed(interpreter: Interpreter, op: Operation) -> bool:
    """Whether `op` (an `arange` or `full` without operands, how the importer makes a
    tensor of a run-time size: at its `Dim`'s bound, then cut) is used only by windows
    (`dynamic_slice`) in a whole-function run: it is then never built at its bound: it
    runs as a zero-byte placeholder and each window computes its own values, so that a
    program costs what its run-time sizes need, not what its ranges allow."""
    uses = list(op.results[0].uses)
    return (
        bool(uses)
        and interpreter.get_data(AtenShapeFunctions, LAZY_WINDOWS, lambda: False)
        and all(isinstance(u.operation, ix.DynamicSliceOp) and u.index == 0 for u in uses)
    )


def _placeholder(value: SSAValue, fill: object = 0) -> np.ndarray:
    """A read-only array of `value`'s type holding no memory (every element `fill`)."""
    dtype = dtype_of(value)
    return np.broadcast_to(np.asarray(fill, dtype=dtype), shape_of(value))


def _window(op: Operation, start: int, length: int, size: int, dim: int) -> int:
    """`start` of a dynamic slice of `length` on a dim of `size`, as torch's narrow
    takes it: a negative start counts from the end, and a window outside the dim is
    an error (torch raises; nothing is clamped)."""
    given = start
    if -size <= start < 0:
        start += size
    if length < 0 or start < 0 or start + length > size:
        start = given
        raise QoptError(
            f"{where(op)}: the window [{start}, {start + length}) is out of range for dim "
            f"{dim} of size {size} (start {start}, length {length}); torch's narrow raises "
            "for it too: check the positions passed in"
        )
    return start


def _expanded_shape(op: sh.ExpandOp, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The result shape of `expand`: a `?` dim of the result keeps the input's size
    there, whatever it is at run time (1 included: the importer takes a `?` result
    dim only over the same size of the input), never grown from a static 1."""
    target = shape_of(op.result)
    declared = shape_of(op.input)
    offset = len(target) - len(shape)
    out: list[int] = []
    for i, d in enumerate(target):
        if d != DYNAMIC_INDEX:
            out.append(d)
            continue
        if i < offset or declared[i - offset] == 1:
            raise QoptError(f"{where(op)}: expands a dim to a dynamic size (?) it cannot know")
        out.append(shape[i - offset])
    return tuple(out)


@register_impls
class AtenShapeFunctions(InterpreterFunctions):
    @impl(sh.ViewOp)
    def run_view(self, interpreter: Interpreter, op: sh.ViewOp, args: PythonValues) -> PythonValues:
        # One `?` dim takes the remaining elements (the importer allows one per view).
        shape = tuple(-1 if d == DYNAMIC_INDEX else d for d in shape_of(op.result))
        if shape.count(-1) > 1:
            raise QoptError(f"{where(op)}: a view with more than one dynamic dim (?)")
        return (as_result(np.reshape(args[0], shape), op.result),)

    @impl(sh.UnsqueezeOp)
    def run_unsqueeze(
        self, interpreter: Interpreter, op: sh.UnsqueezeOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        d = norm_dim(integer(op.dim), x.ndim + 1)
        return (as_result(np.expand_dims(x, d), op.result),)

    @impl(sh.SqueezeOp)
    def run_squeeze(
        self, interpreter: Interpreter, op: sh.SqueezeOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        if x.ndim == 0:
            return (as_result(x, op.result),)
        dims = sh.norm_dims(ints(op.dims), x.ndim)
        return (as_result(np.squeeze(x, axis=dims), op.result),)

    @impl(sh.PermuteOp)
    def run_permute(
        self, interpreter: Interpreter, op: sh.PermuteOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        return (as_result(np.transpose(x, sh.norm_dims(ints(op.dims), x.ndim)), op.result),)

    @impl(sh.TransposeOp)
    def run_transpose(
        self, interpreter: Interpreter, op: sh.TransposeOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        if x.ndim == 0:
            return (as_result(x, op.result),)
        a, b = norm_dim(integer(op.dim0), x.ndim), norm_dim(integer(op.dim1), x.ndim)
        return (as_result(np.swapaxes(x, a, b), op.result),)

    @impl(sh.ExpandOp)
    def run_expand(
        self, interpreter: Interpreter, op: sh.ExpandOp, args: PythonValues
    ) -> PythonValues:
        x = np.asarray(args[0])
        return (as_result(np.broadcast_to(x, _expanded_shape(op, x.shape)), op.result),)

    @impl(sh.RepeatOp)
    def run_repeat(
        self, interpreter: Interpreter, op: sh.RepeatOp, args: PythonValues
    ) -> PythonValues:
        x, reps = np.asarray(args[0]), ints(op.repeats)
        if 0 in reps or x.size == 0:  # np.tile builds the other dims' copies first
            dims = (1,) * (len(reps) - x.ndim) + x.shape
            shape = tuple(int(d) * int(r) for d, r in zip(dims, reps, strict=True))
            return (as_result(np.empty(shape, x.dtype), op.result),)
        return (as_result(np.tile(x, reps), op.result),)

    @impl(sh.RepeatInterleaveOp)
    def run_repeat_interleave(
        self, interpreter: Interpreter, op: sh.RepeatInterleaveOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        repeats = integer(op.repeats)
        if op.dim is None:
            return (as_result(np.repeat(np.reshape(x, -1), repeats), op.result),)
        d = norm_dim(integer(op.dim), np.ndim(x))
        return (as_result(np.repeat(x, repeats, axis=d), op.result),)

    @impl(sh.FlipOp)
    def run_flip(self, interpreter: Interpreter, op: sh.FlipOp, args: PythonValues) -> PythonValues:
        (x,) = args
        dims = sh.norm_dims(ints(op.dims), x.ndim)
        return (as_result(np.flip(x, axis=dims) if dims and x.ndim else x, op.result),)

    @impl(sh.RollOp)
    def run_roll(self, interpreter: Interpreter, op: sh.RollOp, args: PythonValues) -> PythonValues:
        (x,) = args
        shifts, dims = ints(op.shifts), ints(op.dims)
        if not dims:
            y = np.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
        else:
            y = np.roll(x, shifts, axis=tuple(norm_dim(d, x.ndim) for d in dims))
        return (as_result(y, op.result),)

    @impl(sh.SliceOp)
    def run_slice(
        self, interpreter: Interpreter, op: sh.SliceOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        d, start, end, step = op.bounds()
        index = (slice(None),) * d + (slice(start, end, step),)
        return (as_result(x[index], op.result),)

    @impl(ix.DynamicSliceOp)
    def run_dynamic_slice(
        self, interpreter: Interpreter, op: ix.DynamicSliceOp, args: PythonValues
    ) -> PythonValues:
        x, start, *length = args
        x = np.asarray(x)
        d = norm_dim(integer(op.dim), x.ndim)
        n = int(np.asarray(length[0])) if length else shape_of(op.result)[d]
        begin = _window(op, int(np.asarray(start)), n, x.shape[d], d)
        index = (slice(None),) * d + (slice(begin, begin + n),)
        owner = op.input.owner
        if isinstance(owner, sh.ArangeOp | sh.FullOp) and _windowed(interpreter, owner):
            if isinstance(owner, sh.ArangeOp):  # 1-d: this window's values only
                return (as_result(_arange(owner, (begin, n)), op.result),)
            return (as_result(np.array(x[index]), op.result),)  # a real array, not a view
        return (as_result(x[index], op.result),)

    @impl(sh.SelectOp)
    def run_select(
        self, interpreter: Interpreter, op: sh.SelectOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        d = norm_dim(integer(op.dim), x.ndim)
        return (as_result(np.take(x, integer(op.index), axis=d), op.result),)

    @impl(ix.IndexOp)
    def run_index(
        self, interpreter: Interpreter, op: ix.IndexOp, args: PythonValues
    ) -> PythonValues:
        x, *indices = args
        key: list[slice | np.ndarray] = [slice(None)] * x.ndim
        for d, index in zip(ints(op.indexed_dims), indices, strict=True):
            key[d] = checked_indices(index, x.shape[d], op, negative=True)
        return (as_result(x[tuple(key)], op.result),)

    @impl(ix.IndexSelectOp)
    def run_index_select(
        self, interpreter: Interpreter, op: ix.IndexSelectOp, args: PythonValues
    ) -> PythonValues:
        x, index = args
        if x.ndim == 0:
            return (as_result(x, op.result),)
        d = norm_dim(integer(op.dim), x.ndim)
        y = np.take(x, checked_indices(index, x.shape[d], op).reshape(-1), axis=d)
        return (as_result(y, op.result),)

    @impl(ix.GatherOp)
    def run_gather(
        self, interpreter: Interpreter, op: ix.GatherOp, args: PythonValues
    ) -> PythonValues:
        x, index = args
        if x.ndim == 0 or np.ndim(index) == 0:
            y = np.take(x.reshape(-1), checked_indices(index, x.size, op))
            return (as_result(y, op.result),)
        d = norm_dim(integer(op.dim), x.ndim)
        index = checked_indices(index, x.shape[d], op)
        # torch lets the index be smaller than the input outside `dim`
        window = tuple(slice(None) if i == d else slice(0, n) for i, n in enumerate(index.shape))
        return (as_result(np.take_along_axis(x[window], index, axis=d), op.result),)

    @impl(ix.IndexPutOp)
    def run_index_put(
        self, interpreter: Interpreter, op: ix.IndexPutOp, args: PythonValues
    ) -> PythonValues:
        x, *indices, values = args
        return (as_result(_index_put(op, np.asarray(x), indices, values), op.result),)

    @impl(ix.IndexCopyOp)
    def run_index_copy(
        self, interpreter: Interpreter, op: ix.IndexCopyOp, args: PythonValues
    ) -> PythonValues:
        x, index, source = args
        return (as_result(_index_copy(op, np.asarray(x), index, source), op.result),)

    @impl(ix.SliceScatterOp)
    def run_slice_scatter(
        self, interpreter: Interpreter, op: ix.SliceScatterOp, args: PythonValues
    ) -> PythonValues:
        x, src = args
        out = np.array(x, copy=True)
        d, start, end, step = op.bounds()
        # torch copies `src` into the slice, converting it to self's dtype
        out[(slice(None),) * d + (slice(start, end, step),)] = np.asarray(src).astype(out.dtype)
        return (as_result(out, op.result),)

    @impl(ix.DynamicUpdateSliceOp)
    def run_dynamic_update_slice(
        self, interpreter: Interpreter, op: ix.DynamicUpdateSliceOp, args: PythonValues
    ) -> PythonValues:
        x, update, start = args
        out = np.array(x, copy=True)
        update = np.asarray(update)
        d = norm_dim(integer(op.dim), out.ndim)
        n = update.shape[d]
        begin = _window(op, int(np.asarray(start)), n, out.shape[d], d)
        out[(slice(None),) * d + (slice(begin, begin + n),)] = update
        return (as_result(out, op.result),)

    @impl(ix.SelectScatterOp)
    def run_select_scatter(
        self, interpreter: Interpreter, op: ix.SelectScatterOp, args: PythonValues
    ) -> PythonValues:
        x, src = args
        out = np.array(x, copy=True)
        d = norm_dim(integer(op.dim), out.ndim)
        index = integer(op.index) % out.shape[d]
        out[(slice(None),) * d + (index,)] = np.asarray(src).astype(out.dtype)
        return (as_result(out, op.result),)

    @impl(sh.CatOp)
    def run_cat(self, interpreter: Interpreter, op: sh.CatOp, args: PythonValues) -> PythonValues:
        dtype = dtype_of(op.result)
        parts = [np.asarray(a).astype(dtype, copy=False) for a in args if np.shape(a) != (0,)]
        if not parts:
            return (np.zeros(shape_of(op.result), dtype),)
        d = norm_dim(integer(op.dim), parts[0].ndim)
        return (as_result(np.concatenate(parts, axis=d), op.result),)

    @impl(sh.StackOp)
    def run_stack(
        self, interpreter: Interpreter, op: sh.StackOp, args: PythonValues
    ) -> PythonValues:
        dtype = dtype_of(op.result)
        parts = [np.asarray(a).astype(dtype, copy=False) for a in args]
        d = norm_dim(integer(op.dim), parts[0].ndim + 1)
        return (as_result(np.stack(parts, axis=d), op.result),)

    @impl(sh.SplitOp)
    def run_split(
        self, interpreter: Interpreter, op: sh.SplitOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        d = norm_dim(integer(op.dim), x.ndim)
        offsets = np.cumsum(np.asarray(ints(op.sizes), dtype=np.int64))[:-1]
        pieces = np.split(x, offsets, axis=d)
        return tuple(as_result(p, r) for p, r in zip(pieces, op.outputs, strict=True))

    @impl(sh.TrilOp)
    def run_tril(self, interpreter: Interpreter, op: sh.TrilOp, args: PythonValues) -> PythonValues:
        return (as_result(np.tril(args[0], integer(op.diagonal)), op.result),)

    @impl(sh.TriuOp)
    def run_triu(self, interpreter: Interpreter, op: sh.TriuOp, args: PythonValues) -> PythonValues:
        return (as_result(np.triu(args[0], integer(op.diagonal)), op.result),)

    @impl(sh.ConstantPadNdOp)
    def run_constant_pad_nd(
        self, interpreter: Interpreter, op: sh.ConstantPadNdOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        value = _fill(sh.scalar_value(op.value), x.dtype)
        return (as_result(_pad(x, ints(op.pad), value), op.result),)

    @impl(sh.DiffOp)
    def run_diff(self, interpreter: Interpreter, op: sh.DiffOp, args: PythonValues) -> PythonValues:
        (x,) = args
        d = norm_dim(integer(op.dim), x.ndim)
        y = np.asarray(x)
        for _ in range(integer(op.n)):
            if y.shape[d] == 0:
                break
            hi = np.take(y, np.arange(1, y.shape[d]), axis=d)
            lo = np.take(y, np.arange(0, y.shape[d] - 1), axis=d)
            y = np.not_equal(hi, lo) if y.dtype == np.bool_ else hi - lo
        return (as_result(y, op.result),)

    @impl(sh.CumsumOp)
    def run_cumsum(
        self, interpreter: Interpreter, op: sh.CumsumOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        dtype = dtype_of(op.result)
        if x.ndim == 0:
            return (as_result(x, op.result),)
        d = norm_dim(integer(op.dim), x.ndim)
        # torch accumulates floats in double on CPU
        acc = np.float64 if dtype.kind == "f" else dtype
        return (as_result(np.cumsum(x.astype(acc), axis=d), op.result),)

    @impl(sh.ArangeOp)
    def run_arange(
        self, interpreter: Interpreter, op: sh.ArangeOp, args: PythonValues
    ) -> PythonValues:
        if _windowed(interpreter, op):
            return (_placeholder(op.result),)
        return (as_result(_arange(op), op.result),)

    @impl(sh.FullOp)
    def run_full(self, interpreter: Interpreter, op: sh.FullOp, args: PythonValues) -> PythonValues:
        dtype = dtype_of(op.result)
        fill = _fill(sh.scalar_value(op.value), dtype)
        if _windowed(interpreter, op):
            return (_placeholder(op.result, fill),)
        return (np.full(shape_of(op.result), fill, dtype=dtype),)

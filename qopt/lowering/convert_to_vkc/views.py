"""convert-to-vkc rules of views, layout changes and gathers.

Views that keep the row-major order become `vkc.view` (no copy); every other
layout change (permute, transpose, slice, select, split, expand, repeat,
repeat_interleave, cat, stack, pad, pixel_shuffle) is a `copy_strided` dispatch;
slice_scatter and select_scatter are two (self, then src into the window); data
movements with compile-time offsets (index, index_select with constant indices,
flip, roll) and embeddings are `gather_rows` dispatches; index and index_select with
run-time indices along any dim are `gather_dim` (a status word per dispatch: an
invalid index is an error naming the op). index_put (one indexed dim, no
accumulate) and index_copy are `scatter_dim` dispatches: into a copy of self, or,
for a KV-cache update chosen by state.py (`Lowering.in_place`), straight into the
state buffer, with no copy of the cache.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import Operation, SSAValue

from qopt.dialects.aten import elementwise as el
from qopt.dialects.aten import indexing as ix
from qopt.dialects.aten import layers, nn
from qopt.dialects.aten import scalar as sc
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.base import flag, integer, ints, norm_dim
from qopt.dialects.tensors import dtype_of, numel, shape_of
from qopt.errors import quoted, where
from qopt.kernels.opcodes import DTYPES
from qopt.lowering.convert_to_vkc.attention import absorbs_repeat
from qopt.lowering.convert_to_vkc.lowering import (
    MAX_RANK,
    Buf,
    Lowering,
    RuleTable,
    abi_dtype,
    binary,
    broadcast_strides,
    copy_strided,
    row_major,
    same_dtype,
    unary,
    unsupported,
)
from qopt.numerics import resize

RULES = RuleTable()


@RULES(sh.ViewOp, sh.UnsqueezeOp, sh.SqueezeOp, el.CloneOp)
def lower_view(
    lw: Lowering, op: sh.ViewOp | sh.UnsqueezeOp | sh.SqueezeOp | el.CloneOp
) -> Sequence[Buf]:
    x = lw.buffer(op.input)
    return [lw.view(x, shape_of(op.result))]


def _permuted(lw: Lowering, value: SSAValue, perm: list[int]) -> Buf:
    x = lw.buffer(value)
    dims_in = shape_of(value)
    strides = row_major(dims_in)
    out_dims = [dims_in[p] for p in perm]
    if perm == sorted(perm) or numel(out_dims) == 1:
        return lw.view(x, out_dims)
    return copy_strided(lw, x, out_dims, [strides[p] for p in perm])


@RULES(sh.PermuteOp)
def lower_permute(lw: Lowering, op: sh.PermuteOp) -> Sequence[Buf]:
    rank = len(shape_of(op.input))
    return [_permuted(lw, op.input, [norm_dim(d, rank) for d in ints(op.dims)])]


@RULES(sh.TransposeOp)
def lower_transpose(lw: Lowering, op: sh.TransposeOp) -> Sequence[Buf]:
    rank = len(shape_of(op.input))
    perm = list(range(rank))
    if rank:  # a 0-d tensor's transpose (dims 0 / -1) is the tensor itself
        a = norm_dim(integer(op.dim0), rank)
        b = norm_dim(integer(op.dim1), rank)
        perm[a], perm[b] = perm[b], perm[a]
    return [_permuted(lw, op.input, perm)]


@RULES(sh.ExpandOp)
def lower_expand(lw: Lowering, op: sh.ExpandOp) -> Sequence[Buf]:
    x = lw.buffer(op.input)
    out_dims = shape_of(op.result)
    return [copy_strided(lw, x, out_dims, broadcast_strides(shape_of(op.input), out_dims))]


@RULES(sh.SliceOp)
def lower_slice(lw: Lowering, op: sh.SliceOp) -> Sequence[Buf]:
    x = lw.buffer(op.input)
    d, start, _end, step = op.bounds()
    strides = list(row_major(shape_of(op.input)))
    out_dims = shape_of(op.result)
    offset = start * strides[d]
    strides[d] *= step
    return [copy_strided(lw, x, out_dims, strides, offset)]


@RULES(sh.SplitOp)
def lower_split(lw: Lowering, op: sh.SplitOp) -> Sequence[Buf | np.ndarray]:
    """One strided copy per piece (a slice of `sizes[i]` along `dim`); a zero-size
    piece holds no data: an empty compile-time constant (its readers fold)."""
    x = lw.buffer(op.input)
    dims_in = shape_of(op.input)
    d = norm_dim(integer(op.dim), len(dims_in))
    strides = list(row_major(dims_in))
    pieces: list[Buf | np.ndarray] = []
    start = 0
    for result in op.outputs:
        out_dims = shape_of(result)
        if numel(out_dims) == 0:
            pieces.append(np.zeros(out_dims, dtype_of(result)))
        else:
            pieces.append(copy_strided(lw, x, out_dims, strides, start * strides[d]))
        start += out_dims[d]
    return pieces


@RULES(ix.IndexOp)
def lower_index(lw: Lowering, op: ix.IndexOp) -> Sequence[Buf]:
    """Advanced indexing with compile-time index tensors (masks built from
    `arange`, position tables: fold-constants makes them constants): the flat
    source offset of every result element is computed now, and one gather_rows
    dispatch with rows of one 32-bit word copies them."""
    dims_in = shape_of(op.input)
    if any(isinstance(lw.values[index], Buf) for index in op.indices):
        return [_index_at_run_time(lw, op)]
    key: list[slice | np.ndarray] = [slice(None)] * len(dims_in)
    for d, index in zip(op.indexed_dims.get_values(), op.indices, strict=True):
        key[int(d)] = np.asarray(lw.values[index], dtype=np.int64)
    offsets = np.arange(max(numel(dims_in), 1), dtype=np.int64).reshape(dims_in)[tuple(key)]
    x = lw.buffer(op.input)
    idx = lw.constant(offsets.reshape(-1).astype(np.int32), "i32")
    out_dims = shape_of(op.result) or (1,)
    out = lw.alloc(out_dims, x.dtype)
    lw.dispatch("gather_rows", [x, idx, out], [numel(out_dims), 1, numel(dims_in)])
    return [out]


def _index_at_run_time(lw: Lowering, op: ix.IndexOp) -> Buf:
    """`x[..., idx, ...]` with one run-time index tensor on dim d: gather_dim over x as
    [P, N, Q] (NEG = 1: torch counts negative indices from the end)."""
    dims = shape_of(op.input)
    if len(op.indices) != 1:
        raise unsupported(
            op,
            f"advanced indexing of {len(op.indices)} dims with run-time index tensors",
            "index one dim at a time (or use compile-time indices)",
        )
    d = int(op.indexed_dims.get_values()[0])
    return gather_dim(lw, lw.buffer(op.input), dims, d, op.indices[0], shape_of(op.result), 1)


def gather_dim(
    lw: Lowering,
    x: Buf,
    dims: Sequence[int],
    d: int,
    index: SSAValue,
    out_dims: Sequence[int],
    neg: int,
) -> Buf:
    """out = x[:, idx, :] along dim d of x (`dims`), the indices read from a buffer."""
    pre, n, post = numel(dims[:d]), dims[d], numel(dims[d + 1 :])
    count = numel(shape_of(index))
    out = lw.alloc(out_dims or (1,), x.dtype)
    if pre * count * post == 0:
        return out
    idx = _index_buffer(lw, index)
    lw.dispatch(
        "gather_dim", [x, idx, out], {"P": pre, "N": n, "Q": post, "S": count}, {"NEG": neg}
    )
    return out


def _index_buffer(lw: Lowering, index: SSAValue) -> Buf:
    """An index operand as an i32 buffer (compile-time indices become a constant)."""
    found = lw.values[index]
    if isinstance(found, Buf):
        return found
    flat = np.asarray(found, np.int64).reshape(-1)
    return lw.constant(flat if flat.size else np.zeros(1, np.int64), "i32")


@RULES(sh.SelectOp)
def lower_select(lw: Lowering, op: sh.SelectOp) -> Sequence[Buf]:
    x = lw.buffer(op.input)
    dims_in = shape_of(op.input)
    d = norm_dim(integer(op.dim), len(dims_in))
    index = integer(op.index) % dims_in[d]
    strides = list(row_major(dims_in))
    offset = index * strides[d]
    del strides[d]
    out_dims = shape_of(op.result) or (1,)
    return [copy_strided(lw, x, out_dims, strides or [1], offset)]


def concat_into(
    lw: Lowering, op: Operation, d: int, parts: Sequence[tuple[SSAValue, Sequence[int]]]
) -> Buf:
    """Copy each (value, dims as placed) into consecutive slices of the result along d."""
    out_dims = shape_of(op.results[0])
    dtype = abi_dtype(op.results[0])
    out = lw.alloc(out_dims, dtype)
    out_strides = row_major(out_dims)
    offset = 0
    for value, part_dims in parts:
        if numel(part_dims) == 0:
            continue
        part = same_dtype(lw, lw.buffer(value), dtype)
        copy_strided(
            lw, part, part_dims, row_major(part_dims), 0, out, out_strides, offset * out_strides[d]
        )
        offset += part_dims[d]
    return out


@RULES(sh.CatOp)
def lower_cat(lw: Lowering, op: sh.CatOp) -> Sequence[Buf]:
    d = norm_dim(integer(op.dim), len(shape_of(op.result)))
    parts = [(v, shape_of(v)) for v in op.inputs if shape_of(v) != (0,)]
    return [concat_into(lw, op, d, parts)]


@RULES(sh.StackOp)
def lower_stack(lw: Lowering, op: sh.StackOp) -> Sequence[Buf]:
    """cat of the inputs, each placed as a slice of size 1 along the new dim."""
    out_dims = shape_of(op.result)
    d = norm_dim(integer(op.dim), len(out_dims))
    piece = (*out_dims[:d], 1, *out_dims[d + 1 :])
    return [concat_into(lw, op, d, [(v, piece) for v in op.inputs])]


@RULES(sh.ConstantPadNdOp)
def lower_constant_pad(lw: Lowering, op: sh.ConstantPadNdOp) -> Sequence[Buf]:
    """Fill the output with the pad value, then copy the input's kept region into it
    (negative pads crop). An integer tensor (quantized integers padded with their zero
    point by fuse-quant) is filled in i32 with the value, which must be an integer
    of the element type (0 or 1 for a bool tensor, which travels as i32 0/1)."""
    in_dims = shape_of(op.input)
    out_dims = shape_of(op.result)
    dtype = abi_dtype(op.result)
    value = float(op.value.value.data)
    if dtype == "f32":
        bits = int(np.asarray(value, np.float32).view(np.uint32))
    else:
        elem = np.dtype(dtype_of(op.result))
        low, high = (0, 1) if elem == np.bool_ else (np.iinfo(elem).min, np.iinfo(elem).max)
        if value != int(value) or not low <= value <= high:
            raise unsupported(
                op,
                f"pads an integer tensor with {value}, not an integer of its type",
                "pad with an integer value",
            )
        bits = int(value) & 0xFFFFFFFF
    pads = list(ints(op.pad))
    before = [0] * len(in_dims)
    after = [0] * len(in_dims)
    for i in range(len(pads) // 2):
        d = len(in_dims) - 1 - i
        before[d], after[d] = pads[2 * i], pads[2 * i + 1]
    out = lw.alloc(out_dims, dtype)
    lw.dispatch("fill", [out], [numel(out_dims), bits, 0], {"MODE": DTYPES[dtype]})
    lengths = [
        n - max(0, -lo) - max(0, -hi) for n, lo, hi in zip(in_dims, before, after, strict=True)
    ]
    if numel(lengths) == 0 or min(lengths) <= 0:
        return [out]
    src_strides, out_strides = row_major(in_dims), row_major(out_dims)
    src_offset = sum(max(0, -lo) * s for lo, s in zip(before, src_strides, strict=True))
    out_offset = sum(max(0, lo) * s for lo, s in zip(before, out_strides, strict=True))
    x = lw.buffer(op.input)
    copy_strided(lw, x, lengths, src_strides, src_offset, out, out_strides, out_offset)
    return [out]


@RULES(sc.AssertScalarOp)
def lower_assert_scalar(lw: Lowering, op: sc.AssertScalarOp) -> Sequence[Buf]:
    """A run-time check torch recorded (`torch._check`, `.item()`'s range): assert_true
    sets a status word when it fails, an error naming the check after the call. A
    condition known at compile time is checked now."""
    message = f" ({quoted(op.message.data)})" if op.message is not None else ""
    found = lw.values[op.condition]
    if not isinstance(found, Buf):
        if not bool(np.asarray(found).reshape(-1)[0]):
            raise unsupported(
                op, f"asserts{message}, which is false for every input", "fix the model"
            )
        return []
    lw.dispatch("assert_true", [found, lw.status_buffer(f"{where(op)}{message}")], [])
    return []


@RULES(ix.IndexSelectOp)
def lower_index_select(lw: Lowering, op: ix.IndexSelectOp) -> Sequence[Buf]:
    """Constant indices: a gather of precomputed flat offsets (any dim); run-time
    indices: gather_rows of whole rows on dim 0, gather_dim on any other dim (only
    [0, N) is valid, as torch's index_select checks)."""
    dims = shape_of(op.input) or (1,)
    d = norm_dim(integer(op.dim), len(dims))
    x = lw.buffer(op.input)
    out_dims = shape_of(op.result) or (1,)
    found = lw.values[op.index]
    if isinstance(found, Buf) and d != 0:
        return [gather_dim(lw, x, dims, d, op.index, out_dims, 0)]
    out = lw.alloc(out_dims, x.dtype)
    if not isinstance(found, Buf):
        index = np.asarray(found, np.int64).reshape(-1) % dims[d]
        offsets = np.take(np.arange(numel(dims), dtype=np.int64).reshape(dims), index, axis=d)
        idx = lw.constant(offsets.reshape(-1).astype(np.int32), "i32")
        lw.dispatch("gather_rows", [x, idx, out], [numel(out_dims), 1, numel(dims)])
        return [out]
    count = numel(shape_of(op.index) or (1,))
    lw.dispatch("gather_rows", [x, found, out], [count, numel(dims[1:]), dims[0]])
    return [out]


@RULES(sh.RepeatOp)
def lower_repeat(lw: Lowering, op: sh.RepeatOp) -> Sequence[Buf]:
    """Tile: the output [r0*d0, r1*d1, ...] is the row-major copy of the view
    [r0, d0, r1, d1, ...] with stride 0 on every r (pairs with r = 1 collapse)."""
    reps = list(ints(op.repeats))
    in_dims = [1] * (len(reps) - len(shape_of(op.input))) + list(shape_of(op.input))
    strides = row_major(in_dims)
    view_dims: list[int] = []
    view_strides: list[int] = []
    for r, n, s in zip(reps, in_dims, strides, strict=True):
        if r != 1:
            view_dims.append(r)
            view_strides.append(0)
        view_dims.append(n)
        view_strides.append(s)
    if len(view_dims) > MAX_RANK:
        raise unsupported(op, f"repeat needing a rank-{len(view_dims)} copy", "repeat fewer dims")
    x = lw.buffer(op.input)
    out = copy_strided(lw, x, view_dims, view_strides)
    return [lw.view(out, shape_of(op.result))]


@RULES(sh.RepeatInterleaveOp)
def lower_repeat_interleave(lw: Lowering, op: sh.RepeatInterleaveOp) -> Sequence[Buf]:
    """Each element `r` times in place along dim: the row-major copy of the view
    [P, n, r, Q] of x `[*pre, n, *post]` with stride 0 on r (the flattened x, [n, r],
    without dim), viewed as the result. A repeat of key/value heads that only sdpa
    reads is no copy: sdpa reads x's heads in groups (attention.absorbs_repeat)."""
    dims = shape_of(op.input)
    r = integer(op.repeats)
    if op.dim is None:
        pre, n, post = 1, numel(dims), 1
    else:
        d = norm_dim(integer(op.dim), len(dims))
        pre, n, post = numel(dims[:d]), dims[d], numel(dims[d + 1 :])
    if numel(shape_of(op.result)) == 0:
        raise unsupported(op, "repeat_interleave with an empty result", "repeat at least once")
    x = lw.buffer(op.input)
    if absorbs_repeat(op):  # GQA: sdpa reads the source's heads in groups of r
        lw.kv_groups[op.result] = x
        return [x]
    out = copy_strided(lw, x, (pre, n, r, post), (n * post, post, 0, 1))
    return [lw.view(out, shape_of(op.result))]


def _converted_source(lw: Lowering, op: ix.SliceScatterOp | ix.SelectScatterOp) -> Buf:
    """`src` in the buffer type of the result (torch copies it into self's dtype), as
    `aten.to` lowers: booleans by `!= 0`, floats to integers by truncation."""
    src = lw.buffer(op.src)
    result_dtype = dtype_of(op.result)
    if dtype_of(op.src) == result_dtype:
        return src
    if result_dtype == np.bool_:
        return unary(lw, src, "to_bool", out_dtype="i32")
    want = abi_dtype(op.result)
    if want == "i32" and result_dtype.itemsize < 4:
        raise unsupported(
            op, f"converting src to {result_dtype} is not supported on Vulkan", "keep i32"
        )
    return same_dtype(lw, src, want)


def _scatter_window(
    lw: Lowering,
    op: ix.SliceScatterOp | ix.SelectScatterOp,
    window_strides: Sequence[int],
    offset: int,
) -> Buf:
    """A copy of self with `src` written over the window of self at `offset` with
    `window_strides` (one stride per dim of src): two strided copies."""
    dims = shape_of(op.input)
    src_dims = shape_of(op.src) or (1,)
    out = copy_strided(lw, lw.buffer(op.input), dims, row_major(dims))
    src = _converted_source(lw, op)
    copy_strided(lw, src, src_dims, row_major(src_dims), 0, out, window_strides, offset)
    return out


@RULES(ix.SliceScatterOp)
def lower_slice_scatter(lw: Lowering, op: ix.SliceScatterOp) -> Sequence[Buf]:
    d, start, end, step = op.bounds()
    if start == end:
        return [lw.buffer(op.input)]
    strides = list(row_major(shape_of(op.input)))
    offset = start * strides[d]
    strides[d] *= step
    return [_scatter_window(lw, op, strides, offset)]


@RULES(ix.SelectScatterOp)
def lower_select_scatter(lw: Lowering, op: ix.SelectScatterOp) -> Sequence[Buf]:
    dims = shape_of(op.input)
    d = norm_dim(integer(op.dim), len(dims))
    strides = list(row_major(dims))
    offset = (integer(op.index) % dims[d]) * strides[d]
    del strides[d]
    return [_scatter_window(lw, op, strides or [1], offset)]


def scatter_form(op: Operation) -> str | None:
    """Why index_put / index_copy `op` has no scatter_dim lowering (None: it has one)."""
    if isinstance(op, ix.IndexPutOp):
        if op.is_accumulate():
            return "index_put with accumulate=True"
        if len(op.indices) != 1:
            return f"index_put indexing {len(op.indices)} dims"
        return None
    if isinstance(op, ix.IndexCopyOp):
        return None if shape_of(op.input) else "index_copy of a 0-d tensor"
    return f"'{op.name}' is not a scatter"


def _scatter(
    lw: Lowering,
    op: ix.IndexPutOp | ix.IndexCopyOp,
    index: SSAValue,
    values: SSAValue,
    d: int,
    target: Sequence[int],
    neg: int,
) -> Buf:
    """scatter_dim of `values` (broadcast to `target`, self's dims with d -> the S
    indices) into self along d: into a copy of self, or into self's own buffer when
    state.py chose this op for an in-place update (self is then a state buffer)."""
    why = scatter_form(op)
    if why is not None:
        raise unsupported(op, f"{why} has no Vulkan lowering", "write one dim, no accumulate")
    dims = shape_of(op.input)
    if op in lw.in_place:
        out = lw.buffer(op.input)
    else:
        out = copy_strided(lw, lw.buffer(op.input), dims, row_major(dims))
    pre, n, post = numel(dims[:d]), dims[d], numel(dims[d + 1 :])
    count = numel(shape_of(index))
    if pre * count * post == 0:
        return out
    vals = lw.buffer(values)
    v_dims = shape_of(values)
    padded = (1,) * (len(target) - len(v_dims)) + tuple(v_dims)
    if padded != tuple(target):  # values broadcast: materialize them as [P, S, Q]
        if len(target) > MAX_RANK:
            raise unsupported(op, f"broadcasting values to rank {len(target)}", "expand them")
        vals = copy_strided(lw, vals, target, broadcast_strides(v_dims, target))
    lw.dispatch(
        "scatter_dim",
        [vals, _index_buffer(lw, index), out],
        {"P": pre, "N": n, "Q": post, "S": count},
        {"NEG": neg},
    )
    return out


@RULES(ix.IndexPutOp)
def lower_index_put(lw: Lowering, op: ix.IndexPutOp) -> Sequence[Buf]:
    """`self[..., idx, ...] = values` on one dim (negative indices from the end)."""
    why = scatter_form(op)
    if why is not None:
        raise unsupported(op, f"{why} has no Vulkan lowering", "write one dim, no accumulate")
    d = int(op.indexed_dims.get_values()[0])
    return [_scatter(lw, op, op.indices[0], op.values, d, op.indexed_shape(), 1)]


@RULES(ix.IndexCopyOp)
def lower_index_copy(lw: Lowering, op: ix.IndexCopyOp) -> Sequence[Buf]:
    """`self[..., index[i], ...] = source[..., i, ...]` along dim (indices in [0, N))."""
    dims = shape_of(op.input)
    if not dims:
        raise unsupported(op, "index_copy of a 0-d tensor has no Vulkan lowering", "use view")
    d = norm_dim(integer(op.dim), len(dims))
    count = numel(shape_of(op.index))
    target = (*dims[:d], count, *dims[d + 1 :])
    return [_scatter(lw, op, op.index, op.source, d, target, 0)]


@RULES(layers.PixelShuffleOp)
def lower_pixel_shuffle(lw: Lowering, op: layers.PixelShuffleOp) -> Sequence[Buf]:
    """out[n, c, h*r + i, w*r + j] = x[n, c*r*r + i*r + j, h, w]: one strided copy over
    (N, C, H, r, W, r)."""
    dims = shape_of(op.input)
    r = integer(op.upscale_factor)
    c_in, h, w = dims[-3:]
    c = c_in // (r * r)
    n = numel(dims[:-3])
    src = [c_in * h * w, r * r * h * w, w, r * h * w, 1, h * w]
    x = lw.buffer(op.input)
    out = copy_strided(lw, x, (n, c, h, r, w, r), src)
    return [lw.view(out, shape_of(op.result))]


@RULES(layers.UpsampleNearest2dOp, layers.UpsampleBilinear2dOp)
def lower_upsample2d(
    lw: Lowering, op: layers.UpsampleNearest2dOp | layers.UpsampleBilinear2dOp
) -> Sequence[Buf]:
    """Resizing as gather_rows of compile-time flat source offsets (torch's index
    rules, qopt/numerics/resize.py): nearest is one gather; bilinear gathers the four
    corners and blends them on the binary kernel with constant [OH, OW] weights in
    torch's order, `h0 * (w0 * x00 + w1 * x01) + h1 * (w0 * x10 + w1 * x11)`."""
    dims = shape_of(op.input)
    h, w = dims[-2:]
    out_dims = shape_of(op.result)
    oh, ow = out_dims[-2:]
    x = same_dtype(lw, lw.buffer(op.input), "f32")
    planes = np.arange(numel(dims[:-2]), dtype=np.int64)[:, None, None] * (h * w)
    scales = op.scales()

    def gather(rows: np.ndarray, cols: np.ndarray) -> Buf:
        offsets = planes + rows[None, :, None] * w + cols[None, None, :]
        idx = lw.constant(offsets.reshape(-1).astype(np.int32), "i32")
        out = lw.alloc(out_dims, "f32")
        lw.dispatch("gather_rows", [x, idx, out], [offsets.size, 1, numel(dims)])
        return out

    if isinstance(op, layers.UpsampleNearest2dOp):
        return [
            gather(
                resize.nearest_indices(h, oh, scales[0]), resize.nearest_indices(w, ow, scales[1])
            )
        ]
    corners = flag(op.align_corners)
    h0, h1, hw0, hw1 = resize.linear_weights(h, oh, corners, scales[0])
    w0, w1, ww0, ww1 = resize.linear_weights(w, ow, corners, scales[1])

    def weight(values: np.ndarray, along_h: bool) -> Buf:
        grid = values[:, None].repeat(ow, 1) if along_h else values[None, :].repeat(oh, 0)
        return lw.view(lw.constant(grid.reshape(-1).astype(np.float32), "f32"), (oh, ow))

    def blend(a: Buf, wa: Buf, b: Buf, wb: Buf) -> Buf:
        first = binary(lw, wa, a, "mul", out_dims, "f32")
        second = binary(lw, wb, b, "mul", out_dims, "f32")
        return binary(lw, first, second, "add", out_dims, "f32")

    c0, c1 = weight(ww0, False), weight(ww1, False)
    top = blend(gather(h0, w0), c0, gather(h0, w1), c1)
    bottom = blend(gather(h1, w0), c0, gather(h1, w1), c1)
    return [blend(top, weight(hw0, True), bottom, weight(hw1, True))]


def _permute_by_offsets(lw: Lowering, op: sh.FlipOp | sh.RollOp, offsets: np.ndarray) -> Buf:
    """A static data movement (flip, roll, ...) as one gather of compile-time flat
    source offsets (gather_rows with rows of one word)."""
    dims = shape_of(op.input) or (1,)
    x = lw.buffer(op.input)
    out = lw.alloc(shape_of(op.result) or (1,), x.dtype)
    idx = lw.constant(offsets.reshape(-1).astype(np.int32), "i32")
    lw.dispatch("gather_rows", [x, idx, out], [offsets.size, 1, numel(dims)])
    return out


@RULES(sh.FlipOp)
def lower_flip(lw: Lowering, op: sh.FlipOp) -> Sequence[Buf]:
    dims = shape_of(op.input) or (1,)
    axes = tuple(norm_dim(d, len(dims)) for d in ints(op.dims))
    flat = np.arange(numel(dims), dtype=np.int64).reshape(dims)
    return [_permute_by_offsets(lw, op, np.flip(flat, axis=axes) if axes else flat)]


@RULES(sh.RollOp)
def lower_roll(lw: Lowering, op: sh.RollOp) -> Sequence[Buf]:
    dims = shape_of(op.input) or (1,)
    shifts, axes = ints(op.shifts), ints(op.dims)
    flat = np.arange(numel(dims), dtype=np.int64).reshape(dims)
    if not axes:
        rolled = np.roll(flat.reshape(-1), shifts[0]).reshape(dims)
    else:
        rolled = np.roll(flat, tuple(shifts), axis=tuple(norm_dim(d, len(dims)) for d in axes))
    return [_permute_by_offsets(lw, op, rolled)]


@RULES(nn.EmbeddingOp)
def lower_embedding(lw: Lowering, op: nn.EmbeddingOp) -> Sequence[Buf]:
    v, d = shape_of(op.weight)
    table = lw.buffer(op.weight)
    idx = lw.buffer(op.indices)
    count = numel(shape_of(op.indices))
    out = lw.alloc(shape_of(op.result), table.dtype)
    lw.dispatch("gather_rows", [table, idx, out], [count, d, v])
    return [out]


@RULES(ix.GatherOp)
def lower_gather(lw: Lowering, op: ix.GatherOp) -> Sequence[Buf]:
    """`torch.gather(x, dim, index)` (`out[p] = x[p with p[dim] = index[p]]`; the index
    may be smaller than x in the other dims) as one flat gather_dim over x at
    `index * stride[dim] + offset of p's other coordinates`. The index is first
    gathered from `arange(n)`, which checks each in [0, n) (torch's IndexError, a
    status word here): an index past its row cannot read a neighbouring one."""
    dims = list(shape_of(op.input)) or [1]
    idx_dims = list(shape_of(op.index)) or [1]
    x = lw.buffer(op.input)
    out = lw.alloc(idx_dims, x.dtype)
    count = numel(idx_dims)
    if count == 0:
        return [out]
    d = norm_dim(integer(op.dim), len(dims)) if shape_of(op.input) else 0
    n, strides = dims[d], row_major(dims)
    positions = lw.constant(np.arange(n, dtype=np.int64), "i32")
    checked = lw.alloc((count,), "i32")
    size: dict[str, int | float] = {"P": 1, "N": n, "Q": 1, "S": count}
    lw.dispatch("gather_dim", [positions, _index_buffer(lw, op.index), checked], size, {"NEG": 0})
    coords = np.indices(idx_dims).reshape(len(idx_dims), -1)
    base = np.zeros(count, np.int64)
    for i in range(len(idx_dims)):
        if i != d:
            base += coords[i] * strides[i]
    stride = lw.constant(np.asarray([strides[d]], np.int64), "i32")
    flat = binary(lw, checked, stride, "mul", (count,), "i32")
    flat = binary(lw, flat, lw.constant(base, "i32"), "add", (count,), "i32")
    whole: dict[str, int | float] = {"P": 1, "N": numel(dims), "Q": 1, "S": count}
    lw.dispatch("gather_dim", [lw.view(x, (numel(dims),)), flat, out], whole, {"NEG": 0})
    return [out]

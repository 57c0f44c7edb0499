"""The convert-to-vkc rules: one function per op family, registered by op name.

Each rule reads its op's operands through `Lowering.buffer` (constants become
`vkc.constant` buffers) and returns, per result, the `Buf` holding it. Kernel
interfaces (bindings, push constants, spec constants) are those registered in
qopt/backends/vulkan/kernel_specs.py; the lowering passes buffers and push
values in declaration order, so a change of interface shows as a clear error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from qopt.dialects import quant
from qopt.dialects.aten import elementwise as el
from qopt.dialects.aten.base import flag, integer, ints, norm_dim, real, text
from qopt.lowering.convert_to_vkc import Buf, Lowering, abi_dtype, rule, unsupported

MAX_RANK = 6

# unary.glsl op codes
UNARY = {
    "aten.relu": 1,
    "aten.silu": 2,
    "aten.sigmoid": 3,
    "aten.tanh": 4,
    "aten.exp": 5,
    "aten.log": 6,
    "aten.sqrt": 7,
    "aten.rsqrt": 8,
    "aten.reciprocal": 9,
    "aten.sin": 10,
    "aten.cos": 11,
    "aten.erf": 12,
    "aten.neg": 13,
    "aten.abs": 14,
    "aten.floor": 17,
    "aten.ceil": 18,
    "aten.round": 19,
    "aten.clamp": 20,
    "aten.leaky_relu": 21,
    "aten.hardswish": 22,
    "aten.hardsigmoid": 23,
}
GELU_ERF, GELU_TANH, CAST_F2I, CAST_I2F, NONZERO = 15, 16, 25, 26, 27

# binary.glsl op codes
BINARY = {
    "aten.add": 0,
    "aten.sub": 1,
    "aten.mul": 2,
    "aten.div": 3,
    "aten.pow": 4,
    "aten.maximum": 5,
    "aten.minimum": 6,
    "aten.eq": 7,
    "aten.ne": 8,
    "aten.lt": 9,
    "aten.le": 10,
    "aten.gt": 11,
    "aten.ge": 12,
    "aten.logical_and": 13,
    "aten.logical_or": 14,
    "aten.remainder": 15,
    "aten.bitwise_and": 17,
    "aten.bitwise_or": 18,
    "aten.bitwise_xor": 19,
}
FLOOR_DIV = 16
REDUCE = {"aten.sum": 0, "aten.mean": 1, "aten.amax": 2, "aten.amin": 3}


def shape(value: SSAValue) -> tuple[int, ...]:
    type = value.type
    assert isinstance(type, TensorType)
    return tuple(type.get_shape())


def numel(dims: Sequence[int]) -> int:
    return int(np.prod(tuple(dims), dtype=np.int64))


def row_major(dims: Sequence[int]) -> tuple[int, ...]:
    strides: list[int] = []
    acc = 1
    for d in reversed(dims):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def pad6(dims: Sequence[int], *strides: Sequence[int]) -> list[list[int]]:
    """Dims and strides padded to 6 (leading 1s / 0s), size-1 dims merged out."""
    if len(dims) > MAX_RANK:
        raise ValueError(f"rank {len(dims)} exceeds {MAX_RANK}")
    pad = MAX_RANK - len(dims)
    return [[1] * pad + list(dims)] + [[0] * pad + list(s) for s in strides]


def broadcast_strides(src: Sequence[int], out: Sequence[int]) -> list[int]:
    """Strides reading a row-major `src` broadcast to `out` (0 on broadcast dims)."""
    base = row_major(src)
    pad = len(out) - len(src)
    strides = [0] * pad
    for d, (size, stride) in enumerate(zip(src, base, strict=True)):
        strides.append(0 if size == 1 and out[pad + d] != 1 else stride)
    return strides


# ----- generic helpers ---------------------------------------------------------------------


def copy_strided(
    lw: Lowering,
    src: Buf,
    dims: Sequence[int],
    src_strides: Sequence[int],
    src_offset: int = 0,
    out: Buf | None = None,
    out_strides: Sequence[int] | None = None,
    out_offset: int = 0,
) -> Buf:
    """out[out_offset + idx . out_strides] = src[src_offset + idx . src_strides]."""
    if out is None:
        out = lw.alloc(dims, src.dtype)
    if out_strides is None:
        out_strides = row_major(dims)
    d, si, so = pad6(dims, src_strides, out_strides)
    lw.dispatch("copy_strided", [src, out], [numel(dims), src_offset, out_offset, *d, *si, *so])
    return out


def unary(
    lw: Lowering, x: Buf, code: int, a: float = 0.0, b: float = 0.0, out_dtype: str = ""
) -> Buf:
    out = lw.alloc(x.shape, out_dtype or x.dtype)
    lw.dispatch(
        "unary", [x, out], [x.numel, a, b], {"OP": code, "DTYPE": 0 if x.dtype == "f32" else 1}
    )
    return out


def binary(
    lw: Lowering,
    a: Buf,
    b: Buf,
    code: int,
    out_shape: Sequence[int],
    out_dtype: str,
    alpha: float = 1.0,
) -> Buf:
    out = lw.alloc(out_shape, out_dtype)
    d, sa, sb = pad6(
        out_shape, broadcast_strides(a.shape, out_shape), broadcast_strides(b.shape, out_shape)
    )
    lw.dispatch(
        "binary",
        [a, b, out],
        [numel(out_shape), *d, *sa, *sb, 0, 0, alpha],
        {"OP": code, "DTYPE": 0 if a.dtype == "f32" else 1},
    )
    return out


def same_dtype(lw: Lowering, buf: Buf, dtype: str) -> Buf:
    if buf.dtype == dtype:
        return buf
    return unary(lw, buf, CAST_I2F if dtype == "f32" else CAST_F2I, out_dtype=dtype)


def operand_shape_buf(lw: Lowering, value: SSAValue) -> Buf:
    """The operand as a buffer with the operand's (tensor) shape."""
    buf = lw.buffer(value)
    return lw.view(buf, shape(value) or (1,)) if buf.shape != (shape(value) or (1,)) else buf


# ----- views and layout ----------------------------------------------------------------------


@rule("aten.view", "aten.unsqueeze", "aten.squeeze", "aten.clone")
def lower_view(lw: Lowering, op: Operation) -> Sequence[Buf]:
    x = lw.buffer(op.operands[0])
    return [lw.view(x, shape(op.results[0]))]


@rule("aten.to")
def lower_cast(lw: Lowering, op: Operation) -> Sequence[Buf]:
    x = lw.buffer(op.operands[0])
    want = abi_dtype(op.results[0])
    result_dtype = np.dtype(_np(op.results[0]))
    if result_dtype == np.bool_:
        return [unary(lw, x, NONZERO, out_dtype="i32")]
    if want == x.dtype and not (want == "i32" and result_dtype.itemsize < 4):
        return [lw.view(x, shape(op.results[0]))]
    if want == x.dtype:
        raise unsupported(op, f"narrowing to {result_dtype} is not supported on Vulkan", "keep i32")
    return [lw.view(same_dtype(lw, x, want), shape(op.results[0]))]


def _np(value: SSAValue) -> Any:
    from qopt.dialects.dtypes import numpy_dtype

    type = value.type
    assert isinstance(type, TensorType)
    return numpy_dtype(type.get_element_type())


@rule("aten.permute", "aten.transpose")
def lower_permute(lw: Lowering, op: Operation) -> Sequence[Buf]:
    x = lw.buffer(op.operands[0])
    dims_in = shape(op.operands[0])
    rank = len(dims_in)
    if op.name == "aten.permute":
        perm = [norm_dim(d, rank) for d in ints(op.dims)]  # type: ignore[attr-defined]
    else:
        perm = list(range(rank))
        a = norm_dim(integer(op.dim0), rank)  # type: ignore[attr-defined]
        b = norm_dim(integer(op.dim1), rank)  # type: ignore[attr-defined]
        perm[a], perm[b] = perm[b], perm[a]
    strides = row_major(dims_in)
    out_dims = [dims_in[p] for p in perm]
    if perm == sorted(perm) or numel(out_dims) == 1:
        return [lw.view(x, out_dims)]
    return [copy_strided(lw, x, out_dims, [strides[p] for p in perm])]


@rule("aten.expand")
def lower_expand(lw: Lowering, op: Operation) -> Sequence[Buf]:
    x = lw.buffer(op.operands[0])
    out_dims = shape(op.results[0])
    return [copy_strided(lw, x, out_dims, broadcast_strides(shape(op.operands[0]), out_dims))]


@rule("aten.slice")
def lower_slice(lw: Lowering, op: Operation) -> Sequence[Buf]:
    x = lw.buffer(op.operands[0])
    d, start, _end, step = op.bounds()  # type: ignore[attr-defined]
    dims_in = shape(op.operands[0])
    strides = list(row_major(dims_in))
    out_dims = shape(op.results[0])
    offset = start * strides[d]
    strides[d] *= step
    return [copy_strided(lw, x, out_dims, strides, offset)]


@rule("aten.split")
def lower_split(lw: Lowering, op: Operation) -> Sequence[Buf]:
    """One strided copy per piece (a slice of `sizes[i]` along `dim`)."""
    x = lw.buffer(op.operands[0])
    dims_in = shape(op.operands[0])
    d = norm_dim(integer(op.dim), len(dims_in))  # type: ignore[attr-defined]
    strides = list(row_major(dims_in))
    pieces, start = [], 0
    for result in op.results:
        out_dims = shape(result)
        pieces.append(copy_strided(lw, x, out_dims, strides, start * strides[d]))
        start += out_dims[d]
    return pieces


@rule("aten.index")
def lower_index(lw: Lowering, op: Operation) -> Sequence[Buf]:
    """Advanced indexing with compile-time index tensors (masks built from
    `arange`, position tables: fold-constants makes them constants): the flat
    source offset of every result element is computed now, and one gather_rows
    dispatch with rows of one 32-bit word copies them."""
    dims_in = shape(op.operands[0])
    key: list[slice | np.ndarray] = [slice(None)] * len(dims_in)
    for d, index in zip(op.indexed_dims.get_values(), op.operands[1:], strict=True):  # type: ignore[attr-defined]
        found = lw.values[index]
        if isinstance(found, Buf):
            raise unsupported(
                op, "indexing with run-time index tensors", "use constant indices or gather"
            )
        key[int(d)] = np.asarray(found, dtype=np.int64)
    offsets = np.arange(max(numel(dims_in), 1), dtype=np.int64).reshape(dims_in)[tuple(key)]
    x = lw.buffer(op.operands[0])
    idx = lw.constant(offsets.reshape(-1).astype(np.int32), "i32")
    out_dims = shape(op.results[0]) or (1,)
    out = lw.alloc(out_dims, x.dtype)
    lw.dispatch("gather_rows", [x, idx, out], [numel(out_dims), 1, numel(dims_in)])
    return [out]


@rule("aten.select")
def lower_select(lw: Lowering, op: Operation) -> Sequence[Buf]:
    x = lw.buffer(op.operands[0])
    dims_in = shape(op.operands[0])
    d = norm_dim(integer(op.dim), len(dims_in))  # type: ignore[attr-defined]
    index = integer(op.index) % dims_in[d]  # type: ignore[attr-defined]
    strides = list(row_major(dims_in))
    offset = index * strides[d]
    del strides[d]
    out_dims = shape(op.results[0]) or (1,)
    return [copy_strided(lw, x, out_dims, strides or [1], offset)]


def concat_into(
    lw: Lowering, op: Operation, d: int, parts: Sequence[tuple[SSAValue, Sequence[int]]]
) -> Buf:
    """Copy each (value, dims as placed) into consecutive slices of the result along d."""
    out_dims = shape(op.results[0])
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


@rule("aten.cat")
def lower_cat(lw: Lowering, op: Operation) -> Sequence[Buf]:
    d = norm_dim(integer(op.dim), len(shape(op.results[0])))  # type: ignore[attr-defined]
    parts = [(v, shape(v)) for v in op.operands if shape(v) != (0,)]
    return [concat_into(lw, op, d, parts)]


# ----- elementwise ---------------------------------------------------------------------------


@rule(*UNARY)
def lower_unary(lw: Lowering, op: Operation) -> Sequence[Buf]:
    x = lw.buffer(op.operands[0])
    a = b = 0.0
    if op.name == "aten.clamp":
        a = real(op.min, -np.inf) if op.min is not None else float("-inf")  # type: ignore[attr-defined]
        b = real(op.max, np.inf) if op.max is not None else float("inf")  # type: ignore[attr-defined]
    if op.name == "aten.leaky_relu":
        a = real(op.negative_slope, 0.01)  # type: ignore[attr-defined]
    if x.dtype != "f32" and op.name not in ("aten.relu", "aten.neg", "aten.abs", "aten.clamp"):
        if op.name in ("aten.floor", "aten.ceil", "aten.round"):
            return [lw.view(x, shape(op.results[0]))]
        raise unsupported(op, "integer inputs are not supported by this Vulkan op", "cast first")
    out = unary(lw, x, UNARY[op.name], a, b, abi_dtype(op.results[0]))
    return [lw.view(out, shape(op.results[0]))]


@rule("aten.gelu")
def lower_gelu(lw: Lowering, op: Operation) -> Sequence[Buf]:
    x = lw.buffer(op.operands[0])
    approximate = text(op.approximate, "none")  # type: ignore[attr-defined]
    return [unary(lw, x, GELU_TANH if approximate == "tanh" else GELU_ERF)]


@rule(*BINARY)
def lower_binary(lw: Lowering, op: Operation) -> Sequence[Buf]:
    assert isinstance(op, el.BinaryOp)
    out_dims = shape(op.result) or (1,)
    compute = "f32" if any(abi_dtype(v) == "f32" for v in op.operands) else "i32"
    a = same_dtype(lw, operand_shape_buf(lw, op.lhs), compute)
    b = same_dtype(lw, operand_shape_buf(lw, op.rhs), compute)
    code = BINARY[op.name]
    alpha = 1.0
    if isinstance(op, el.AddOp | el.SubOp) and op.alpha is not None:
        alpha = op.alpha.value.data
    if isinstance(op, el.DivOp) and op.rounding_mode is not None:
        mode = op.rounding_mode.data
        if mode == "floor":
            code = FLOOR_DIV
        else:
            raise unsupported(op, f"div rounding_mode '{mode}'", "use floor or true division")
    if compute == "f32" and code in (17, 18, 19):
        raise unsupported(op, f"{op.name} of floats", "bitwise ops take integer or bool tensors")
    if compute == "i32" and op.name == "aten.div":
        raise unsupported(op, "true division of integers", "cast the operands to float")
    a = lw.view(a, shape(op.lhs) or (1,))
    b = lw.view(b, shape(op.rhs) or (1,))
    out = binary(lw, a, b, code, out_dims, abi_dtype(op.result), alpha)
    return [out]


@rule("aten.where", "aten.masked_fill")
def lower_where(lw: Lowering, op: Operation) -> Sequence[Buf]:
    out_dims = shape(op.results[0]) or (1,)
    dtype = abi_dtype(op.results[0])
    if op.name == "aten.where":
        c, a, b = op.operands
    else:
        a, c, b = op.operands
    bufs = [operand_shape_buf(lw, c)] + [
        same_dtype(lw, operand_shape_buf(lw, v), dtype) for v in (a, b)
    ]
    out = lw.alloc(out_dims, dtype)
    strides = [broadcast_strides(shape(v) or (1,), out_dims) for v in (c, a, b)]
    d, sc, sa, sb = pad6(out_dims, *strides)
    lw.dispatch("where", [*bufs, out], [numel(out_dims), *d, *sc, *sa, *sb])
    return [out]


# ----- reductions and normalisation ----------------------------------------------------------


def to_last(
    lw: Lowering, x: Buf, dims: Sequence[int], reduce: Sequence[int]
) -> tuple[Buf, int, int]:
    """`x` ([dims]) with the `reduce` dims moved last (a transposing copy when needed):
    returns (buffer, rows, cols)."""
    keep = [d for d in range(len(dims)) if d not in reduce]
    perm = keep + sorted(reduce)
    cols = numel([dims[d] for d in reduce])
    rows = numel([dims[d] for d in keep])
    if perm == list(range(len(dims))):
        return x, rows, cols
    strides = row_major(dims)
    moved = copy_strided(lw, x, [dims[p] for p in perm], [strides[p] for p in perm])
    return moved, rows, cols


@rule(*REDUCE)
def lower_reduce(lw: Lowering, op: Operation) -> Sequence[Buf]:
    dims = shape(op.operands[0])
    x = lw.buffer(op.operands[0])
    if x.dtype != "f32" or abi_dtype(op.results[0]) != "f32":
        raise unsupported(op, "integer reductions are not supported on Vulkan", "cast to float")
    axes = ints(op.dims)  # type: ignore[attr-defined]
    reduce = sorted({norm_dim(a, len(dims)) for a in axes}) if axes else list(range(len(dims)))
    moved, rows, cols = to_last(lw, x, dims, reduce)
    out = lw.alloc((rows,), "f32")
    lw.dispatch("reduce_rows", [moved, out], [rows, cols], {"OP": REDUCE[op.name]})
    return [lw.view(out, shape(op.results[0]) or (1,))]


@rule("aten.softmax", "aten.log_softmax")
def lower_softmax(lw: Lowering, op: Operation) -> Sequence[Buf]:
    dims = shape(op.operands[0])
    x = lw.buffer(op.operands[0])
    d = norm_dim(integer(op.dim), len(dims))  # type: ignore[attr-defined]
    log = 1 if op.name == "aten.log_softmax" else 0
    moved, rows, cols = to_last(lw, x, dims, [d])
    out = lw.alloc((rows, cols), "f32")
    lw.dispatch("softmax_rows", [moved, out], [rows, cols], {"LOG": log})
    if d == len(dims) - 1:
        return [lw.view(out, dims)]
    perm_dims = [dims[i] for i in range(len(dims)) if i != d] + [dims[d]]
    # move the softmax dim back from last to d
    back = list(range(len(dims) - 1))
    back.insert(d, len(dims) - 1)
    strides = row_major(perm_dims)
    return [copy_strided(lw, out, dims, [strides[p] for p in back])]


@rule("aten.layer_norm")
def lower_layer_norm(lw: Lowering, op: Operation) -> Sequence[Buf]:
    dims = shape(op.operands[0])
    norm = ints(op.normalized_shape)  # type: ignore[attr-defined]
    cols = numel(norm)
    rows = numel(dims) // cols
    x = lw.buffer(op.operands[0])
    weight = op.weight  # type: ignore[attr-defined]
    bias = op.bias  # type: ignore[attr-defined]
    ones = np.ones(cols, np.float32)
    w = lw.buffer(weight) if weight is not None else lw.constant(ones, "f32")
    b = lw.buffer(bias) if bias is not None else lw.constant(np.zeros(cols, np.float32), "f32")
    out = lw.alloc(dims, "f32")
    eps = real(op.eps, 1e-5)  # type: ignore[attr-defined]
    lw.dispatch("layer_norm_rows", [x, w, b, out], [rows, cols, eps])
    return [out]


# ----- linear algebra ----------------------------------------------------------------------


def matmul_nt(lw: Lowering, x: Buf, w: Buf, bias: Buf | None, m: int, n: int, k: int) -> Buf:
    """out [m, n] = x [m, k] @ w[n, k].T (+ bias)."""
    out = lw.alloc((m, n), "f32")
    lw.dispatch(
        "matmul",
        [x, w, bias if bias is not None else out, out],
        [m, n, k, 1, m * k, 0],
        {"TRANS_B": 1, "HAS_BIAS": int(bias is not None)},
    )
    return out


@rule("aten.linear")
def lower_linear(lw: Lowering, op: Operation) -> Sequence[Buf]:
    x_dims = shape(op.operands[0])
    n, k = shape(op.operands[1])
    m = numel(x_dims[:-1])
    x = lw.buffer(op.operands[0])
    w = lw.buffer(op.operands[1])
    bias = op.bias  # type: ignore[attr-defined]
    b = lw.buffer(bias) if bias is not None else None
    out = matmul_nt(lw, x, w, b, m, n, k)
    return [lw.view(out, shape(op.results[0]))]


@rule("aten.addmm")
def lower_addmm(lw: Lowering, op: Operation) -> Sequence[Buf]:
    """beta * input + alpha * (mat1 @ mat2) with beta = alpha = 1 and a row-vector
    input (GPT-2's Conv1D, nn.Linear traced as addmm): the matmul kernel's bias."""
    (m, k), (_, n) = shape(op.operands[1]), shape(op.operands[2])
    beta = op.beta.value.data if op.beta is not None else 1.0  # type: ignore[attr-defined]
    alpha = op.alpha.value.data if op.alpha is not None else 1.0  # type: ignore[attr-defined]
    bias_dims = shape(op.operands[0])
    if beta != 1.0 or alpha != 1.0 or numel(bias_dims) != n or (bias_dims and bias_dims[-1] != n):
        raise unsupported(
            op,
            f"addmm with beta={beta}, alpha={alpha} and a {list(bias_dims)} input",
            "use beta = alpha = 1 and a bias of shape [N] (or write mm + add)",
        )
    a = lw.buffer(op.operands[1])
    b = lw.buffer(op.operands[2])
    bias = lw.buffer(op.operands[0])
    out = lw.alloc((m, n), "f32")
    lw.dispatch("matmul", [a, b, bias, out], [m, n, k, 1, 0, 0], {"TRANS_B": 0, "HAS_BIAS": 1})
    return [out]


@rule("aten.matmul")
def lower_matmul(lw: Lowering, op: Operation) -> Sequence[Buf]:
    a_dims, b_dims = shape(op.operands[0]), shape(op.operands[1])
    if len(a_dims) < 2 or len(b_dims) < 2:
        raise unsupported(op, "matmul of vectors", "unsqueeze the operands to matrices")
    m, k = a_dims[-2:]
    n = b_dims[-1]
    out_dims = shape(op.results[0])
    batch_dims = out_dims[:-2]
    batch = numel(batch_dims)
    a = lw.buffer(op.operands[0])
    b = lw.buffer(op.operands[1])
    if numel(a_dims[:-2]) not in (1, batch):
        a = copy_strided(lw, a, (*batch_dims, m, k), broadcast_strides(a_dims, (*batch_dims, m, k)))
    if numel(b_dims[:-2]) not in (1, batch):
        b = copy_strided(lw, b, (*batch_dims, k, n), broadcast_strides(b_dims, (*batch_dims, k, n)))
    a_bs = 0 if numel(a_dims[:-2]) == 1 else m * k
    b_bs = 0 if numel(b_dims[:-2]) == 1 else k * n
    out = lw.alloc(out_dims, "f32")
    lw.dispatch(
        "matmul", [a, b, out, out], [m, n, k, batch, a_bs, b_bs], {"TRANS_B": 0, "HAS_BIAS": 0}
    )
    return [out]


@rule("aten.conv2d")
def lower_conv2d(lw: Lowering, op: Operation) -> Sequence[Buf]:
    n, c, h, w = shape(op.operands[0])
    oc, _, kh, kw = shape(op.operands[1])
    _, _, oh, ow = shape(op.results[0])
    x = lw.buffer(op.operands[0])
    weight = lw.buffer(op.operands[1])
    bias = op.bias  # type: ignore[attr-defined]
    b = lw.buffer(bias) if bias is not None else None
    (sh, sw), (ph, pw), (dh, dw) = (
        ints(op.stride),
        ints(op.padding),
        ints(op.dilation),  # type: ignore[attr-defined]
    )
    groups = integer(op.groups, 1)  # type: ignore[attr-defined]
    out = lw.alloc((n, oc, oh, ow), "f32")
    lw.dispatch(
        "conv2d",
        [x, weight, b if b is not None else out, out],
        [n, c, h, w, oc, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, groups],
        {"HAS_BIAS": int(b is not None)},
    )
    return [out]


@rule("aten.max_pool2d", "aten.avg_pool2d")
def lower_pool(lw: Lowering, op: Operation) -> Sequence[Buf]:
    dims = shape(op.operands[0])
    h, w = dims[-2:]
    oh, ow = shape(op.results[0])[-2:]
    planes = numel(dims[:-2])
    kh, kw = ints(op.kernel_size)  # type: ignore[attr-defined]
    stride = ints(op.stride) or (kh, kw)  # type: ignore[attr-defined]
    padding = ints(op.padding) or (0, 0)  # type: ignore[attr-defined]
    dilation = (1, 1)
    code = 1
    include_pad = 1
    divisor = 0
    if op.name == "aten.max_pool2d":
        code = 0
        dilation = ints(op.dilation) or (1, 1)  # type: ignore[attr-defined]
    else:
        include_pad = int(flag(op.count_include_pad, True))  # type: ignore[attr-defined]
        divisor = integer(op.divisor_override, 0)  # type: ignore[attr-defined]
    x = lw.buffer(op.operands[0])
    out = lw.alloc(shape(op.results[0]), "f32")
    lw.dispatch(
        "pool2d",
        [x, out],
        [
            planes,
            h,
            w,
            oh,
            ow,
            kh,
            kw,
            stride[0],
            stride[1],
            padding[0],
            padding[1],
            dilation[0],
            dilation[1],
            divisor,
        ],
        {"OP": code, "COUNT_INCLUDE_PAD": include_pad},
    )
    return [out]


@rule("aten.adaptive_avg_pool2d")
def lower_adaptive_pool(lw: Lowering, op: Operation) -> Sequence[Buf]:
    dims = shape(op.operands[0])
    oh, ow = shape(op.results[0])[-2:]
    x = lw.buffer(op.operands[0])
    if (oh, ow) == (1, 1):
        # torch computes a 1x1 adaptive average as `mean` over (H, W): same order here.
        out = lw.alloc((numel(dims[:-2]),), "f32")
        lw.dispatch("reduce_rows", [x, out], [numel(dims[:-2]), dims[-2] * dims[-1]], {"OP": 1})
        return [lw.view(out, shape(op.results[0]))]
    out = lw.alloc(shape(op.results[0]), "f32")
    lw.dispatch("adaptive_avg_pool2d", [x, out], [numel(dims[:-2]), dims[-2], dims[-1], oh, ow])
    return [out]


@rule("aten.embedding")
def lower_embedding(lw: Lowering, op: Operation) -> Sequence[Buf]:
    v, d = shape(op.operands[0])
    table = lw.buffer(op.operands[0])
    idx = lw.buffer(op.operands[1])
    count = numel(shape(op.operands[1]))
    out = lw.alloc(shape(op.results[0]), table.dtype)
    lw.dispatch("gather_rows", [table, idx, out], [count, d, v])
    return [out]


def _kv_heads(
    lw: Lowering, op: Operation, kv: Buf, dims: Sequence[int], bh: tuple[int, int]
) -> Buf:
    """k or v [B', H', S, E] in the query's [B, H] heads: as is when they match; a
    strided copy when B'/H' broadcast (size 1) or serve H / H' consecutive query
    heads each (`enable_gqa`: head h reads kv head h // (H / H'))."""
    b, h = bh
    if len(dims) != 4:
        raise unsupported(op, f"sdpa with a rank-{len(dims)} key/value", "reshape to 4-d")
    kb, kh, s, e = dims
    if (kb, kh) == (b, h):
        return kv
    gqa = flag(op.enable_gqa)  # type: ignore[attr-defined]
    if kb not in (1, b) or not (kh in (1, h) or (gqa and h % kh == 0)):
        raise unsupported(
            op, f"sdpa key/value heads {[kb, kh]} for query heads {[b, h]}", "expand k/v"
        )
    group = h // kh
    # [B, H', G, S, E] with stride 0 on G (and on B if broadcast), flattened to [B, H, S, E]
    strides = [0 if kb == 1 else kh * s * e, 0 if kh == 1 else s * e, 0, e, 1]
    return lw.view(copy_strided(lw, kv, (b, kh, group, s, e), strides), (b, h, s, e))


def _bool_mask_to_float(lw: Lowering, mask: Buf, dims: Sequence[int]) -> Buf:
    zero = lw.constant(np.zeros(1, np.float32), "f32")
    neg = lw.constant(np.full(1, -np.inf, np.float32), "f32")
    out = lw.alloc(tuple(dims), "f32")
    strides = [broadcast_strides(tuple(dims), tuple(dims)), [0] * len(dims), [0] * len(dims)]
    d, sc, sa, sb = pad6(tuple(dims), *strides)
    lw.dispatch("where", [mask, zero, neg, out], [numel(dims), *d, *sc, *sa, *sb])
    return out


@rule("aten.scaled_dot_product_attention")
def lower_sdpa(lw: Lowering, op: Operation) -> Sequence[Buf]:
    q_dims, k_dims, v_dims = (shape(v) for v in op.operands[:3])
    out_dims = shape(op.results[0])
    if len(q_dims) != 4 or len(out_dims) != 4 or q_dims[:-2] != out_dims[:-2]:
        raise unsupported(
            op, "sdpa whose query is broadcast or not 4-d", "reshape q to [B, H, L, E]"
        )
    b, h, l, e = q_dims
    s, ev = k_dims[-2], v_dims[-1]
    scale = op.scale.value.data if op.scale is not None else 1.0 / float(np.sqrt(e))  # type: ignore[attr-defined]
    q = lw.buffer(op.operands[0])
    k = _kv_heads(lw, op, lw.buffer(op.operands[1]), k_dims, (b, h))
    v = _kv_heads(lw, op, lw.buffer(op.operands[2]), v_dims, (b, h))
    mask_value = op.attn_mask  # type: ignore[attr-defined]
    mb = mh = ml = ms = 0
    if mask_value is not None:
        m_dims = shape(mask_value)
        mask = lw.buffer(mask_value)
        if mask.dtype != "f32":
            # A boolean mask keeps True positions: as torch does, turn it into an
            # additive float mask, where(mask, 0, -inf).
            mask = _bool_mask_to_float(lw, mask, m_dims or (1,))
        strides = broadcast_strides(m_dims, (b, h, l, s))
        mb, mh, ml, ms = strides
    else:
        mask = q
    out = lw.alloc((b, h, l, ev), "f32")
    causal = int(flag(op.is_causal))  # type: ignore[attr-defined]
    lw.dispatch(
        "sdpa",
        [q, k, v, mask, out],
        [b * h, h, l, s, e, ev, scale, mb, mh, ml, ms],
        {"HAS_MASK": int(mask_value is not None), "CAUSAL": causal},
    )
    return [out]


# ----- standalone quantization ------------------------------------------------------------


def _per_tensor(op: Operation, dims: Sequence[int]) -> None:
    block = tuple(op.block_size.get_values())  # type: ignore[attr-defined]
    if block != tuple(dims) and numel(dims) > 1:
        raise unsupported(
            op,
            f"run-time {op.name} with block size {list(block)} (only per-tensor runs as a "
            "standalone Vulkan kernel)",
            "fuse it into a qfused op (fuse-quant) or make the parameters constants",
        )


def _scalar(lw: Lowering, op: Operation, value: SSAValue, what: str) -> np.ndarray:
    found = lw.values[value]
    if isinstance(found, Buf):
        raise unsupported(op, f"a run-time {what}", "use compile-time quantization parameters")
    return np.asarray(found)


@rule("quant.quantize")
def lower_quantize(lw: Lowering, op: Operation) -> Sequence[Buf]:
    assert isinstance(op, quant.QuantizeOp)
    dims = shape(op.input)
    _per_tensor(op, dims)
    scale = _scalar(lw, op, op.scale, "scale")
    zp = _scalar(lw, op, op.zero_point, "zero point") if op.zero_point is not None else None
    inv = (np.asarray(1.0, scale.dtype) / scale).astype(np.float32).reshape(-1)[0]
    x = lw.buffer(op.input)
    out = lw.alloc(dims or (1,), "i32")
    lw.dispatch(
        "quantize_per_tensor",
        [x, out],
        [
            numel(dims),
            float(inv),
            int(zp.reshape(-1)[0]) if zp is not None else 0,
            op.qmin.value.data,
            op.qmax.value.data,
        ],
        {"ZP_BEFORE_ROUND": int(op.zero_point_before_rounding is not None)},
    )
    return [out]


@rule("quant.dequantize")
def lower_dequantize(lw: Lowering, op: Operation) -> Sequence[Buf]:
    assert isinstance(op, quant.DequantizeOp)
    dims = shape(op.input)
    _per_tensor(op, dims)
    scale = _scalar(lw, op, op.scale, "scale").astype(np.float32).reshape(-1)
    zp = None
    if op.zero_point is not None:
        zp = _scalar(lw, op, op.zero_point, "zero point").astype(np.int32).reshape(-1)
    x = lw.buffer(op.input)
    out = lw.alloc(dims or (1,), "f32")
    d4 = [1] * (4 - len(dims)) + list(dims or (1,))
    if len(d4) > 4:
        d4 = [1, 1, 1, numel(dims)]
    s = lw.constant(scale, "f32")
    z = lw.constant(zp, "i32") if zp is not None else s
    lw.dispatch(
        "dequantize",
        [x, s, z, out],
        [numel(dims), *d4, *d4, 0, 0, 0, 0, 0, 0],
        {"BITS": 32, "HAS_ZERO_POINT": int(zp is not None)},
    )
    return [out]


# (the fused quantized ops: qopt/lowering/vkc_fused.py)


# ----- more layers and shape ops ---------------------------------------------------------
# (each as a composition of the generic kernels: strided copies, fills, elementwise)

_ADD, _MUL, _NE, _XOR = 0, 2, 8, 19
_LOGICAL_NOT = 24


def _constant_of(lw: Lowering, op: Operation, value: SSAValue, what: str, remedy: str):
    found = lw.values[value]
    if isinstance(found, Buf):
        raise unsupported(op, f"{op.name} with a run-time {what}", remedy)
    return np.asarray(found)


@rule("aten.batch_norm")
def lower_batch_norm(lw: Lowering, op: Operation) -> Sequence[Buf | np.ndarray]:
    """Inference batch norm with constant statistics: y = x * alpha + beta per channel,
    alpha = weight / sqrt(var + eps) and beta = bias - mean * alpha computed now in f32,
    as the interpreter does (two f32 dispatches: mul, add)."""
    x_dims = shape(op.operands[0])
    remedy = "export the model in eval mode (constant running statistics)"
    mean = _constant_of(lw, op, op.running_mean, "running mean", remedy).astype(np.float32)  # type: ignore[attr-defined]
    var = _constant_of(lw, op, op.running_var, "running variance", remedy).astype(np.float32)  # type: ignore[attr-defined]
    eps = np.asarray(real(op.eps, 1e-5), np.float32)  # type: ignore[attr-defined]
    alpha = np.asarray(1, np.float32) / np.sqrt(var + eps)
    if op.weight is not None:  # type: ignore[attr-defined]
        alpha = alpha * _constant_of(lw, op, op.weight, "weight", remedy).astype(np.float32)  # type: ignore[attr-defined]
    beta = -mean * alpha
    if op.bias is not None:  # type: ignore[attr-defined]
        beta = beta + _constant_of(lw, op, op.bias, "bias", remedy).astype(np.float32)  # type: ignore[attr-defined]
    channel = (1, x_dims[1], *([1] * (len(x_dims) - 2)))
    x = same_dtype(lw, lw.buffer(op.operands[0]), "f32")
    a = lw.view(lw.constant(alpha.reshape(-1), "f32"), channel)
    b = lw.view(lw.constant(beta.reshape(-1), "f32"), channel)
    y = binary(lw, binary(lw, x, a, _MUL, x_dims, "f32"), b, _ADD, x_dims, "f32")
    stats = [np.empty(tuple(shape(r)), np.float32) for r in op.results[1:]]
    if any(r.uses for r in op.results[1:]):
        raise unsupported(op, "batch_norm statistics outputs", "use only the normalized output")
    return [y, *stats]


@rule("aten.constant_pad_nd")
def lower_constant_pad(lw: Lowering, op: Operation) -> Sequence[Buf]:
    """Fill the output with the pad value, then copy the input's kept region into it
    (negative pads crop)."""
    in_dims = shape(op.operands[0])
    out_dims = shape(op.results[0])
    if abi_dtype(op.results[0]) != "f32":
        raise unsupported(op, "constant_pad_nd of an integer tensor", "pad a float tensor")
    pads = list(ints(op.pad))  # type: ignore[attr-defined]
    before = [0] * len(in_dims)
    after = [0] * len(in_dims)
    for i in range(len(pads) // 2):
        d = len(in_dims) - 1 - i
        before[d], after[d] = pads[2 * i], pads[2 * i + 1]
    value = float(op.value.value.data)  # type: ignore[attr-defined]
    out = lw.alloc(out_dims, "f32")
    bits = int(np.asarray(value, np.float32).view(np.uint32))
    lw.dispatch("fill", [out], [numel(out_dims), bits, 0])
    lengths = [
        n - max(0, -lo) - max(0, -hi) for n, lo, hi in zip(in_dims, before, after, strict=True)
    ]
    if numel(lengths) == 0 or min(lengths) <= 0:
        return [out]
    src_strides, out_strides = row_major(in_dims), row_major(out_dims)
    src_offset = sum(max(0, -lo) * s for lo, s in zip(before, src_strides, strict=True))
    out_offset = sum(max(0, lo) * s for lo, s in zip(before, out_strides, strict=True))
    x = lw.buffer(op.operands[0])
    copy_strided(lw, x, lengths, src_strides, src_offset, out, out_strides, out_offset)
    return [out]


@rule("aten.stack")
def lower_stack(lw: Lowering, op: Operation) -> Sequence[Buf]:
    """cat of the inputs, each placed as a slice of size 1 along the new dim."""
    out_dims = shape(op.results[0])
    d = norm_dim(integer(op.dim), len(out_dims))  # type: ignore[attr-defined]
    piece = (*out_dims[:d], 1, *out_dims[d + 1 :])
    return [concat_into(lw, op, d, [(v, piece) for v in op.operands])]


@rule("aten.index_select")
def lower_index_select(lw: Lowering, op: Operation) -> Sequence[Buf]:
    """Constant indices: a gather of precomputed flat offsets (any dim); run-time
    indices on dim 0: gather_rows of whole rows."""
    dims = shape(op.operands[0]) or (1,)
    d = norm_dim(integer(op.dim), len(dims))  # type: ignore[attr-defined]
    x = lw.buffer(op.operands[0])
    out_dims = shape(op.results[0]) or (1,)
    out = lw.alloc(out_dims, x.dtype)
    found = lw.values[op.operands[1]]
    if not isinstance(found, Buf):
        index = np.asarray(found, np.int64).reshape(-1) % dims[d]
        offsets = np.take(np.arange(numel(dims), dtype=np.int64).reshape(dims), index, axis=d)
        idx = lw.constant(offsets.reshape(-1).astype(np.int32), "i32")
        lw.dispatch("gather_rows", [x, idx, out], [numel(out_dims), 1, numel(dims)])
        return [out]
    if d != 0:
        raise unsupported(
            op, f"index_select on dim {d} with run-time indices", "use dim 0 or constant indices"
        )
    count = numel(shape(op.operands[1]) or (1,))
    lw.dispatch("gather_rows", [x, found, out], [count, numel(dims[1:]), dims[0]])
    return [out]


def _as_bool(lw: Lowering, value: SSAValue) -> Buf:
    buf = lw.buffer(value)
    if str(value.type.get_element_type()) == "i1":  # type: ignore[attr-defined]
        return buf
    return unary(lw, buf, NONZERO, out_dtype="i32")


@rule("aten.logical_not")
def lower_logical_not(lw: Lowering, op: Operation) -> Sequence[Buf]:
    return [unary(lw, lw.buffer(op.operands[0]), _LOGICAL_NOT, out_dtype="i32")]


@rule("aten.bitwise_not")
def lower_bitwise_not(lw: Lowering, op: Operation) -> Sequence[Buf]:
    x = lw.buffer(op.operands[0])
    if str(op.operands[0].type.get_element_type()) == "i1":  # type: ignore[attr-defined]
        return [unary(lw, x, _LOGICAL_NOT, out_dtype="i32")]
    if x.dtype != "i32":
        raise unsupported(op, "bitwise_not of floats", "bitwise ops take integer or bool tensors")
    ones = lw.constant(np.full(1, -1, np.int32), "i32")
    return [binary(lw, x, ones, _XOR, x.shape, "i32")]


@rule("aten.logical_xor")
def lower_logical_xor(lw: Lowering, op: Operation) -> Sequence[Buf]:
    out_dims = shape(op.results[0]) or (1,)
    a, b = (_as_bool(lw, v) for v in op.operands)
    a = lw.view(a, shape(op.operands[0]) or (1,))
    b = lw.view(b, shape(op.operands[1]) or (1,))
    return [binary(lw, a, b, _NE, out_dims, "i32")]


@rule("aten.isnan")
def lower_isnan(lw: Lowering, op: Operation) -> Sequence[Buf]:
    x = lw.buffer(op.operands[0])
    return [binary(lw, x, x, _NE, x.shape, "i32")]  # NaN != NaN (integers: never)


@rule("aten.repeat")
def lower_repeat(lw: Lowering, op: Operation) -> Sequence[Buf]:
    """Tile: the output [r0*d0, r1*d1, ...] is the row-major copy of the view
    [r0, d0, r1, d1, ...] with stride 0 on every r (pairs with r = 1 collapse)."""
    reps = list(ints(op.repeats))  # type: ignore[attr-defined]
    in_dims = [1] * (len(reps) - len(shape(op.operands[0]))) + list(shape(op.operands[0]))
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
    x = lw.buffer(op.operands[0])
    out = copy_strided(lw, x, view_dims, view_strides)
    return [lw.view(out, shape(op.results[0]))]


@rule("aten.tril", "aten.triu")
def lower_triangular(lw: Lowering, op: Operation) -> Sequence[Buf]:
    """where(mask, x, 0) with the [H, W] mask of kept positions built now."""
    dims = shape(op.operands[0])
    h, w = dims[-2:]
    k = integer(op.diagonal, 0)  # type: ignore[attr-defined]
    offset = np.arange(w)[None, :] - np.arange(h)[:, None]
    keep = offset <= k if op.name == "aten.tril" else offset >= k
    mask = lw.view(lw.constant(keep.astype(np.int32).reshape(-1), "i32"), (h, w))
    x = lw.buffer(op.operands[0])
    zero = lw.constant(np.zeros(1, np.float32 if x.dtype == "f32" else np.int32), x.dtype)
    out = lw.alloc(dims, x.dtype)
    strides = [broadcast_strides((h, w), dims), row_major(dims), [0] * len(dims)]
    d, sc, sa, sb = pad6(dims, *strides)
    lw.dispatch("where", [mask, x, zero, out], [numel(dims), *d, *sc, *sa, *sb])
    return [out]


@rule("aten.pixel_shuffle")
def lower_pixel_shuffle(lw: Lowering, op: Operation) -> Sequence[Buf]:
    """out[n, c, h*r + i, w*r + j] = x[n, c*r*r + i*r + j, h, w]: one strided copy over
    (N, C, H, r, W, r)."""
    dims = shape(op.operands[0])
    r = integer(op.upscale_factor)  # type: ignore[attr-defined]
    c_in, h, w = dims[-3:]
    c = c_in // (r * r)
    n = numel(dims[:-3])
    src = [c_in * h * w, r * r * h * w, w, r * h * w, 1, h * w]
    x = lw.buffer(op.operands[0])
    out = copy_strided(lw, x, (n, c, h, r, w, r), src)
    return [lw.view(out, shape(op.results[0]))]


def _arg_reduce(lw: Lowering, op: Operation, dim: int | None, code: int) -> tuple[Buf, Buf, int]:
    """(input moved to [rows, cols], the i32 [rows] indices, rows) of reduce_rows
    argmax (4) / argmin (5) over `dim` (None: every element)."""
    dims = shape(op.operands[0]) or (1,)
    x = same_dtype(lw, lw.buffer(op.operands[0]), "f32")
    reduce = list(range(len(dims))) if dim is None else [norm_dim(dim, len(dims))]
    moved, rows, cols = to_last(lw, x, dims, reduce)
    index = lw.alloc((rows,), "i32")
    lw.dispatch("reduce_rows", [moved, index], [rows, cols], {"OP": code})
    return moved, index, rows


@rule("aten.argmax", "aten.argmin")
def lower_argmax(lw: Lowering, op: Operation) -> Sequence[Buf]:
    if abi_dtype(op.operands[0]) != "f32":
        raise unsupported(op, f"{op.name} of an integer tensor", "cast it to float first")
    dim = None if op.dim is None else integer(op.dim)  # type: ignore[attr-defined]
    _, index, _ = _arg_reduce(lw, op, dim, 4 if op.name == "aten.argmax" else 5)
    return [lw.view(index, shape(op.results[0]) or (1,))]


@rule("aten.max_dim", "aten.min_dim")
def lower_max_dim(lw: Lowering, op: Operation) -> Sequence[Buf]:
    if abi_dtype(op.operands[0]) != "f32":
        raise unsupported(op, f"{op.name} of an integer tensor", "cast it to float first")
    is_max = op.name == "aten.max_dim"
    moved, index, rows = _arg_reduce(lw, op, integer(op.dim), 4 if is_max else 5)  # type: ignore[attr-defined]
    cols = moved.numel // max(rows, 1)
    values = lw.alloc((rows,), "f32")
    # the value at the chosen index (so NaN and ties agree with the index)
    lw.dispatch(
        "gather_rows",
        [lw.view(moved, (rows * cols,)), _row_offsets(lw, index, rows, cols), values],
        [rows, 1, rows * cols],
    )
    out = shape(op.results[0]) or (1,)
    return [lw.view(values, out), lw.view(index, out)]


def _row_offsets(lw: Lowering, index: Buf, rows: int, cols: int) -> Buf:
    """index[r] + r * cols (flat offsets of each row's chosen element)."""
    base = lw.constant((np.arange(rows, dtype=np.int64) * cols).astype(np.int32), "i32")
    return binary(lw, index, base, _ADD, (rows,), "i32")


@rule("aten.var", "aten.std")
def lower_moment(lw: Lowering, op: Operation) -> Sequence[Buf]:
    """sum((x - mean)^2) / (N - correction) over the reduced dims (mean and sum in
    torch's summation order), then sqrt for std."""
    from qopt.dialects.aten.reduction import correction_of

    dims = shape(op.operands[0]) or (1,)
    x = same_dtype(lw, lw.buffer(op.operands[0]), "f32")
    axes = ints(op.dims)  # type: ignore[attr-defined]
    reduce = sorted({norm_dim(a, len(dims)) for a in axes}) if axes else list(range(len(dims)))
    moved, rows, cols = to_last(lw, x, dims, reduce)
    moved = lw.view(moved, (rows, cols))
    mean = lw.alloc((rows, 1), "f32")
    lw.dispatch("reduce_rows", [moved, mean], [rows, cols], {"OP": 1})
    centered = binary(lw, moved, mean, 1, (rows, cols), "f32")
    squares = binary(lw, centered, centered, _MUL, (rows, cols), "f32")
    total = lw.alloc((rows,), "f32")
    lw.dispatch("reduce_rows", [squares, total], [rows, cols], {"OP": 0})
    denom = lw.constant(np.full(1, max(0.0, cols - correction_of(op)), np.float32), "f32")  # type: ignore[arg-type]
    var = binary(lw, total, denom, 3, (rows,), "f32")
    if op.name == "aten.std":
        var = unary(lw, var, UNARY["aten.sqrt"])
    return [lw.view(var, shape(op.results[0]) or (1,))]


def _permute_by_offsets(lw: Lowering, op: Operation, offsets: np.ndarray) -> Buf:
    """A static data movement (flip, roll, ...) as one gather of compile-time flat
    source offsets (gather_rows with rows of one word)."""
    dims = shape(op.operands[0]) or (1,)
    x = lw.buffer(op.operands[0])
    out = lw.alloc(shape(op.results[0]) or (1,), x.dtype)
    idx = lw.constant(offsets.reshape(-1).astype(np.int32), "i32")
    lw.dispatch("gather_rows", [x, idx, out], [offsets.size, 1, numel(dims)])
    return out


@rule("aten.flip")
def lower_flip(lw: Lowering, op: Operation) -> Sequence[Buf]:
    dims = shape(op.operands[0]) or (1,)
    axes = tuple(norm_dim(d, len(dims)) for d in ints(op.dims))  # type: ignore[attr-defined]
    flat = np.arange(numel(dims), dtype=np.int64).reshape(dims)
    return [_permute_by_offsets(lw, op, np.flip(flat, axis=axes) if axes else flat)]


@rule("aten.roll")
def lower_roll(lw: Lowering, op: Operation) -> Sequence[Buf]:
    dims = shape(op.operands[0]) or (1,)
    shifts, axes = ints(op.shifts), ints(op.dims)  # type: ignore[attr-defined]
    flat = np.arange(numel(dims), dtype=np.int64).reshape(dims)
    if not axes:
        rolled = np.roll(flat.reshape(-1), shifts[0]).reshape(dims)
    else:
        rolled = np.roll(flat, tuple(shifts), axis=tuple(norm_dim(d, len(dims)) for d in axes))
    return [_permute_by_offsets(lw, op, rolled)]


@rule("aten.any", "aten.all")
def lower_any_all(lw: Lowering, op: Operation) -> Sequence[Buf]:
    """max (any) or min (all) of (x != 0) over the reduced dims, as 0/1."""
    dims = shape(op.operands[0]) or (1,)
    truth = unary(lw, lw.buffer(op.operands[0]), NONZERO, out_dtype="i32")
    as_float = unary(lw, truth, CAST_I2F, out_dtype="f32")
    axes = ints(op.dims)  # type: ignore[attr-defined]
    reduce = sorted({norm_dim(a, len(dims)) for a in axes}) if axes else list(range(len(dims)))
    moved, rows, cols = to_last(lw, as_float, dims, reduce)
    out = lw.alloc((rows,), "f32")
    lw.dispatch(
        "reduce_rows", [moved, out], [rows, cols], {"OP": 2 if op.name == "aten.any" else 3}
    )
    return [lw.view(unary(lw, out, CAST_F2I, out_dtype="i32"), shape(op.results[0]) or (1,))]


@rule("aten.max", "aten.min")
def lower_reduce_all(lw: Lowering, op: Operation) -> Sequence[Buf]:
    """torch.max(x) / torch.min(x): one row of every element."""
    x = lw.buffer(op.operands[0])
    if x.dtype != "f32":
        raise unsupported(op, f"{op.name} of an integer tensor", "cast it to float first")
    out = lw.alloc((1,), "f32")
    lw.dispatch("reduce_rows", [x, out], [1, x.numel], {"OP": 2 if op.name == "aten.max" else 3})
    return [lw.view(out, shape(op.results[0]) or (1,))]

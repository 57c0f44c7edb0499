"""convert-to-vkc rules of reductions and normalisation: the row kernels
(reduce_rows, softmax_rows, layer_norm_rows) over the last dim, with the reduced
dims moved last by a transposing copy when needed; batch norm, var / std and the
logical reductions as compositions of the generic kernels."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from qopt.dialects.aten import layers
from qopt.dialects.aten import reduction as rd
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.base import integer, ints, norm_dim, real
from qopt.dialects.tensors import numel, shape_of
from qopt.kernels.opcodes import BINARY_OPS, REDUCE_OPS
from qopt.lowering.convert_to_vkc.lowering import (
    Buf,
    Lowering,
    RuleTable,
    Value,
    abi_dtype,
    binary,
    copy_strided,
    dtype_code,
    pad6,
    row_major,
    same_dtype,
    unary,
    unsupported,
)

RULES = RuleTable()

REDUCE_NAMES: dict[type[rd.ReduceOp], str] = {
    rd.SumOp: "sum",
    rd.MeanOp: "mean",
    rd.AmaxOp: "max",
    rd.AminOp: "min",
}
"""The aten reductions that are one op of reduce_rows (REDUCE_OPS names)."""


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


def reduce_rows(lw: Lowering, x: Buf, out: Buf, rows: int, cols: int, op: str) -> None:
    """reduce_rows' op `op` (a REDUCE_OPS name) of [rows, cols] `x` into `out`."""
    lw.dispatch("reduce_rows", [x, out], [rows, cols], {"OP": REDUCE_OPS[op]})


@RULES(*REDUCE_NAMES)
def lower_reduce(lw: Lowering, op: rd.ReduceOp) -> Sequence[Buf]:
    dims = shape_of(op.input)
    x = lw.buffer(op.input)
    if x.dtype != "f32" or abi_dtype(op.result) != "f32":
        raise unsupported(op, "integer reductions are not supported on Vulkan", "cast to float")
    moved, rows, cols = to_last(lw, x, dims, op.axes())
    out = lw.alloc((rows,), "f32")
    reduce_rows(lw, moved, out, rows, cols, REDUCE_NAMES[type(op)])
    return [lw.view(out, shape_of(op.result) or (1,))]


@RULES(rd.SoftmaxOp, rd.LogSoftmaxOp)
def lower_softmax(lw: Lowering, op: rd.SoftmaxOp | rd.LogSoftmaxOp) -> Sequence[Buf]:
    safe = getattr(op, "safe", None)
    if safe is not None and safe.value.data:
        raise unsupported(
            op,
            "_safe_softmax (0, not NaN, for an all -inf slice) has no Vulkan kernel",
            "use softmax, or a mask that leaves a finite value in every slice",
        )
    dims = shape_of(op.input)
    x = lw.buffer(op.input)
    d = norm_dim(integer(op.dim), len(dims))
    log = 1 if isinstance(op, rd.LogSoftmaxOp) else 0
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


@RULES(layers.LayerNormOp)
def lower_layer_norm(lw: Lowering, op: layers.LayerNormOp) -> Sequence[Value]:
    """layer_norm_rows; native_layer_norm's mean / rstd outputs only when unused."""
    if any(r.uses for r in op.stats):
        raise unsupported(
            op,
            "the mean / rstd outputs of native_layer_norm have no Vulkan lowering",
            "use only the normalized output",
        )
    dims = shape_of(op.input)
    cols = numel(ints(op.normalized_shape))
    rows = numel(dims) // cols
    x = lw.buffer(op.input)
    ones = np.ones(cols, np.float32)
    w = lw.buffer(op.weight) if op.weight is not None else lw.constant(ones, "f32")
    b = (
        lw.buffer(op.bias)
        if op.bias is not None
        else lw.constant(np.zeros(cols, np.float32), "f32")
    )
    out = lw.alloc(dims, "f32")
    eps = real(op.eps, layers.DEFAULT_EPS)
    lw.dispatch("layer_norm_rows", [x, w, b, out], [rows, cols, eps])
    return [out, *(np.empty(tuple(shape_of(r)), np.float32) for r in op.stats)]


@RULES(layers.GroupNormOp)
def lower_group_norm(lw: Lowering, op: layers.GroupNormOp) -> Sequence[Value]:
    """Group norm: x `[N, C, *]` as `[N * G, C / G * prod(*)]` rows through
    layer_norm_rows (unit weight, zero bias), then `* weight` and `+ bias` per channel
    on the binary kernel. native_group_norm's mean / rstd outputs are not lowered."""
    if any(r.uses for r in op.stats):
        raise unsupported(op, "native_group_norm's mean / rstd outputs", "use only the output")
    dims = shape_of(op.input)
    groups = integer(op.num_groups)
    rows = dims[0] * groups
    cols = numel(dims) // rows
    x = same_dtype(lw, lw.buffer(op.input), "f32")
    ones = lw.constant(np.ones(cols, np.float32), "f32")
    zeros = lw.constant(np.zeros(cols, np.float32), "f32")
    y = lw.alloc(dims, "f32")
    eps = real(op.eps, layers.DEFAULT_EPS)
    lw.dispatch("layer_norm_rows", [x, ones, zeros, y], [rows, cols, eps])
    channel = (1, dims[1], *([1] * (len(dims) - 2)))
    for param, name in ((op.weight, "mul"), (op.bias, "add")):
        if param is not None:
            value = lw.view(same_dtype(lw, lw.buffer(param), "f32"), channel)
            y = binary(lw, y, value, name, dims, "f32")
    return [y, *(np.empty(tuple(shape_of(r)), np.float32) for r in op.stats)]


def _constant_of(
    lw: Lowering, op: layers.BatchNormOp, value: SSAValue, what: str, remedy: str
) -> np.ndarray:
    found = lw.values[value]
    if isinstance(found, Buf):
        raise unsupported(op, f"{op.name} with a run-time {what}", remedy)
    return np.asarray(found)


@RULES(layers.BatchNormOp)
def lower_batch_norm(lw: Lowering, op: layers.BatchNormOp) -> Sequence[Value]:
    """Inference batch norm with constant statistics: y = x * alpha + beta per channel,
    alpha = weight / sqrt(var + eps) and beta = bias - mean * alpha computed now in f32,
    as the interpreter does (two f32 dispatches: mul, add)."""
    x_dims = shape_of(op.input)
    remedy = "export the model in eval mode (constant running statistics)"
    mean = _constant_of(lw, op, op.running_mean, "running mean", remedy).astype(np.float32)
    var = _constant_of(lw, op, op.running_var, "running variance", remedy).astype(np.float32)
    eps = np.asarray(real(op.eps, layers.DEFAULT_EPS), np.float32)
    alpha = np.asarray(1, np.float32) / np.sqrt(var + eps)
    if op.weight is not None:
        alpha = alpha * _constant_of(lw, op, op.weight, "weight", remedy).astype(np.float32)
    beta = -mean * alpha
    if op.bias is not None:
        beta = beta + _constant_of(lw, op, op.bias, "bias", remedy).astype(np.float32)
    channel = (1, x_dims[1], *([1] * (len(x_dims) - 2)))
    x = same_dtype(lw, lw.buffer(op.input), "f32")
    a = lw.view(lw.constant(alpha.reshape(-1), "f32"), channel)
    b = lw.view(lw.constant(beta.reshape(-1), "f32"), channel)
    y = binary(lw, binary(lw, x, a, "mul", x_dims, "f32"), b, "add", x_dims, "f32")
    stats = [np.empty(tuple(shape_of(r)), np.float32) for r in op.results[1:]]
    if any(r.uses for r in op.results[1:]):
        raise unsupported(op, "batch_norm statistics outputs", "use only the normalized output")
    return [y, *stats]


def _arg_reduce(lw: Lowering, value: SSAValue, dim: int | None, op: str) -> tuple[Buf, Buf, int]:
    """(input moved to [rows, cols], the i32 [rows] indices, rows) of reduce_rows
    `op` (argmax / argmin) over `dim` (None: every element)."""
    dims = shape_of(value) or (1,)
    x = same_dtype(lw, lw.buffer(value), "f32")
    reduce = list(range(len(dims))) if dim is None else [norm_dim(dim, len(dims))]
    moved, rows, cols = to_last(lw, x, dims, reduce)
    index = lw.alloc((rows,), "i32")
    reduce_rows(lw, moved, index, rows, cols, op)
    return moved, index, rows


@RULES(rd.ArgmaxOp, rd.ArgminOp)
def lower_argmax(lw: Lowering, op: rd.ArgmaxOp | rd.ArgminOp) -> Sequence[Buf]:
    if abi_dtype(op.input) != "f32":
        raise unsupported(op, f"{op.name} of an integer tensor", "cast it to float first")
    dim = None if op.dim is None else integer(op.dim)
    arg = "argmax" if isinstance(op, rd.ArgmaxOp) else "argmin"
    _, index, _ = _arg_reduce(lw, op.input, dim, arg)
    return [lw.view(index, shape_of(op.result) or (1,))]


@RULES(rd.MaxDimOp, rd.MinDimOp)
def lower_max_dim(lw: Lowering, op: rd.MaxDimOp | rd.MinDimOp) -> Sequence[Buf]:
    if abi_dtype(op.input) != "f32":
        raise unsupported(op, f"{op.name} of an integer tensor", "cast it to float first")
    arg = "argmax" if isinstance(op, rd.MaxDimOp) else "argmin"
    moved, index, rows = _arg_reduce(lw, op.input, integer(op.dim), arg)
    cols = moved.numel // max(rows, 1)
    values = lw.alloc((rows,), "f32")
    # the value at the chosen index (so NaN and ties agree with the index)
    lw.dispatch(
        "gather_rows",
        [lw.view(moved, (rows * cols,)), _row_offsets(lw, index, rows, cols), values],
        [rows, 1, rows * cols],
    )
    out = shape_of(op.values) or (1,)
    return [lw.view(values, out), lw.view(index, out)]


def _row_offsets(lw: Lowering, index: Buf, rows: int, cols: int) -> Buf:
    """index[r] + r * cols (flat offsets of each row's chosen element)."""
    base = lw.constant((np.arange(rows, dtype=np.int64) * cols).astype(np.int32), "i32")
    return binary(lw, index, base, "add", (rows,), "i32")


@RULES(rd.VarOp, rd.StdOp)
def lower_moment(lw: Lowering, op: rd.VarOp | rd.StdOp) -> Sequence[Buf]:
    """sum((x - mean)^2) / (N - correction) over the reduced dims (mean and sum in
    torch's summation order), then sqrt for std."""
    dims = shape_of(op.input) or (1,)
    x = same_dtype(lw, lw.buffer(op.input), "f32")
    moved, rows, cols = to_last(lw, x, dims, op.axes())
    moved = lw.view(moved, (rows, cols))
    mean = lw.alloc((rows, 1), "f32")
    reduce_rows(lw, moved, mean, rows, cols, "mean")
    centered = binary(lw, moved, mean, "sub", (rows, cols), "f32")
    squares = binary(lw, centered, centered, "mul", (rows, cols), "f32")
    total = lw.alloc((rows,), "f32")
    reduce_rows(lw, squares, total, rows, cols, "sum")
    denom = lw.constant(np.full(1, max(0.0, cols - rd.correction_of(op)), np.float32), "f32")
    var = binary(lw, total, denom, "div", (rows,), "f32")
    if isinstance(op, rd.StdOp):
        var = unary(lw, var, "sqrt")
    return [lw.view(var, shape_of(op.result) or (1,))]


@RULES(rd.AnyOp, rd.AllOp)
def lower_any_all(lw: Lowering, op: rd.AnyOp | rd.AllOp) -> Sequence[Buf]:
    """max (any) or min (all) of (x != 0) over the reduced dims, as 0/1."""
    dims = shape_of(op.input)
    truth = unary(lw, lw.buffer(op.input), "to_bool", out_dtype="i32")
    as_float = unary(lw, truth, "cast_i32_f32", out_dtype="f32")
    moved, rows, cols = to_last(lw, as_float, dims, op.axes())
    out = lw.alloc((rows,), "f32")
    reduce_rows(lw, moved, out, rows, cols, "max" if isinstance(op, rd.AnyOp) else "min")
    return [lw.view(unary(lw, out, "cast_f32_i32", out_dtype="i32"), shape_of(op.result) or (1,))]


@RULES(rd.MaxOp, rd.MinOp)
def lower_reduce_all(lw: Lowering, op: rd.MaxOp | rd.MinOp) -> Sequence[Buf]:
    """torch.max(x) / torch.min(x): one row of every element."""
    x = lw.buffer(op.input)
    if x.dtype != "f32":
        raise unsupported(op, f"{op.name} of an integer tensor", "cast it to float first")
    out = lw.alloc((1,), "f32")
    reduce_rows(lw, x, out, 1, x.numel, "max" if isinstance(op, rd.MaxOp) else "min")
    return [lw.view(out, shape_of(op.result) or (1,))]


@RULES(sh.CumsumOp)
def lower_cumsum(lw: Lowering, op: sh.CumsumOp) -> Sequence[Buf]:
    """`cumsum(x, dim)` as a Hillis-Steele scan of the generic kernels: for s = 1, 2,
    4, ... < n, `y[.., s:, ..] += y[.., :n-s, ..]` (a copy of y, a binary add of two
    offset windows of y, the sum copied into the copy's window). Integers add
    exactly (as i32, the ABI's integer; RoBERTa's position ids from the padding
    mask); floats add in the scan's order, not torch's sequential double sum."""
    dims = list(shape_of(op.input)) or [1]
    dtype = abi_dtype(op.result)
    y = same_dtype(lw, lw.buffer(op.input), dtype)
    if not shape_of(op.input) or numel(dims) == 0:
        return [copy_strided(lw, y, dims, row_major(dims))]
    d = norm_dim(integer(op.dim), len(dims))
    n, strides = dims[d], row_major(dims)
    s = 1
    while s < n:
        part = [n - s if i == d else k for i, k in enumerate(dims)]
        total = lw.alloc(part, dtype)
        pd, sa, sb = pad6(part, strides, strides)
        push = [numel(part), *pd, *sa, *sb, s * strides[d], 0, 1.0]
        spec = {"OP": BINARY_OPS["add"], "DTYPE": dtype_code(dtype)}
        lw.dispatch("binary", [y, y, total], push, spec)
        nxt = copy_strided(lw, y, dims, strides)
        copy_strided(lw, total, part, row_major(part), 0, nxt, strides, s * strides[d])
        y, s = nxt, 2 * s
    return [y]

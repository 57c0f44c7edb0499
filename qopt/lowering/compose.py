"""Compositions: a form of an aten op a target has no rule for, written by the
lowering in aten ops the target has (issue 22).

A composition may also rewrite a form the target has into one it runs better: on
Vulkan, a repeat of the key/value heads written as unsqueeze + expand + view
(transformers' `repeat_kv` for grouped-query attention) becomes the
`repeat_interleave` that the sdpa rule reads in place (its heads grouped), so a decode
step no longer copies the whole KV cache once per query head.

The pass `compose{target=coreml|vulkan}` runs `compose(module, target)`; both
pipelines list it before their conversion (convert-to-vkc and convert-to-coreml, run
alone, run it first themselves): each op whose form the target lacks (a batched or scaled `addmm` on
Vulkan, `tril` on CoreML, ...) is replaced, in place, by an equivalent sequence of
aten ops at the same location; the lowering then lowers those. A composition that
does not apply returns None and the op stays (its rule lowers it, or refuses it).
Each is proven by tests/unit/lowering/test_compose.py: the interpreter gives the same
results before and after, and the targets match torch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    BoolAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten import indexing as ix
from qopt.dialects.aten import layers, nn
from qopt.dialects.aten import reduction as rd
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.base import DYNAMIC, flag, integer, ints, norm_dim
from qopt.dialects.tensors import elem_of, numel, shape_of
from qopt.dtypes import element_type, is_bool, is_float, is_int, numpy_dtype
from qopt.errors import QoptError

TARGETS = ("coreml", "vulkan")


class Emitter:
    """Builds a composition's ops before the op it replaces, at its location."""

    def __init__(self, op: Operation):
        self.op = op

    def emit(
        self,
        kind: type[Operation],
        operands: Sequence[SSAValue],
        result: Attribute | Sequence[Attribute],
        properties: dict[str, Attribute] | None = None,
    ) -> SSAValue:
        results = list(result) if isinstance(result, Sequence) else [result]
        new = kind.create(
            operands=list(operands), result_types=results, properties=properties or {}
        )
        new.location = self.op.location
        Rewriter.insert_op(new, InsertPoint.before(self.op))
        return new.results[0]

    def constant(self, array: np.ndarray) -> SSAValue:
        array = np.ascontiguousarray(array)
        type_ = TensorType(element_type(array.dtype), list(array.shape))
        value = DenseIntOrFPElementsAttr(type_, BytesAttr(array.tobytes()))
        new = arith.ConstantOp(value, type_)
        new.location = self.op.location
        Rewriter.insert_op(new, InsertPoint.before(self.op))
        return new.result

    def scalar(self, value: float, like: SSAValue) -> SSAValue:
        return self.constant(np.array(value, dtype=numpy_dtype(elem_of(like))))


def tensor(like: SSAValue | Attribute, shape: Sequence[int]) -> TensorType:
    element = elem_of(like) if isinstance(like, SSAValue) else like
    return TensorType(element, list(shape))


Composition = Callable[[Emitter, Any], Sequence[SSAValue] | None]


def _constant(value: SSAValue | None) -> bool:
    return value is None or isinstance(value.owner, arith.ConstantOp)


# ----- layout forms --------------------------------------------------------------------


def repeat_as_interleave(e: Emitter, op: sh.ViewOp) -> Sequence[SSAValue] | None:
    """`view(expand(unsqueeze(x, d)))` that repeats each slice of x along dim d - 1 `r`
    times in place, read only as sdpa keys or values (transformers' `repeat_kv`): the
    same values as `repeat_interleave(x, r, dim=d - 1)`, which sdpa reads without a
    copy. The expand must have no other reader (it would stay, and copy anyway)."""
    expand = op.input.owner
    if not isinstance(expand, sh.ExpandOp) or not expand.result.has_one_use():
        return None
    unsqueeze = expand.input.owner
    if not isinstance(unsqueeze, sh.UnsqueezeOp):
        return None
    x = unsqueeze.input
    dims_x = shape_of(x)
    d = norm_dim(integer(unsqueeze.dim), len(dims_x) + 1)
    grown = shape_of(expand.result)
    if d == 0 or list(grown[:d]) != list(dims_x[:d]) or list(grown[d + 1 :]) != list(dims_x[d:]):
        return None
    r = grown[d]
    merged = [*dims_x[: d - 1], dims_x[d - 1] * r, *dims_x[d:]]
    if r < 1 or list(shape_of(op.result)) != merged:
        return None
    uses = list(op.result.uses)
    if not uses or not all(
        isinstance(use.operation, layers.ScaledDotProductAttentionOp) and use.index in (1, 2)
        for use in uses
    ):
        return None
    props: dict[str, Attribute] = {
        "repeats": IntegerAttr(r, i64),
        "dim": IntegerAttr(d - 1, i64),
    }
    return [e.emit(sh.RepeatInterleaveOp, [x], op.result.type, props)]


# ----- matmul forms --------------------------------------------------------------------


def addmm_as_matmul(e: Emitter, op: nn.AddmmOp) -> Sequence[SSAValue] | None:
    """`beta * input + alpha * (mat1 @ mat2)`: a matmul, scalings and an add (the
    Vulkan matmul kernel fuses only a row-vector bias of a 2-D product, unscaled)."""
    a, b = shape_of(op.mat1), shape_of(op.mat2)
    n = b[-1]
    beta = op.beta.value.data if op.beta is not None else 1.0
    alpha = op.alpha.value.data if op.alpha is not None else 1.0
    bias = shape_of(op.input)
    if (
        len(a) == 2
        and beta == 1.0
        and alpha == 1.0
        and numel(bias) == n
        and (not bias or bias[-1] == n)
    ):
        return None  # the kernel's own form
    result = op.result.type
    product = e.emit(nn.MatmulOp, [op.mat1, op.mat2], result)
    if alpha != 1.0:
        product = e.emit(ew.MulOp, [product, e.scalar(alpha, product)], result)
    if beta == 0.0:  # torch ignores input then (NaN and inf in it included)
        return [product]
    addend = op.input
    if beta != 1.0:
        addend = e.emit(ew.MulOp, [addend, e.scalar(beta, addend)], addend.type)
    return [e.emit(ew.AddOp, [addend, product], result)]


# ----- triangles and differences ---------------------------------------------------------


def triangle_as_where(e: Emitter, op: sh.TrilOp | sh.TriuOp) -> Sequence[SSAValue]:
    """`tril` / `triu`: the input where a constant triangular mask holds, else 0."""
    shape = shape_of(op.input)
    rows, cols = shape[-2:]
    diagonal = integer(op.diagonal, 0)
    i = np.arange(rows).reshape(-1, 1)
    j = np.arange(cols).reshape(1, -1)
    mask = j - i <= diagonal if isinstance(op, sh.TrilOp) else j - i >= diagonal
    zero = np.zeros((), numpy_dtype(elem_of(op.input)))
    return [e.emit(ew.WhereOp, [e.constant(mask), op.input, e.constant(zero)], op.result.type)]


def diff_as_slices(e: Emitter, op: sh.DiffOp) -> Sequence[SSAValue] | None:
    """`diff(x, n, dim)`: `n` times `x[1:] - x[:-1]` along dim (`!=` for bools)."""
    x = op.input
    rank = len(shape_of(x))
    d = norm_dim(integer(op.dim), rank)
    if integer(op.n) >= shape_of(x)[d]:
        return None  # an empty result: the rule's (a constant)
    for _ in range(integer(op.n)):
        shape = list(shape_of(x))
        shape[d] -= 1
        part = tensor(x, shape)

        def window(start: int, end: int, source: SSAValue = x, part: TensorType = part) -> SSAValue:
            return e.emit(
                sh.SliceOp,
                [source],
                part,
                {
                    "dim": IntegerAttr(d, i64),
                    "start": IntegerAttr(start, i64),
                    "end": IntegerAttr(end, i64),
                    "step": IntegerAttr(1, i64),
                },
            )

        later, earlier = window(1, shape[d] + 1), window(0, shape[d])
        kind = ew.NeOp if is_bool(elem_of(x)) else ew.SubOp
        x = e.emit(kind, [later, earlier], part)
    return [x]


# ----- reductions ---------------------------------------------------------------------------


def _reduce_props(dims: Sequence[int], keepdim: bool) -> dict[str, Attribute]:
    return {
        "dims": DenseArrayBase.from_list(i64, list(dims)),
        "keepdim": BoolAttr.from_bool(keepdim),
    }


def logical_reduce_as_amax(e: Emitter, op: rd.AnyOp | rd.AllOp) -> Sequence[SSAValue] | None:
    """`any` / `all`: `amax` / `amin` of `x != 0` as int32, compared with 0."""
    shape = shape_of(op.input)
    dims = ints(op.dims) if op.dims is not None else tuple(range(len(shape)))
    axes = [norm_dim(d, len(shape)) for d in dims] if shape else []
    if any(shape[a] == 0 for a in axes) or numel(shape) == 0:
        return None  # an empty reduction: its identity, the rule's to refuse
    nonzero = e.emit(
        ew.NeOp, [op.input, e.scalar(0, op.input)], tensor(element_type(np.dtype(np.bool_)), shape)
    )
    as_int = e.emit(ew.CastOp, [nonzero], tensor(element_type(np.dtype(np.int32)), shape))
    reduced = shape_of(op.result)
    kind = rd.AmaxOp if isinstance(op, rd.AnyOp) else rd.AminOp
    extreme = e.emit(
        kind,
        [as_int],
        tensor(element_type(np.dtype(np.int32)), reduced),
        _reduce_props(axes, flag(op.keepdim)),
    )
    return [e.emit(ew.NeOp, [extreme, e.scalar(0, extreme)], op.result.type)]


def extreme_with_index(e: Emitter, op: rd.MaxDimOp | rd.MinDimOp) -> Sequence[SSAValue] | None:
    """`max(x, dim)` / `min(x, dim)`: `amax` / `amin` and `argmax` / `argmin` (the
    first extreme wins ties in both) of a float or integer input without NaN handling
    differences (an integer input; a float input's NaN makes both pick it)."""
    d = integer(op.dim)
    keep = flag(op.keepdim)
    values_kind = rd.AmaxOp if isinstance(op, rd.MaxDimOp) else rd.AminOp
    index_kind = rd.ArgmaxOp if isinstance(op, rd.MaxDimOp) else rd.ArgminOp
    if is_bool(elem_of(op.input)):
        return None
    values = e.emit(values_kind, [op.input], op.values.type, _reduce_props([d], keep))
    indices = e.emit(
        index_kind,
        [op.input],
        op.indices.type,
        {"dim": IntegerAttr(d, i64), "keepdim": BoolAttr.from_bool(keep)},
    )
    return [values, indices]


def extreme_as_amax(e: Emitter, op: rd.MaxOp | rd.MinOp) -> Sequence[SSAValue] | None:
    """`max(x)` / `min(x)` of every element: `amax` / `amin` over every dim."""
    shape = shape_of(op.input)
    if numel(shape) == 0 or is_bool(elem_of(op.input)):
        return None
    kind = rd.AmaxOp if isinstance(op, rd.MaxOp) else rd.AminOp
    return [e.emit(kind, [op.input], op.result.type, _reduce_props(range(len(shape)), False))]


def prod_as_products(e: Emitter, op: rd.ProdOp) -> Sequence[SSAValue] | None:
    """`prod` over dims: per dim, the two halves multiplied until one entry is left
    (the middle one of an odd size carried along by a `cat`), in the result's type;
    2 log2(n) elementwise ops per dim of size n."""
    shape = list(shape_of(op.input))
    if not shape or numel(shape) == 0 or is_bool(elem_of(op.result)):
        return None  # a 0-d or empty product: the rule's to refuse
    element = elem_of(op.result)
    x = op.input
    if elem_of(x) != element:
        x = e.emit(ew.CastOp, [x], tensor(element, shape))

    def window(source: SSAValue, axis: int, start: int, end: int) -> SSAValue:
        part = list(shape_of(source))
        part[axis] = end - start
        return e.emit(
            sh.SliceOp,
            [source],
            tensor(element, part),
            {
                "dim": IntegerAttr(axis, i64),
                "start": IntegerAttr(start, i64),
                "end": IntegerAttr(end, i64),
                "step": IntegerAttr(1, i64),
            },
        )

    for axis in op.axes():
        while (n := shape_of(x)[axis]) > 1:
            half = n // 2
            source = x
            low, high = window(source, axis, 0, half), window(source, axis, half, 2 * half)
            x = e.emit(ew.MulOp, [low, high], low.type)
            if n % 2:
                rest = window(source, axis, 2 * half, n)
                joined = list(shape_of(x))
                joined[axis] += 1
                x = e.emit(
                    sh.CatOp, [x, rest], tensor(element, joined), {"dim": IntegerAttr(axis, i64)}
                )
    return [e.emit(sh.ViewOp, [x], op.result.type)]


COUNT_EXACT = 1 << 24
"""float32 holds every integer up to 2^24: a count of that many booleans is exact."""


def bool_sum_in_float(e: Emitter, op: rd.SumOp) -> Sequence[SSAValue] | None:
    """A sum of booleans (a count: `count_nonzero`, a loss's number of targets) in
    float32, exact below 2^24 elements, cast back to the integer result."""
    if not is_bool(elem_of(op.input)) or numel(shape_of(op.input)) >= COUNT_EXACT:
        return None
    if is_float(elem_of(op.result)):
        return None
    shape = shape_of(op.input)
    f32 = element_type(np.dtype(np.float32))
    as_float = e.emit(ew.CastOp, [op.input], tensor(f32, shape))
    summed = e.emit(rd.SumOp, [as_float], tensor(f32, shape_of(op.result)), dict(op.properties))
    return [e.emit(ew.CastOp, [summed], op.result.type)]


# ----- normalization ------------------------------------------------------------------------


def batch_norm_as_arithmetic(e: Emitter, op: layers.BatchNormOp) -> Sequence[SSAValue] | None:
    """Inference batch norm whose statistics or affine parameters are run-time values
    (the targets fold constant ones into a scale and shift):
    `(x - mean) * rsqrt(var + eps) * weight + bias`, per channel (dim 1)."""
    if op.stats:
        return None
    if all(_constant(v) for v in (op.running_mean, op.running_var, op.weight, op.bias)):
        return None
    shape = shape_of(op.input)
    channel = [1, shape[1], *([1] * (len(shape) - 2))]
    eps = op.eps.value.data if op.eps is not None else 1e-5
    out = op.result.type

    def per_channel(v: SSAValue) -> SSAValue:
        return e.emit(sh.ViewOp, [v], tensor(v, channel))

    mean, var = per_channel(op.running_mean), per_channel(op.running_var)
    centered = e.emit(ew.SubOp, [op.input, mean], out)
    shifted = e.emit(ew.AddOp, [var, e.scalar(eps, var)], var.type)
    scale = e.emit(ew.RsqrtOp, [shifted], var.type)
    y = e.emit(ew.MulOp, [centered, scale], out)
    if op.weight is not None:
        y = e.emit(ew.MulOp, [y, per_channel(op.weight)], out)
    if op.bias is not None:
        y = e.emit(ew.AddOp, [y, per_channel(op.bias)], out)
    return [y]


# ----- sorting ------------------------------------------------------------------------------

SORT_PAIRS_LIMIT = 1 << 22
"""The most entries of the pairwise comparison tensor (the input's size times the sorted
dim's) a sort is composed with: beyond it the composition does not apply."""

FP16_EXACT = 2048
"""float16 (CoreML's default precision) holds every integer up to 2048: ranks and
positions counted in float are exact up to there. SORT_PAIRS_LIMIT keeps a sorted dim
at most 2048 long."""


def sort_as_ranks(e: Emitter, op: rd.SortOp) -> Sequence[SSAValue] | None:
    """`sort` / `topk` (stable; NaN above every number, as torch) by ranks, in ops
    both targets have: along the sorted dim of size n, entry i's rank is the number of
    entries j that come before it (`x[j] < x[i]`, or `>` descending, NaN counted as the
    largest; or equal with `j < i`), summed from an [n, n] comparison as float32 (exact
    below 2^24); output position p's index is the i whose rank is p (a sum of
    `where(rank == p, i, 0)`), its value `gather(x, dim, index)`. The order among equal
    entries is the input's (a stable sort's, as torch's `sort(stable=True)`; torch's
    `topk` leaves it unspecified). O(n^2) in the sorted dim: a comparison of more than
    SORT_PAIRS_LIMIT entries, a boolean input or an empty result is left to the rule."""
    x = op.input
    shape = list(shape_of(x))
    element = elem_of(x)
    if is_bool(element) or not shape or numel(shape) == 0:
        return None
    d = norm_dim(integer(op.dim), len(shape))
    n = shape[d]
    k = integer(op.k) if op.k is not None else n
    if k == 0 or numel(shape) * n > SORT_PAIRS_LIMIT or n > FP16_EXACT:
        return None
    descending = flag(op.descending)
    f32 = element_type(np.dtype(np.float32))
    bool_ = element_type(np.dtype(np.bool_))
    pair = [*shape[: d + 1], n, *shape[d + 1 :]]  # i at d, j at d + 1
    flags = tensor(bool_, pair)

    def at(value: SSAValue, axis: int) -> SSAValue:
        """`value` (sizes of the input, one of them size n along d) with a dim of 1
        inserted at `axis`."""
        dims = list(shape_of(value))
        dims.insert(axis, 1)
        return e.emit(sh.ViewOp, [value], tensor(value, dims))

    def between(kind: type[Operation], a: SSAValue, b: SSAValue) -> SSAValue:
        return e.emit(kind, [a, b], flags)

    xi, xj = at(x, d + 1), at(x, d)
    before = between(ew.GtOp if descending else ew.LtOp, xj, xi)
    same = between(ew.EqOp, xj, xi)
    if is_float(element):
        part = tensor(bool_, [*shape[: d + 1], 1, *shape[d + 1 :]])
        nan_i = e.emit(ew.NeOp, [xi, xi], part)
        nan_j = e.emit(ew.NeOp, [xj, xj], tensor(bool_, [*shape[:d], 1, *shape[d:]]))
        first, second = (nan_j, nan_i) if descending else (nan_i, nan_j)
        not_second = e.emit(ew.LogicalNotOp, [second], second.type)
        before = between(ew.LogicalOrOp, before, between(ew.LogicalAndOp, first, not_second))
        same = between(ew.LogicalOrOp, same, between(ew.LogicalAndOp, nan_i, nan_j))
    tail = [1] * (len(shape) - d - 1)
    earlier = np.arange(n).reshape(1, n) < np.arange(n).reshape(n, 1)  # [i, j]: j < i
    tie = between(ew.LogicalAndOp, same, e.constant(earlier.reshape(n, n, *tail)))
    before = between(ew.LogicalOrOp, before, tie)
    counts = e.emit(ew.CastOp, [before], tensor(f32, pair))
    rank = e.emit(rd.SumOp, [counts], tensor(f32, shape), _reduce_props([d + 1], False))
    # [p, i] pairs: position p at d, entry i at d + 1
    positions = np.arange(k, dtype=np.float32).reshape(k, 1, *tail)
    chosen_shape = [*shape[:d], k, n, *shape[d + 1 :]]
    chosen = e.emit(ew.EqOp, [at(rank, d), e.constant(positions)], tensor(bool_, chosen_shape))
    entries = e.constant(np.arange(n, dtype=np.float32).reshape(1, n, *tail))
    zero = e.constant(np.zeros((), np.float32))
    picked = e.emit(ew.WhereOp, [chosen, entries, zero], tensor(f32, chosen_shape))
    out = [*shape[:d], k, *shape[d + 1 :]]
    index_f = e.emit(rd.SumOp, [picked], tensor(f32, out), _reduce_props([d + 1], False))
    indices = e.emit(ew.CastOp, [index_f], op.indices.type)
    values = e.emit(ix.GatherOp, [x, indices], op.values.type, {"dim": IntegerAttr(d, i64)})
    return [values, indices]


# ----- accumulating writes ----------------------------------------------------------------


def index_add_as_sums(e: Emitter, op: ix.IndexPutOp) -> Sequence[SSAValue] | None:
    """`x[.., index, ..] += values` (`index_put` with `accumulate`, `index_add`) along
    one dim d with a 1-D index of q entries, of a float tensor: `x` plus, at each
    position p along d, the sum of the values whose index is p (negative ones counted
    from the end), over the [size, q] pairs `index == p` (O(size * q) along d;
    repeated indices add up, as torch's). Other forms are left to the rule."""
    if not op.is_accumulate() or len(op.indices) != 1 or not is_float(elem_of(op.input)):
        return None
    shape = list(shape_of(op.input))
    (d,) = ints(op.indexed_dims)
    (index,) = op.indices
    if len(shape_of(index)) != 1 or list(shape_of(op.values)) != list(op.indexed_shape()):
        return None
    size, q = shape[d], shape_of(index)[0]
    if numel(shape) * q > SORT_PAIRS_LIMIT or size > FP16_EXACT:
        return None  # (positions compared in float: exact under CoreML's float16 too)
    f32 = element_type(np.dtype(np.float32))
    bool_ = element_type(np.dtype(np.bool_))
    tail = [1] * (len(shape) - d - 1)
    at = e.emit(ew.CastOp, [index], tensor(f32, [q]))
    negative = e.emit(ew.LtOp, [at, e.constant(np.zeros((), np.float32))], tensor(bool_, [q]))
    wrapped = e.emit(ew.AddOp, [at, e.constant(np.array(size, np.float32))], at.type)
    at = e.emit(ew.WhereOp, [negative, wrapped, at], at.type)
    at = e.emit(sh.ViewOp, [at], tensor(f32, [1, q, *tail]))
    positions = e.constant(np.arange(size, dtype=np.float32).reshape(size, 1, *tail))
    hits = e.emit(ew.EqOp, [at, positions], tensor(bool_, [size, q, *tail]))
    spread = [*shape[:d], 1, q, *shape[d + 1 :]]
    values = e.emit(sh.ViewOp, [op.values], tensor(op.values, spread))
    pairs = [*shape[:d], size, q, *shape[d + 1 :]]
    zero = e.constant(np.zeros((), numpy_dtype(elem_of(op.input))))
    picked = e.emit(ew.WhereOp, [hits, values, zero], tensor(op.input, pairs))
    sums = e.emit(rd.SumOp, [picked], op.result.type, _reduce_props([d + 1], False))
    return [e.emit(ew.AddOp, [op.input, sums], op.result.type)]


# ----- integer bitwise operations -------------------------------------------------------


def _bit_width(element: Attribute) -> tuple[int, bool] | None:
    """(width, signed) of the integers a bitwise op works on where it computes in
    int32: int64 is int32 where it is lowered (Core ML has no int64); an unsigned
    type wider than 16 bits has values int32 does not hold (None)."""
    dtype = numpy_dtype(element)
    if dtype.kind == "i":
        return min(dtype.itemsize * 8, 32), True
    if dtype.kind == "u" and dtype.itemsize <= 2:
        return dtype.itemsize * 8, False
    return None


def bitwise_as_arithmetic(
    e: Emitter, op: ew.BitwiseAndOp | ew.BitwiseOrOp | ew.BitwiseXorOp | ew.BitwiseNotOp
) -> Sequence[SSAValue] | None:
    """`~`, `&`, `|`, `^` of integers (Core ML has logical ops on bools only) in exact
    integer arithmetic. `~x` is `-1 - x` (signed) or `(2^w - 1) - x` (unsigned of w
    bits), which never overflows (computed in int32 for the narrower types). A binary
    op computes in int32 on the operands broadcast and flattened to [n, 1]: the w - 1
    low bits of a signed w-bit value (the w bits of an unsigned one) are
    `q - 2 (q // 2)` with `q = x // [1, 2, .., 2^(w-2)]` (floor division: the two's
    complement bits of negative values too), combined per bit (`a b`, `max(a, b)`,
    `|a - b|`) and summed with their weights (at most 2^31 - 1); a signed result's sign
    bit is the sign bits (`x < 0`) combined as bools, adding -2^(w-1) where set (w = 32
    for int32 and int64, whose values Core ML holds in int32; sign extension commutes
    with the bitwise ops). Bools stay logical ops (the rule's)."""
    result = op.results[0]
    element = elem_of(result)
    if is_bool(element) or not all(is_int(elem_of(v)) or is_bool(elem_of(v)) for v in op.operands):
        return None
    width = _bit_width(element)
    if width is None:
        return None
    bits, signed = width
    # 0-d values computed as [1] (the composition's constants have one dim)
    shape = list(shape_of(result)) or [1]
    i32 = element_type(np.dtype(np.int32))

    def ranked(value: SSAValue) -> SSAValue:
        if shape_of(value):
            return value
        return e.emit(sh.ViewOp, [value], tensor(value, [1]))

    def finish(value: SSAValue) -> Sequence[SSAValue]:
        if elem_of(value) != element:
            value = e.emit(ew.CastOp, [value], tensor(element, shape_of(value)))
        if shape_of(result) != shape_of(value):
            value = e.emit(sh.ViewOp, [value], result.type)
        return [value]

    if isinstance(op, ew.BitwiseNotOp):
        top = -1 if signed else (1 << bits) - 1
        x = ranked(op.input)
        if elem_of(x) not in (i32, i64):  # Core ML's arithmetic takes int32
            x = e.emit(ew.CastOp, [x], tensor(i32, shape))
        return finish(e.emit(ew.SubOp, [e.scalar(top, x), x], x.type))
    bool_ = element_type(np.dtype(np.bool_))
    n = numel(shape)
    low_bits = bits - 1 if signed else bits
    weights = e.constant((np.int32(1) << np.arange(low_bits, dtype=np.int32)).reshape(1, -1))
    pairs = tensor(i32, [n, low_bits])

    def as_i32(value: SSAValue) -> SSAValue:
        value = ranked(value)
        if elem_of(value) == i32:
            return value
        return e.emit(ew.CastOp, [value], tensor(i32, shape_of(value)))

    two = e.constant(np.array(2, np.int32))
    floor: dict[str, Attribute] = {"rounding_mode": StringAttr("floor")}

    def bits_of(value: SSAValue) -> SSAValue:
        if list(shape_of(value)) != shape:
            value = e.emit(sh.ExpandOp, [value], tensor(i32, shape))
        column = e.emit(sh.ViewOp, [value], tensor(i32, [n, 1]))
        q = e.emit(ew.DivOp, [column, weights], pairs, floor)
        half = e.emit(ew.DivOp, [q, two], pairs, floor)
        return e.emit(ew.SubOp, [q, e.emit(ew.MulOp, [half, two], pairs)], pairs)

    lhs, rhs = as_i32(op.lhs), as_i32(op.rhs)
    a, b = bits_of(lhs), bits_of(rhs)
    if isinstance(op, ew.BitwiseAndOp):
        both = e.emit(ew.MulOp, [a, b], pairs)
    elif isinstance(op, ew.BitwiseOrOp):
        both = e.emit(ew.MaximumOp, [a, b], pairs)
    else:
        both = e.emit(ew.AbsOp, [e.emit(ew.SubOp, [a, b], pairs)], pairs)
    weighted = e.emit(ew.MulOp, [both, weights], pairs)
    low = e.emit(rd.SumOp, [weighted], tensor(i32, [n]), _reduce_props([1], False))
    value = low if shape == [n] else e.emit(sh.ViewOp, [low], tensor(i32, shape))
    if signed:
        zero = e.constant(np.array(0, np.int32))

        def sign(v: SSAValue) -> SSAValue:
            return e.emit(ew.LtOp, [v, zero], tensor(bool_, shape_of(v)))

        kind = {
            ew.BitwiseAndOp: ew.LogicalAndOp,
            ew.BitwiseOrOp: ew.LogicalOrOp,
            ew.BitwiseXorOp: ew.LogicalXorOp,
        }[type(op)]
        negative = e.emit(kind, [sign(lhs), sign(rhs)], tensor(bool_, shape))
        lowest = e.emit(ew.AddOp, [value, e.scalar(-(1 << (bits - 1)), value)], value.type)
        value = e.emit(ew.WhereOp, [negative, lowest, value], value.type)
    return finish(value)


# ----- convolution forms --------------------------------------------------------------------


def _from_input(value: SSAValue) -> bool:
    """Whether `value` is computed from a function argument (a run-time value, not a
    constant the lowering folds or reads at compile time)."""
    seen: set[SSAValue] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if not isinstance(v, OpResult):
            return True
        stack.extend(v.owner.operands)
    return False


def dilated_weight(e: Emitter, op: nn.Conv2dOp) -> Sequence[SSAValue] | None:
    """A dilated convolution whose weight is a run-time value (coremltools dilates
    constant weights only): the weight dilated in the graph, each dim of dilation d
    viewed with a unit dim after it, padded there with d - 1 zeros, merged and cut to
    `d (k - 1) + 1` (rank 5 at most), then an undilated convolution; the products
    with the inserted zeros add +-0. The same result as torch's but where the input
    holds an infinity or NaN that torch's window skips (0 * inf is NaN)."""
    dilation = list(ints(op.dilation))
    w = op.weight
    kh, kw = shape_of(w)[2:]
    if all(d == 1 or k == 1 for d, k in zip(dilation, (kh, kw), strict=True)):
        return None
    if not _from_input(w):
        return None  # a constant weight: the target dilates it
    zero = FloatAttr(0.0, f64)

    def spread(value: SSAValue, axis: int, d: int) -> SSAValue:
        """`value` ([o, i, kh, kw]) dilated by d along axis 2 or 3."""
        dims = list(shape_of(value))
        k = dims[axis]
        unit = [*dims[: axis + 1], 1, *dims[axis + 1 :]]
        padded = [*dims[: axis + 1], d, *dims[axis + 1 :]]
        after = [0, 0] * (len(unit) - axis - 2) + [0, d - 1]
        v = e.emit(sh.ViewOp, [value], tensor(value, unit))
        v = e.emit(
            sh.ConstantPadNdOp,
            [v],
            tensor(value, padded),
            {"pad": DenseArrayBase.from_list(i64, after), "value": zero},
        )
        merged = [*dims[:axis], k * d, *dims[axis + 1 :]]
        v = e.emit(sh.ViewOp, [v], tensor(value, merged))
        cut = [*dims[:axis], d * (k - 1) + 1, *dims[axis + 1 :]]
        return e.emit(
            sh.SliceOp,
            [v],
            tensor(value, cut),
            {
                "dim": IntegerAttr(axis, i64),
                "start": IntegerAttr(0, i64),
                "end": IntegerAttr(cut[axis], i64),
                "step": IntegerAttr(1, i64),
            },
        )

    for axis, (d, k) in enumerate(zip(dilation, (kh, kw), strict=True)):
        if d != 1 and k != 1:
            w = spread(w, axis + 2, d)
    props = dict(op.properties)
    props["dilation"] = DenseArrayBase.from_list(i64, [1, 1])
    operands = [op.input, w] + ([op.bias] if op.bias is not None else [])
    return [e.emit(nn.Conv2dOp, operands, op.result.type, props)]


COMPOSITIONS: dict[str, dict[type[Operation], Composition]] = {
    "vulkan": {
        sh.ViewOp: repeat_as_interleave,
        nn.AddmmOp: addmm_as_matmul,
        rd.ProdOp: prod_as_products,
        sh.DiffOp: diff_as_slices,
        rd.SumOp: bool_sum_in_float,
        layers.BatchNormOp: batch_norm_as_arithmetic,
        rd.SortOp: sort_as_ranks,
        ix.IndexPutOp: index_add_as_sums,
    },
    "coreml": {
        rd.ProdOp: prod_as_products,
        sh.TrilOp: triangle_as_where,
        sh.TriuOp: triangle_as_where,
        sh.DiffOp: diff_as_slices,
        rd.AnyOp: logical_reduce_as_amax,
        rd.AllOp: logical_reduce_as_amax,
        rd.MaxDimOp: extreme_with_index,
        rd.MinDimOp: extreme_with_index,
        rd.MaxOp: extreme_as_amax,
        rd.MinOp: extreme_as_amax,
        layers.BatchNormOp: batch_norm_as_arithmetic,
        rd.SortOp: sort_as_ranks,
        ix.IndexPutOp: index_add_as_sums,
        ew.BitwiseAndOp: bitwise_as_arithmetic,
        ew.BitwiseOrOp: bitwise_as_arithmetic,
        ew.BitwiseXorOp: bitwise_as_arithmetic,
        ew.BitwiseNotOp: bitwise_as_arithmetic,
        nn.Conv2dOp: dilated_weight,
    },
}
"""Per target: the op types with a form the target's rules lack (or run worse), and
their composition."""


def compose(module: ModuleOp, target: str) -> list[str]:
    """Replace, in every function of `module`, each op with a form `target` lacks by
    its composition; the names of the ops composed (in program order)."""
    table = COMPOSITIONS[target]
    composed: list[str] = []
    for function in module.ops:
        if not isinstance(function, func.FuncOp):
            continue
        for op in list(function.body.walk()):
            composition = table.get(type(op))
            if composition is None or any(DYNAMIC in shape_of(r) for r in op.results):
                continue
            replacement = composition(Emitter(op), op)
            if replacement is None:
                continue
            inputs = [operand.owner for operand in op.operands]
            for old, new in zip(op.results, replacement, strict=True):
                old.replace_all_uses_with(new)
            Rewriter.erase_op(op)
            _erase_dead_layout(inputs)
            composed.append(op.name)
    return composed


_LAYOUT = (sh.ExpandOp, sh.UnsqueezeOp, sh.ViewOp)
"""The layout ops a composition may leave dead (`_erase_dead_layout`)."""


def _erase_dead_layout(owners: Sequence[object]) -> None:
    """Erase the layout ops (shape dialect: no side effects) a composition left without
    readers, and theirs in turn (an expand that became dead would still be lowered)."""
    pending = [o for o in owners if isinstance(o, Operation)]
    while pending:
        owner = pending.pop()
        if not isinstance(owner, _LAYOUT) or owner.parent is None:
            continue
        if any(result.uses for result in owner.results):
            continue
        pending.extend(o.owner for o in owner.operands if isinstance(o.owner, Operation))
        Rewriter.erase_op(owner)


@dataclass(frozen=True)
class ComposePass(ModulePass):
    """Each op whose form `target` lacks, as the aten ops of its composition (see the
    module docstring); the same values, so the program's meaning stays."""

    name = "compose"

    target: str = "vulkan"
    """The target whose missing forms are composed: coreml or vulkan."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.target not in TARGETS:
            raise QoptError(
                f"compose: target must be one of {', '.join(TARGETS)}, got '{self.target}'"
            )
        compose(op, self.target)


__all__ = ["COMPOSITIONS", "TARGETS", "ComposePass", "compose"]

"""aten ops of the indexing family: advanced indexing (`index`, `index_select`,
`gather`), windows at a run-time start (`dynamic_slice`), and the functional
updates that write into a copy of a tensor (`index_put`, `index_copy`,
`slice_scatter`, `select_scatter`, `dynamic_update_slice`).

As in the shape family (qopt/dialects/aten/shape.py, whose slice and select
windows the scatters share), structural arguments are properties, index tensors
and run-time starts are operands, and each verifier re-derives the result shape.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from qopt.dialects.aten.base import (
    AtenOp,
    Shape,
    broadcast_shapes,
    flag,
    integer,
    ints,
    is_symbolic,
    norm_dim,
    numel,
    shape_of,
    show,
)
from qopt.dialects.aten.shape import select_window, slice_window
from qopt.dialects.tensors import elem_of
from qopt.dtypes import is_bool, is_float


def index_shape(input: Shape, index_shapes: Sequence[Shape], indexed_dims: Sequence[int]) -> Shape:
    """Result shape of advanced indexing (torch/numpy rules).

    The index tensors broadcast to one shape B. If the indexed dims are
    adjacent, B replaces them in place; otherwise B comes first, followed by
    the remaining dims in order.
    """
    b = broadcast_shapes(*index_shapes)
    if b is None:
        raise VerifyException(f"index shapes {[list(s) for s in index_shapes]} do not broadcast")
    rest = [d for i, d in enumerate(input) if i not in indexed_dims]
    first = indexed_dims[0]
    adjacent = list(indexed_dims) == list(range(first, first + len(indexed_dims)))
    if adjacent:
        before = input[:first]
        after = input[first + len(indexed_dims) :]
        return (*before, *b, *after)
    return (*b, *rest)


def indexed_shape(
    op: AtenOp,
    input: SSAValue,
    indices: Sequence[SSAValue],
    indexed_dims: DenseArrayBase[IntegerType],
    what: str,
) -> Shape:
    """The shape of `input[indices]` where `indices[k]` indexes dim
    `indexed_dims[k]` (strictly increasing dims of `input`, the one `what` names);
    shared by `aten.index` and `aten.index_put`."""
    x = shape_of(input)
    dims = ints(indexed_dims)
    if len(dims) != len(indices) or not dims:
        raise op.fail(
            f"indexed_dims {list(dims)} must name one dim per index tensor ({len(indices)})"
        )
    if any(b <= a for a, b in itertools.pairwise(dims)) or not (0 <= dims[0] and dims[-1] < len(x)):
        raise op.fail(
            f"indexed_dims {list(dims)} must be increasing dims of the rank-{len(x)} {what}"
        )
    return index_shape(x, [shape_of(i) for i in indices], dims)


def _window_start(op: AtenOp, start: SSAValue, what: str = "start") -> None:
    """`start` (and a slice length) of the dynamic slices: a 0-d int64 or int32 tensor."""
    elem = elem_of(start)
    if shape_of(start) or elem not in (i64, i32):
        raise op.fail(f"{what} must be a 0-d int64 or int32 tensor, got {start.type}")


def _window_axis(op: AtenOp, input: SSAValue, dim: IntegerAttr) -> int:
    """The dim of `input` a dynamic slice (or its update) runs along."""
    x = shape_of(input)
    if not x:
        raise op.fail("cannot slice a 0-d tensor")
    return norm_dim(integer(dim), len(x))


# ----- indexing ----------------------------------------------------------------


@irdl_op_definition
class IndexOp(AtenOp):
    """Advanced indexing `input[..., i0, ..., i1, ...]` with integer index tensors.

    `indexed_dims[k]` (strictly increasing) is the input dim `indices[k]`
    indexes; the other dims are taken whole. The index tensors broadcast to one
    shape B; if the indexed dims are adjacent, B replaces them in place,
    otherwise B leads the result, followed by the remaining dims (the
    torch/numpy rule). Negative indices count from the end. Boolean masks have
    data-dependent shapes and are not representable.

    From `index.Tensor` (its list of optional tensors; a `None` is a dim taken
    whole). See external
    [documentation](https://numpy.org/doc/stable/user/basics.indexing.html#advanced-indexing).
    """

    name = "aten.index"
    input = operand_def(TensorType)
    indices = var_operand_def(TensorType)
    indexed_dims = prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)

    def check(self) -> None:
        for i, index in enumerate(self.indices):
            elem = elem_of(index)
            if is_bool(elem):
                raise self.fail(
                    f"index {i} is a boolean mask: masks give data-dependent shapes, "
                    "which qopt does not support"
                )
            if is_float(elem):
                raise self.fail(f"index {i} must be an integer tensor, got {index.type}")

    def expected_shapes(self) -> Sequence[Shape]:
        return [indexed_shape(self, self.input, self.indices, self.indexed_dims, "input")]


@irdl_op_definition
class IndexSelectOp(AtenOp):
    """Pick the entries `index` (a 0-d or 1-D integer tensor) along `dim`;
    the dim's size becomes the number of indices.

    See external [documentation](https://pytorch.org/docs/stable/generated/torch.index_select.html).
    """

    name = "aten.index_select"
    input = operand_def(TensorType)
    index = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        self.require_integer(self.index, "index")

    def expected_shapes(self) -> Sequence[Shape]:
        x, idx = list(shape_of(self.input)), shape_of(self.index)
        if len(idx) > 1:
            raise self.fail(f"index must be 0-d or 1-D, got {list(idx)}")
        if not x:
            return [()]
        d = norm_dim(integer(self.dim), len(x))
        x[d] = numel(idx)
        return [tuple(x)]


@irdl_op_definition
class GatherOp(AtenOp):
    """`result[i][j][k] = input[i][index[i][j][k]][k]` for `dim` = 1 (and so on):
    the result has the index's shape, which may be smaller than the input's in
    every dim but `dim`.

    See external [documentation](https://pytorch.org/docs/stable/generated/torch.gather.html).
    """

    name = "aten.gather"
    input = operand_def(TensorType)
    index = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        self.require_integer(self.index, "index")

    def expected_shapes(self) -> Sequence[Shape]:
        x, idx = shape_of(self.input), shape_of(self.index)
        if len(x) != len(idx) and max(len(x), len(idx)) > 1:
            raise self.fail(f"index rank {len(idx)} must equal input rank {len(x)}")
        d = norm_dim(integer(self.dim), len(x))
        for i, (a, b) in enumerate(zip(x, idx, strict=False)):
            if i != d and b > a:
                raise self.fail(f"index size {b} exceeds input size {a} in dim {i}")
        return [idx]


# ----- windows at a run-time start ---------------------------------------------


@irdl_op_definition
class DynamicSliceOp(AtenOp):
    """`input[..., start : start + length, ...]` on `dim` with a run-time `start`
    (a 0-d integer tensor): `x.narrow(dim, start, length)` where `start` is a SymInt
    (`.item()`), StableHLO's `dynamic_slice` on one dim.

    `length` is the result's size on `dim`; where that is `?` (a dynamic length,
    e.g. the sequence `Dim`), the `length` operand gives it at run time. `start`
    is taken as torch's narrow takes it: a negative start counts from the end
    (`start + size`); unlike StableHLO, nothing is clamped: a window outside the dim
    is an error at run time, as torch's narrow raises one.
    """

    name = "aten.dynamic_slice"
    input = operand_def(TensorType)
    start = operand_def(TensorType)
    length = opt_operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        if elem_of(self.input) != elem_of(self.result):
            raise self.fail("input and result element types must match")
        _window_start(self, self.start)
        if self.length is not None:
            _window_start(self, self.length, "length")

    def axis(self) -> int:
        return _window_axis(self, self.input, self.dim)

    def expected_shapes(self) -> Sequence[Shape]:
        x, y = shape_of(self.input), shape_of(self.result)
        d = self.axis()
        if len(y) != len(x):
            raise self.fail(f"result rank {len(y)} must equal input rank {len(x)}")
        n = y[d]
        dynamic = is_symbolic(n)
        if dynamic != (self.length is not None):
            raise self.fail(
                "a length operand is needed exactly when the result's dim is dynamic (?)"
            )
        if not dynamic and not is_symbolic(x[d]) and n > x[d]:
            raise self.fail(f"length {n} exceeds the size {x[d]} of dim {d}")
        return [(*x[:d], n, *x[d + 1 :])]


# ----- functional updates (scatters) -------------------------------------------


class ScatterOp(AtenOp):
    """Base of the functional updates: `self` (operand 0, `input`) with some
    entries replaced (or accumulated into); the result has `self`'s type."""

    def check(self) -> None:
        x, result = self.operands[0], self.results[0]
        if x.type != result.type:
            raise self.fail(f"result type {result.type} must equal the type of self {x.type}")

    def require_self_elem(self, value: SSAValue, what: str) -> None:
        """`value` (the written entries) has the element type of self."""
        x = self.operands[0]
        if elem_of(value) != elem_of(x):
            raise self.fail(f"{what} ({value.type}) must have the element type of self ({x.type})")

    def require_window(self, src: SSAValue, window: Shape, what: str) -> None:
        """`src` has the shape of the window it replaces."""
        if shape_of(src) != window:
            raise self.fail(
                f"src of shape {list(shape_of(src))} must have the {what} shape {list(window)}"
            )


@irdl_op_definition
class IndexPutOp(ScatterOp):
    """`self[..., i0, ..., i1, ...] = values` (or `+=` with `accumulate`) on a copy
    of `self`: the functional form of advanced-index assignment.

    `indexed_dims[k]` (strictly increasing) is the dim of `self` that
    `indices[k]` indexes; the other dims (the `None`s of torch's index list) are
    taken whole. The index tensors (int64 or int32) broadcast to one shape, which
    places the written entries like `aten.index` reads them; `values` (of
    `self`'s dtype) broadcasts to that indexing result's shape (it may have fewer
    dims, never more). Negative indices count from the end. With `accumulate`,
    repeated indices add up in index order; without it, torch leaves the result of
    repeated indices undefined and qopt writes the last one (numpy's rule).
    Boolean masks are rewritten by the importer (`aten.where`).

    From `index_put.default` (`x[:, :, pos] = v` in a functional graph). See
    external [documentation](https://pytorch.org/docs/stable/generated/torch.Tensor.index_put_.html).
    """

    name = "aten.index_put"
    input = operand_def(TensorType)
    indices = var_operand_def(TensorType)
    values = operand_def(TensorType)
    indexed_dims = prop_def(DenseArrayBase[IntegerType])
    accumulate = opt_prop_def(BoolAttr)
    result = result_def(TensorType)

    def is_accumulate(self) -> bool:
        return flag(self.accumulate)

    def check(self) -> None:
        super().check()
        for i, index in enumerate(self.indices):
            if elem_of(index) not in (i64, i32):
                raise self.fail(
                    f"index {i} must be an int64 or int32 tensor, got {index.type} "
                    "(boolean masks are rewritten by the importer)"
                )
        self.require_self_elem(self.values, "values")

    def indexed_shape(self) -> Shape:
        """The shape of `self[indices]`, which `values` broadcasts to."""
        return indexed_shape(self, self.input, self.indices, self.indexed_dims, "self")

    def expected_shapes(self) -> Sequence[Shape]:
        target = self.indexed_shape()
        values = shape_of(self.values)
        if len(values) > len(target) or broadcast_shapes(values, target) != target:
            raise self.fail(
                f"values of shape {list(values)} do not broadcast to the indexing result "
                f"shape {list(target)}"
            )
        return [shape_of(self.input)]


@irdl_op_definition
class IndexCopyOp(ScatterOp):
    """`self` with `self[..., index[i], ...] = source[..., i, ...]` along `dim`:
    `index` is a 0-d or 1-D int64 tensor of indices in `[0, size)` (torch accepts
    no negative ones here), `source` has `self`'s dtype and shape except that its
    `dim` has one entry per index (a 0-d `source` pairs with a single index).
    Repeated indices: torch leaves the result undefined; qopt writes the last.

    From `index_copy.default`. See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.Tensor.index_copy_.html).
    """

    name = "aten.index_copy"
    input = operand_def(TensorType)
    index = operand_def(TensorType)
    source = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        super().check()
        if elem_of(self.index) != i64:
            raise self.fail(f"index must be an int64 tensor, got {self.index.type}")
        self.require_self_elem(self.source, "source")

    def expected_shapes(self) -> Sequence[Shape]:
        x, idx, src = shape_of(self.input), shape_of(self.index), shape_of(self.source)
        d = norm_dim(integer(self.dim), len(x))
        if len(idx) > 1:
            raise self.fail(f"index must be 0-d or 1-D, got {list(idx)}")
        count = numel(idx)
        if not src and count != 1:
            raise self.fail(f"a 0-d source takes exactly one index, got {count}")
        if src and x and len(src) != len(x):
            raise self.fail(f"source rank {len(src)} must equal self rank {len(x)}")
        x_rest = [n for i, n in enumerate(x) if i != d]
        src_rest = [n for i, n in enumerate(src) if i != d]
        if x_rest != src_rest:
            raise self.fail(
                f"source shape {list(src)} must equal self shape {list(x)} outside dim {d}"
            )
        if src and src[d] != count:
            raise self.fail(f"source has {src[d]} entries along dim {d}, but {count} indices")
        return [x]


@irdl_op_definition
class SliceScatterOp(ScatterOp):
    """`self` with the slice `self[..., start:end:step, ...]` on `dim` replaced by
    `src` (converted to `self`'s dtype, as torch's copy does); the bounds are
    clamped as `aten.slice` clamps them, and `src` has the slice's shape exactly.

    From `slice_scatter.default` (`x[:, 3:5] = v` in a functional graph). See
    external [documentation](https://pytorch.org/docs/stable/generated/torch.slice_scatter.html).
    """

    name = "aten.slice_scatter"
    input = operand_def(TensorType)
    src = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    start = prop_def(IntegerAttr)
    end = prop_def(IntegerAttr)
    step = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def bounds(self) -> tuple[int, int, int, int]:
        """(dim, start, end, step) normalised and clamped for `self`."""
        return slice_window(self.input, self.dim, self.start, self.end, self.step)[0]

    def expected_shapes(self) -> Sequence[Shape]:
        window = slice_window(self.input, self.dim, self.start, self.end, self.step)[1]
        self.require_window(self.src, window, "slice's")
        return [shape_of(self.input)]


@irdl_op_definition
class DynamicUpdateSliceOp(ScatterOp):
    """`self` with `self[..., start : start + n, ...]` on `dim` replaced by `update`,
    where `n` is `update`'s size on `dim` (static or `?`) and `start` a run-time 0-d
    integer tensor: the write `x.narrow(dim, start, n).copy_(update)` functionalized,
    StableHLO's `dynamic_update_slice` on one dim. `update` has `self`'s element
    type and its shape outside `dim`. `start` is narrow's (negative: from the end);
    nothing is clamped: a window outside the dim is an error at run time (torch's
    narrow raises one).
    """

    name = "aten.dynamic_update_slice"
    input = operand_def(TensorType)
    update = operand_def(TensorType)
    start = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        super().check()
        self.require_self_elem(self.update, "update")
        _window_start(self, self.start)

    def axis(self) -> int:
        return _window_axis(self, self.input, self.dim)

    def expected_shapes(self) -> Sequence[Shape]:
        x, u = shape_of(self.input), shape_of(self.update)
        d = self.axis()
        outside = [(a, b) for i, (a, b) in enumerate(zip(x, u, strict=False)) if i != d]
        if len(u) != len(x) or any(a != b for a, b in outside):
            raise self.fail(
                f"update of shape {show(u)} must have self's shape {show(x)} outside dim {d}"
            )
        if not is_symbolic(x[d]) and not is_symbolic(u[d]) and u[d] > x[d]:
            raise self.fail(f"update has {u[d]} entries along dim {d} of size {x[d]}")
        return [x]


@irdl_op_definition
class SelectScatterOp(ScatterOp):
    """`self` with `self[..., index, ...]` on `dim` replaced by `src` (converted
    to `self`'s dtype), which has `self`'s shape without `dim`; a negative
    `index` counts from the end.

    From `select_scatter.default` (`x[:, 3] = v` in a functional graph). See
    external [documentation](https://pytorch.org/docs/stable/generated/torch.select_scatter.html).
    """

    name = "aten.select_scatter"
    input = operand_def(TensorType)
    src = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    index = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        window = select_window(self, self.input, self.dim, self.index)
        self.require_window(self.src, window, "selected")
        return [shape_of(self.input)]


OPS: list[type] = [
    IndexOp,
    IndexSelectOp,
    GatherOp,
    DynamicSliceOp,
    IndexPutOp,
    IndexCopyOp,
    SliceScatterOp,
    DynamicUpdateSliceOp,
    SelectScatterOp,
]

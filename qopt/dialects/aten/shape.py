"""aten ops of the shape family: views and layout changes, slicing (`slice`,
`select`), concatenation and splitting, padding, and tensor creation (`arange`,
`full`). Advanced indexing, dynamic slices and the scatters are the indexing
family (qopt/dialects/aten/indexing.py).

Structural arguments are properties; the result type carries the shape and
dtype torch computed, and each verifier re-derives the shape from the operand
shapes and properties. Data never moves through Python lists: index tensors are
operands, not properties.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    i64,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.utils.exceptions import VerifyException

from qopt.dialects.aten.base import (
    DYNAMIC,
    SYMBOLIC_SIZE,
    AtenOp,
    Shape,
    broadcast_shapes,
    integer,
    ints,
    norm_dim,
    numel,
    shape_of,
    show,
)
from qopt.dialects.tensors import elem_of
from qopt.dialects.tensors import shape_of as declared_shape
from qopt.dtypes import is_bool

INT64_MAX = 2**63 - 1


def slice_bounds(start: int, end: int, step: int, size: int) -> tuple[int, int, int]:
    """torch's clamping of a slice on a dim of `size`: (start, end, length).

    Negative bounds count from the end; both are clamped into `[0, size]` and
    `end` to at least `start` (so out-of-range slices are empty, never errors).
    """
    if step <= 0:
        raise VerifyException(f"slice step must be positive, got {step}")
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end, (end - start + step - 1) // step


def norm_dims(dims: Sequence[int], rank: int, what: str = "dims") -> tuple[int, ...]:
    """Wrap each dim; raise on a repeated dim."""
    out = tuple(norm_dim(d, rank) for d in dims)
    if len(set(out)) != len(out):
        raise VerifyException(f"{what} {list(dims)} repeat a dim")
    return out


def arange_length(start: float, end: float, step: float, int64: bool) -> int:
    """torch.arange's length: ceil((end - start) / step), in int64 for int64 results."""
    if step == 0:
        raise VerifyException("arange step must be nonzero")
    if int64:
        size = math.ceil((int(end) - int(start)) / int(step)) if int(step) else -1
    else:
        size = math.ceil((end - start) / step)
    if size < 0:
        raise VerifyException(
            f"arange bounds are inconsistent with the step sign: "
            f"start {start}, end {end}, step {step}"
        )
    return size


def scalar_value(attr: FloatAttr | IntegerAttr) -> float | int:
    value = attr.value.data
    return value if isinstance(value, int) else float(value)


# ----- views and layout --------------------------------------------------------


@irdl_op_definition
class ViewOp(AtenOp):
    """Reshape to the result type's shape, element order unchanged (row-major).

    From `view`, `reshape`, `_unsafe_view`, `view_as`, `flatten`, `unflatten`.
    See external [documentation](https://pytorch.org/docs/stable/generated/torch.Tensor.view.html).
    """

    name = "aten.view"
    input = operand_def(TensorType)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x, y = shape_of(self.input), shape_of(self.result)
        # Element counts compare when both sides have as many `?` dims: static ones
        # exactly; with `?` dims (the same symbols, a `?` of the result taking what
        # the others leave), one side's static part must divide the other's
        # (`[?, 4] -> [?]` flattens, `[?] -> [?, 4]` unflattens); `[?, ?] -> [?]`
        # (two symbols flattened) is not checked.
        if x.count(SYMBOLIC_SIZE) != y.count(SYMBOLIC_SIZE):
            return [y]
        if SYMBOLIC_SIZE in x:
            px = math.prod(d for d in x if d != SYMBOLIC_SIZE)
            py = math.prod(d for d in y if d != SYMBOLIC_SIZE)
            if px != py and (px == 0 or py == 0 or (px % py and py % px)):
                raise self.fail(f"cannot view {show(x)} as {show(y)}: the element counts differ")
        elif numel(x) != numel(y):
            raise self.fail(
                f"cannot view {list(x)} ({numel(x)} elements) as {list(y)} ({numel(y)} elements)"
            )
        return [y]

    def check(self) -> None:
        if elem_of(self.input) != elem_of(self.result):
            raise self.fail("input and result element types must match")


@irdl_op_definition
class UnsqueezeOp(AtenOp):
    """Insert a dim of size 1 at `dim` (in `[-rank-1, rank]`).

    See external [documentation](https://pytorch.org/docs/stable/generated/torch.unsqueeze.html).
    """

    name = "aten.unsqueeze"
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        d = norm_dim(integer(self.dim), len(x) + 1)
        return [(*x[:d], 1, *x[d:])]


@irdl_op_definition
class SqueezeOp(AtenOp):
    """Remove the listed dims, each of which must have size 1.

    torch's `squeeze` silently keeps listed dims whose size is not 1; the
    importer drops those from `dims`, so here every listed dim is removed.
    See external [documentation](https://pytorch.org/docs/stable/generated/torch.squeeze.html).
    """

    name = "aten.squeeze"
    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        dims = norm_dims(ints(self.dims), len(x))
        for d in dims:
            if x and x[d] != 1:
                raise self.fail(f"squeezed dim {d} has size {x[d]}, not 1")
        return [tuple(s for i, s in enumerate(x) if i not in dims)]


@irdl_op_definition
class PermuteOp(AtenOp):
    """Reorder the dims: result dim i is input dim `dims[i]`.

    From `permute`, `movedim`. See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.permute.html).
    """

    name = "aten.permute"
    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        dims = ints(self.dims)
        if len(dims) != len(x):
            raise self.fail(f"dims {list(dims)} must have one entry per input dim ({len(x)})")
        dims = norm_dims(dims, len(x))
        return [tuple(x[d] for d in dims)]


@irdl_op_definition
class TransposeOp(AtenOp):
    """Swap dims `dim0` and `dim1`.

    From `transpose.int`, `swapaxes`, `swapdims`, and `t` (dims 0 and 1; a
    no-op on tensors of rank < 2). See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.transpose.html).
    """

    name = "aten.transpose"
    input = operand_def(TensorType)
    dim0 = prop_def(IntegerAttr)
    dim1 = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x = list(shape_of(self.input))
        if not x:
            return [()]
        a, b = (
            norm_dim(integer(self.dim0), len(x)),
            norm_dim(integer(self.dim1), len(x)),
        )
        x[a], x[b] = x[b], x[a]
        return [tuple(x)]


@irdl_op_definition
class ExpandOp(AtenOp):
    """Broadcast the input to the result type's shape (numpy broadcasting rules:
    the input's dims align to the trailing result dims; size-1 dims repeat).

    From `expand` (entries of -1 are resolved from the input by the importer)
    and `expand_as`. See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.Tensor.expand.html).
    """

    name = "aten.expand"
    input = operand_def(TensorType)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x, y = shape_of(self.input), shape_of(self.result)
        if len(x) > len(y) or broadcast_shapes(x, y) != y:
            raise self.fail(f"input shape {list(x)} does not broadcast to {list(y)}")
        return [y]


@irdl_op_definition
class RepeatOp(AtenOp):
    """Tile the input `repeats[i]` times along dim i (`numpy.tile`); the input
    gets leading size-1 dims when `repeats` is longer than its rank.

    See external [documentation](https://pytorch.org/docs/stable/generated/torch.Tensor.repeat.html).
    """

    name = "aten.repeat"
    input = operand_def(TensorType)
    repeats = prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x, reps = shape_of(self.input), ints(self.repeats)
        if len(reps) < len(x):
            raise self.fail(f"repeats {list(reps)} must have at least {len(x)} entries")
        if any(r < 0 for r in reps):
            raise self.fail(f"repeats {list(reps)} must not be negative")
        x = (1,) * (len(reps) - len(x)) + x
        return [tuple(s * r for s, r in zip(x, reps, strict=True))]


@irdl_op_definition
class RepeatInterleaveOp(AtenOp):
    """Repeat each element `repeats` times in place along `dim` (result index i
    reads input index `i // repeats`); without `dim`, along the flattened input
    (a 1-D result), as torch does.

    From `repeat_interleave.self_int` (a constant number of repeats; the
    `output_size` hint is checked by the importer). See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.repeat_interleave.html).
    """

    name = "aten.repeat_interleave"
    input = operand_def(TensorType)
    repeats = prop_def(IntegerAttr)
    dim = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        if elem_of(self.input) != elem_of(self.result):
            raise self.fail("input and result element types must match")
        if integer(self.repeats) < 0:
            raise self.fail(f"repeats must be non-negative, got {integer(self.repeats)}")

    def expected_shapes(self) -> Sequence[Shape]:
        x, repeats = shape_of(self.input), integer(self.repeats)
        if self.dim is None:
            return [(numel(x) * repeats,)]
        if not x:
            raise self.fail("repeat_interleave of a 0-d tensor takes no dim")
        d = norm_dim(integer(self.dim), len(x))
        return [(*x[:d], x[d] * repeats, *x[d + 1 :])]


@irdl_op_definition
class FlipOp(AtenOp):
    """Reverse the order of elements along each of `dims`.

    See external [documentation](https://pytorch.org/docs/stable/generated/torch.flip.html).
    """

    name = "aten.flip"
    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        norm_dims(ints(self.dims), len(x))
        return [x]


@irdl_op_definition
class RollOp(AtenOp):
    """Rotate elements by `shifts[i]` along `dims[i]`; with empty `dims`, roll the
    flattened tensor by the single shift and restore the shape.

    See external [documentation](https://pytorch.org/docs/stable/generated/torch.roll.html).
    """

    name = "aten.roll"
    input = operand_def(TensorType)
    shifts = prop_def(DenseArrayBase[IntegerType])
    dims = prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        shifts, dims = ints(self.shifts), ints(self.dims)
        if not dims:
            if len(shifts) != 1:
                raise self.fail("without dims, roll takes exactly one shift")
        elif len(shifts) != len(dims):
            raise self.fail(f"shifts {list(shifts)} and dims {list(dims)} differ in length")
        for d in dims:
            norm_dim(d, len(x))
        return [x]


# ----- slicing ----------------------------------------------------------------


def slice_window(
    input: SSAValue, dim: IntegerAttr, start: IntegerAttr, end: IntegerAttr, step: IntegerAttr
) -> tuple[tuple[int, int, int, int], Shape]:
    """The slice `input[..., start:end:step, ...]` on `dim`: its (dim, start, end,
    step), normalised and clamped, and its shape; shared by `aten.slice` and
    `aten.slice_scatter`."""
    x = shape_of(input)
    if not x:
        raise VerifyException("cannot slice a 0-d tensor")
    d, stride = norm_dim(integer(dim), len(x)), integer(step, 1)
    first, last, length = slice_bounds(integer(start), integer(end), stride, x[d])
    return (d, first, last, stride), (*x[:d], length, *x[d + 1 :])


def select_window(op: AtenOp, input: SSAValue, dim: IntegerAttr, index: IntegerAttr) -> Shape:
    """The shape of `input[..., index, ...]` on `dim` (the dim removed), checking
    that `index` is in range; shared by `aten.select` and `aten.select_scatter`."""
    x = shape_of(input)
    if not x:
        raise op.fail("cannot select from a 0-d tensor")
    d = norm_dim(integer(dim), len(x))
    i = integer(index)
    if not -x[d] <= i < x[d]:
        raise op.fail(f"index {i} is out of range for dim {d} of size {x[d]}")
    return (*x[:d], *x[d + 1 :])


@irdl_op_definition
class SliceOp(AtenOp):
    """`input[..., start:end:step, ...]` on `dim`, with torch's clamping: negative
    bounds count from the end, out-of-range bounds clamp to `[0, size]`
    (`end` = 2^63-1 means "to the end"); `step` must be positive.

    From `slice.Tensor` and `narrow`. See external
    [documentation](https://pytorch.org/docs/stable/tensor_view.html).
    """

    name = "aten.slice"
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    start = prop_def(IntegerAttr)
    end = prop_def(IntegerAttr)
    step = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def bounds(self) -> tuple[int, int, int, int]:
        """(dim, start, end, step) normalised and clamped for this input."""
        return slice_window(self.input, self.dim, self.start, self.end, self.step)[0]

    def expected_shapes(self) -> Sequence[Shape]:
        return [slice_window(self.input, self.dim, self.start, self.end, self.step)[1]]


@irdl_op_definition
class SelectOp(AtenOp):
    """`input[..., index, ...]` on `dim` (removes the dim); negative `index`
    counts from the end. See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.select.html).
    """

    name = "aten.select"
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    index = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        return [select_window(self, self.input, self.dim, self.index)]


# ----- joining and splitting ---------------------------------------------------


@irdl_op_definition
class CatOp(AtenOp):
    """Concatenate the operands along `dim`; all other dims must match. As in
    torch, 1-D operands of size 0 are skipped. Operands are cast to the
    result's element type.

    See external [documentation](https://pytorch.org/docs/stable/generated/torch.cat.html).
    """

    name = "aten.cat"
    inputs = var_operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        shapes = [s for s in map(shape_of, self.inputs) if s != (0,)]
        if not shapes:
            return [(0,)] if self.inputs else [()]
        rank = len(shapes[0])
        d = norm_dim(integer(self.dim), rank)
        out = list(shapes[0])
        for s in shapes[1:]:
            if len(s) != rank or any(a != b for i, (a, b) in enumerate(zip(s, out)) if i != d):
                raise self.fail(
                    f"operand shapes {[list(s) for s in shapes]} differ outside dim {d}"
                )
            out[d] += s[d]
        return [tuple(out)]

    def check(self) -> None:
        if not self.inputs:
            raise self.fail("cat takes at least one operand")


@irdl_op_definition
class StackOp(AtenOp):
    """Stack same-shaped operands along a new dim `dim` (in `[-rank-1, rank]`).

    See external [documentation](https://pytorch.org/docs/stable/generated/torch.stack.html).
    """

    name = "aten.stack"
    inputs = var_operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        if not self.inputs:
            raise self.fail("stack takes at least one operand")
        shapes = [shape_of(v) for v in self.inputs]
        if any(s != shapes[0] for s in shapes):
            raise self.fail(f"operand shapes {[list(s) for s in shapes]} must all be equal")
        x = shapes[0]
        d = norm_dim(integer(self.dim), len(x) + 1)
        return [(*x[:d], len(shapes), *x[d:])]


@irdl_op_definition
class SplitOp(AtenOp):
    """Split along `dim` into consecutive pieces of `sizes` (which sum to the dim's
    size); one result per piece.

    From `split.Tensor`, `split_with_sizes`, `chunk`. See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.split.html).
    """

    name = "aten.split"
    input = operand_def(TensorType)
    sizes = prop_def(DenseArrayBase[IntegerType])
    dim = prop_def(IntegerAttr)
    outputs = var_result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        if not x:
            raise self.fail("cannot split a 0-d tensor")
        d = norm_dim(integer(self.dim), len(x))
        sizes = ints(self.sizes)
        if any(s < 0 for s in sizes) or sum(sizes) != x[d]:
            raise self.fail(f"split sizes {list(sizes)} do not add up to dim {d}'s size {x[d]}")
        return [(*x[:d], s, *x[d + 1 :]) for s in sizes]


# ----- triangular, padding, differences, scans ---------------------------------


class TriangularOp(AtenOp):
    """Base of `tril`/`triu`: a mask over the last two dims."""

    input = operand_def(TensorType)
    diagonal = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        if len(x) < 2:
            raise self.fail(f"input must have at least 2 dims, got {list(x)}")
        return [x]


@irdl_op_definition
class TrilOp(TriangularOp):
    """Keep the lower triangle of the last two dims (`j <= i + diagonal`), zero
    the rest. See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.tril.html).
    """

    name = "aten.tril"


@irdl_op_definition
class TriuOp(TriangularOp):
    """Keep the upper triangle of the last two dims (`j >= i + diagonal`), zero
    the rest. See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.triu.html).
    """

    name = "aten.triu"


@irdl_op_definition
class ConstantPadNdOp(AtenOp):
    """Pad with `value`: `pad` holds (before, after) pairs starting from the
    last dim; negative amounts crop.

    From `constant_pad_nd` and `pad` (mode "constant"). See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.nn.functional.pad.html).
    """

    name = "aten.constant_pad_nd"
    input = operand_def(TensorType)
    pad = prop_def(DenseArrayBase[IntegerType])
    value = prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x = list(shape_of(self.input))
        pad = ints(self.pad)
        if len(pad) % 2 or len(pad) // 2 > len(x):
            raise self.fail(
                f"pad {list(pad)} must hold (before, after) pairs for at most {len(x)} dims"
            )
        for i in range(len(pad) // 2):
            d = len(x) - 1 - i
            x[d] += pad[2 * i] + pad[2 * i + 1]
            if x[d] < 0:
                raise self.fail(f"pad {list(pad)} crops dim {d} below size 0")
        return [tuple(x)]


@irdl_op_definition
class DiffOp(AtenOp):
    """The `n`-th forward difference along `dim` (`x[1:] - x[:-1]`, or `!=` for
    booleans, applied `n` times); the dim shrinks by `n` (to at least 0).

    torch's `prepend`/`append` arguments are concatenated to the input by the
    importer (an `aten.cat`), as torch itself does. See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.diff.html).
    """

    name = "aten.diff"
    input = operand_def(TensorType)
    n = prop_def(IntegerAttr)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x = list(shape_of(self.input))
        if not x:
            raise self.fail("diff needs a tensor of at least 1 dim")
        if integer(self.n) < 0:
            raise self.fail(f"n must be non-negative, got {integer(self.n)}")
        d = norm_dim(integer(self.dim), len(x))
        x[d] = max(x[d] - integer(self.n), 0)
        return [tuple(x)]


@irdl_op_definition
class CumsumOp(AtenOp):
    """Inclusive prefix sum along `dim`, computed in the result's element type
    (torch promotes integer and bool inputs to int64 unless told otherwise).

    See external [documentation](https://pytorch.org/docs/stable/generated/torch.cumsum.html).
    """

    name = "aten.cumsum"
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        norm_dim(integer(self.dim), len(x))
        return [x]


# ----- creation ----------------------------------------------------------------


@irdl_op_definition
class ArangeOp(AtenOp):
    """`[start, start + step, ...)` up to `end` (exclusive), as a 1-D tensor of
    the result's element type: `ceil((end - start) / step)` values
    `start + i * step` (int64 results use integer arithmetic, as torch does).

    From `arange.default`, `arange.start`, `arange.start_step`. See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.arange.html).
    """

    name = "aten.arange"
    assembly_format = "attr-dict `:` type($result)"
    start = prop_def(FloatAttr | IntegerAttr)
    end = prop_def(FloatAttr | IntegerAttr)
    step = prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)

    def is_int64(self) -> bool:
        return elem_of(self.result) == i64

    def expected_shapes(self) -> Sequence[Shape]:
        start, end, step = (scalar_value(a) for a in (self.start, self.end, self.step))
        return [(arange_length(start, end, step, self.is_int64()),)]

    def check(self) -> None:
        if is_bool(elem_of(self.result)):
            raise self.fail("arange cannot produce a boolean tensor")


@irdl_op_definition
class FullOp(AtenOp):
    """A tensor of the result type's shape and dtype filled with `value`
    (truncated toward zero for integer results, `value != 0` for booleans).

    From `full`, `zeros`, `ones`, `scalar_tensor`, their `*_like` and `new_*`
    forms (the reference tensor only supplies the shape and dtype, which the
    result type already holds), and `empty` / `empty_like` (filled with 0:
    their contents are unspecified in torch). See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.full.html).
    """

    name = "aten.full"
    assembly_format = "attr-dict `:` type($result)"
    value = prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        if DYNAMIC in declared_shape(self.result):  # its type is its only size
            raise self.fail(
                f"its result {self.result.type} has a `?` dim, which nothing decides: a full "
                "of a run-time size is a full at the bound, then a dynamic_slice"
            )


OPS: list[type] = [
    ViewOp,
    UnsqueezeOp,
    SqueezeOp,
    PermuteOp,
    TransposeOp,
    ExpandOp,
    RepeatOp,
    RepeatInterleaveOp,
    FlipOp,
    RollOp,
    SliceOp,
    SelectOp,
    CatOp,
    StackOp,
    SplitOp,
    TrilOp,
    TriuOp,
    ConstantPadNdOp,
    DiffOp,
    CumsumOp,
    ArangeOp,
    FullOp,
]

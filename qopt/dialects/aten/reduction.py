"""aten reduction ops: sum/mean/prod/amax/amin/any/all over a set of dims, max/min
with indices, argmax/argmin, var/std, softmax and log_softmax.

Reductions over a dim set take `dims` (absent or empty = every dim, as torch's
`dim=[]`/`dim=None`) and `keepdim` (reduced dims kept with size 1). The result's
element type is torch's: `sum`/`prod` of integers or booleans give `i64`,
`any`/`all` give `i1` (`ui8` for a `ui8` input), indices are `i64`.
Float results are computed in float32 (float64 for a float64 result) and cast.

See external [documentation](https://pytorch.org/docs/stable/torch.html#reduction-ops).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
)
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from qopt.dialects.aten.base import AtenOp, Shape, flag, integer, ints, norm_dim, real, shape_of
from qopt.dialects.tensors import elem_of
from qopt.dtypes import is_bool


def reduced_dims(dims: Sequence[int], rank: int) -> tuple[int, ...]:
    """Normalised, sorted dims to reduce; empty `dims` means all of them."""
    if not dims:
        return tuple(range(rank))
    out = sorted(norm_dim(d, rank) for d in dims)
    if len(set(out)) != len(out):
        raise VerifyException(f"dims {list(dims)} name a dim more than once")
    return tuple(d for d in out if d < rank)


def reduced_shape(shape: Shape, dims: Sequence[int], keepdim: bool) -> Shape:
    """The shape after reducing `dims` (already normalised) of `shape`."""
    if keepdim:
        return tuple(1 if i in dims else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in dims)


class ReduceOp(AtenOp):
    """`result = reduce(input, dims)`; `dims` absent or empty reduces every dim."""

    input = operand_def(TensorType)
    dims = opt_prop_def(DenseArrayBase[IntegerType])
    keepdim = opt_prop_def(BoolAttr)
    result = result_def(TensorType)

    def axes(self) -> tuple[int, ...]:
        return reduced_dims(ints(self.dims), len(shape_of(self.input)))

    def expected_shapes(self) -> Sequence[Shape]:
        return [reduced_shape(shape_of(self.input), self.axes(), flag(self.keepdim))]


@irdl_op_definition
class SumOp(ReduceOp):
    """Sum over `dims` (`aten.sum.dim_IntList`, `aten.sum.default`)."""

    name = "aten.sum"


@irdl_op_definition
class MeanOp(ReduceOp):
    """Arithmetic mean over `dims` (`aten.mean.dim`, `aten.mean.default`); float only."""

    name = "aten.mean"

    def check(self) -> None:
        self.require_float(self.result, "result")


@irdl_op_definition
class ProdOp(ReduceOp):
    """Product over `dims` (`aten.prod.default`, `aten.prod.dim_int`)."""

    name = "aten.prod"


@irdl_op_definition
class AmaxOp(ReduceOp):
    """Maximum over `dims`; NaN propagates."""

    name = "aten.amax"

    def check(self) -> None:
        if elem_of(self.input) != elem_of(self.result):
            raise self.fail("result must have the input's element type")


@irdl_op_definition
class AminOp(ReduceOp):
    """Minimum over `dims`; NaN propagates."""

    name = "aten.amin"

    def check(self) -> None:
        if elem_of(self.input) != elem_of(self.result):
            raise self.fail("result must have the input's element type")


class LogicalReduceOp(ReduceOp):
    def check(self) -> None:
        elem = elem_of(self.result)
        if not is_bool(elem) and elem != elem_of(self.input):
            raise self.fail(f"result must be a boolean (i1) tensor, got {self.result.type}")


@irdl_op_definition
class AnyOp(LogicalReduceOp):
    """True where any element over `dims` is non-zero (`aten.any.*`)."""

    name = "aten.any"


@irdl_op_definition
class AllOp(LogicalReduceOp):
    """True where every element over `dims` is non-zero (`aten.all.*`)."""

    name = "aten.all"


class ReduceAllOp(AtenOp):
    """`result = reduce(input)` over every element, a 0-d tensor."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    def check(self) -> None:
        if elem_of(self.input) != elem_of(self.result):
            raise self.fail("result must have the input's element type")

    def expected_shapes(self) -> Sequence[Shape]:
        if 0 in shape_of(self.input):
            raise self.fail("cannot reduce an empty tensor (no identity for max/min)")
        return [()]


@irdl_op_definition
class MaxOp(ReduceAllOp):
    """The largest element (`aten.max.default`); NaN propagates."""

    name = "aten.max"


@irdl_op_definition
class MinOp(ReduceAllOp):
    """The smallest element (`aten.min.default`); NaN propagates."""

    name = "aten.min"


class ReduceDimWithIndexOp(AtenOp):
    """`(values, indices)` of the extreme along `dim`; the first extreme wins ties,
    the first NaN wins over numbers."""

    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    keepdim = opt_prop_def(BoolAttr)
    values = result_def(TensorType)
    indices = result_def(TensorType)

    def check(self) -> None:
        if elem_of(self.input) != elem_of(self.values):
            raise self.fail("values must have the input's element type")
        self.require_integer(self.indices, "indices")

    def expected_shapes(self) -> Sequence[Shape]:
        shape = shape_of(self.input)
        axes = reduced_dims((integer(self.dim),), len(shape))
        out = reduced_shape(shape, axes, flag(self.keepdim))
        return [out, out]


@irdl_op_definition
class MaxDimOp(ReduceDimWithIndexOp):
    """`torch.max(input, dim)`: maximum values and their int64 indices."""

    name = "aten.max_dim"


@irdl_op_definition
class MinDimOp(ReduceDimWithIndexOp):
    """`torch.min(input, dim)`: minimum values and their int64 indices."""

    name = "aten.min_dim"


class ArgReduceOp(AtenOp):
    """int64 index of the extreme along `dim` (absent: of the flattened input,
    keepdim then keeps every dim with size 1); the first extreme wins ties."""

    input = operand_def(TensorType)
    dim = opt_prop_def(IntegerAttr)
    keepdim = opt_prop_def(BoolAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        self.require_integer(self.result, "result")

    def expected_shapes(self) -> Sequence[Shape]:
        shape = shape_of(self.input)
        dims = () if self.dim is None else (integer(self.dim),)
        return [reduced_shape(shape, reduced_dims(dims, len(shape)), flag(self.keepdim))]


@irdl_op_definition
class ArgmaxOp(ArgReduceOp):
    name = "aten.argmax"


@irdl_op_definition
class ArgminOp(ArgReduceOp):
    name = "aten.argmin"


class MomentOp(ReduceOp):
    """Variance over `dims` with `correction` (default 1, Bessel):
    `sum((x - mean)^2) / max(0, N - correction)`."""

    correction = opt_prop_def(FloatAttr)

    def check(self) -> None:
        self.require_float(self.input, "input")
        self.require_float(self.result, "result")


@irdl_op_definition
class VarOp(MomentOp):
    """Variance (`aten.var.correction`, `aten.var.dim`, `aten.var.default`)."""

    name = "aten.var"


@irdl_op_definition
class StdOp(MomentOp):
    """Standard deviation, the square root of `aten.var`."""

    name = "aten.std"


class SoftmaxLikeOp(AtenOp):
    """Normalised exponentials along `dim`, computed in float32 (float64 for f64)."""

    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        self.require_float(self.input, "input")
        self.require_float(self.result, "result")
        norm_dim(integer(self.dim), len(shape_of(self.input)))

    def expected_shapes(self) -> Sequence[Shape]:
        return [shape_of(self.input)]


@irdl_op_definition
class SoftmaxOp(SoftmaxLikeOp):
    """`exp(x - max) / sum(exp(x - max))` along `dim`. A slice that is all -inf
    gives NaN, or 0 with `safe` (`aten._safe_softmax`)."""

    name = "aten.softmax"
    safe = opt_prop_def(BoolAttr)


@irdl_op_definition
class LogSoftmaxOp(SoftmaxLikeOp):
    """`x - max - log(sum(exp(x - max)))` along `dim`."""

    name = "aten.log_softmax"


@irdl_op_definition
class SortOp(AtenOp):
    """`torch.sort` and `torch.topk`: the entries along `dim` in ascending order
    (descending with `descending`) and their int64 indices; with `k`, only the first
    `k` (topk: the `k` largest with `descending`, else the smallest). Equal entries
    keep their input order (stable); NaN sorts above every number, as in torch. See
    external [documentation](https://pytorch.org/docs/stable/generated/torch.sort.html).
    """

    name = "aten.sort"
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    descending = opt_prop_def(BoolAttr)
    k = opt_prop_def(IntegerAttr)
    values = result_def(TensorType)
    indices = result_def(TensorType)

    def check(self) -> None:
        if elem_of(self.input) != elem_of(self.values):
            raise self.fail("values must have the input's element type")
        self.require_integer(self.indices, "indices")

    def expected_shapes(self) -> Sequence[Shape]:
        shape = list(shape_of(self.input))
        if not shape:
            if self.k is not None and integer(self.k) not in (0, 1):
                raise self.fail(f"k = {integer(self.k)} of a 0-d tensor")
            return [(), ()]
        d = norm_dim(integer(self.dim), len(shape))
        if self.k is not None:
            k = integer(self.k)
            if not 0 <= k <= shape[d]:
                raise self.fail(f"k = {k} is outside [0, {shape[d]}] (dim {d}'s size)")
            shape[d] = k
        return [tuple(shape), tuple(shape)]


def correction_of(op: MomentOp) -> float:
    return real(op.correction, 1.0)


OPS = [
    SumOp,
    MeanOp,
    ProdOp,
    AmaxOp,
    AminOp,
    AnyOp,
    AllOp,
    MaxOp,
    MinOp,
    MaxDimOp,
    MinDimOp,
    ArgmaxOp,
    ArgminOp,
    SortOp,
    VarOp,
    StdOp,
    SoftmaxOp,
    LogSoftmaxOp,
]

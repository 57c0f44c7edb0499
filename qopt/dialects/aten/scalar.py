"""aten ops of run-time scalars: the integers `torch.export` traces as SymInts.

`x.item()`, `x.shape[d]` on a dynamic dim, and the `operator`/`torch.sym_*`
arithmetic and comparisons torch records around them compute integers at run
time. qopt keeps each as a 0-d tensor (`tensor<i64>` for a SymInt, `tensor<i1>`
for a SymBool), so every target handles them as tensors:

    %p = aten.select %input_pos {dim = 0 : i64, index = 0 : i64}
        : (tensor<3xi64>) -> tensor<i64>
    %start = aten.item %p {range = array<i64: 0, 37>} : (tensor<i64>) -> tensor<i64>
    %ok = aten.lt %start, %c40 : (tensor<i64>, tensor<i64>) -> tensor<i1>
    aten.assert_scalar %ok {message = "u0 < 40"} : tensor<i1>
    %rows = aten.dynamic_slice %mask, %start {dim = 0 : i64}
        : (tensor<40x40xf32>, tensor<i64>) -> tensor<3x40xf32>

Arithmetic and comparisons are the elementwise aten ops (`aten.add`, `aten.lt`,
`aten.maximum`, `aten.div {rounding_mode = "floor"}` ...) on 0-d tensors; this
family adds what has no elementwise form: reading a scalar out of a tensor
(`aten.item`), a dim's run-time size (`aten.sym_size`) and torch's run-time
assertions (`aten.assert_scalar`). `range` is the inclusive interval torch's shape
environment proved or asserted for the symbol (`ep.range_constraints`): the
interpreter checks it on every call, and a pass may bound buffers by it (a cache
written at `start` needs `max + length` rows).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, IntegerType, StringAttr, TensorType
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import MemoryWriteEffect
from xdsl.utils.hints import isa

from qopt.dialects.aten.base import (
    AtenOp,
    AtenOpBase,
    Shape,
    integer,
    ints,
    norm_dim,
    numel,
    shape_of,
)
from qopt.dialects.tensors import elem_of
from qopt.dtypes import is_bool

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def scalar_range(attr: DenseArrayBase[IntegerType] | None) -> tuple[int, int]:
    """The `[min, max]` of a `range` property (the whole int64 range if absent)."""
    if attr is None:
        return INT64_MIN, INT64_MAX
    low, high = ints(attr)
    return low, high


class RangedScalarOp(AtenOp):
    """A 0-d integer result with an optional asserted `range = array<i64: min, max>`."""

    range = opt_prop_def(DenseArrayBase[IntegerType])

    def check_range(self) -> None:
        if self.range is None:
            return
        bounds = ints(self.range)
        if len(bounds) != 2 or bounds[0] > bounds[1]:
            raise self.fail(f"range must be [min, max] with min <= max, got {list(bounds)}")
        elem = elem_of(self.results[0])
        if not isa(elem, IntegerType) or is_bool(elem):
            raise self.fail(f"a range bounds an integer result, not {self.results[0].type}")


@irdl_op_definition
class ItemOp(RangedScalarOp):
    """The single element of `input` (0-d or one element) as a 0-d tensor of its
    element type: `x.item()`, a run-time scalar (torch's unbacked SymInt `u0`).

    With `range`, a value outside `[min, max]` is an error at run time (torch's
    program asserts the same: `torch._check_is_size`, `torch._check(u0 < n)`).
    See external [documentation](https://pytorch.org/docs/stable/generated/torch.Tensor.item.html).
    """

    name = "aten.item"
    input = operand_def(TensorType)
    result = result_def(TensorType)

    def check(self) -> None:
        if elem_of(self.input) != elem_of(self.result):
            raise self.fail("input and result element types must match")
        self.check_range()

    def expected_shapes(self) -> Sequence[Shape]:
        if numel(shape_of(self.input)) != 1:
            raise self.fail(
                f"item needs a tensor of one element, got shape {list(shape_of(self.input))}"
            )
        return [()]


@irdl_op_definition
class SymSizeOp(RangedScalarOp):
    """The run-time size of `input`'s dim `dim` as a 0-d int64 tensor: `x.shape[d]`
    of a dynamic dim (`aten.sym_size.int`). `range` is the dim's `torch.export.Dim`
    range `[min, max]`. (A static dim's size is a constant at import.)
    """

    name = "aten.sym_size"
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        elem = elem_of(self.result)
        if not isa(elem, IntegerType) or elem.width.data != 64:
            raise self.fail(f"result must be a 0-d int64 tensor, got {self.result.type}")
        self.check_range()

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        if not x:
            raise self.fail("a 0-d tensor has no dims")
        norm_dim(integer(self.dim), len(x))
        return [()]


@irdl_op_definition
class AssertScalarOp(AtenOpBase):
    """Fail the call unless the 0-d boolean `condition` holds: torch's run-time
    assertion on symbolic values (`aten._assert_scalar`, `torch._check`,
    `torch._check_is_size`). `message` is torch's text (the symbolic expression).
    Not pure: it has an effect (the error; a memory write, as MLIR's cf.assert), so
    it is never dropped as unused.
    """

    name = "aten.assert_scalar"
    condition = operand_def(TensorType)
    message = opt_prop_def(StringAttr)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$condition attr-dict `:` type($condition)"

    def check(self) -> None:
        self.require_bool(self.condition, "condition")

    def expected_shapes(self) -> Sequence[Shape]:
        if shape_of(self.condition):
            raise self.fail(f"condition must be 0-d, got {self.condition.type}")
        return []


OPS: list[type] = [ItemOp, SymSizeOp, AssertScalarOp]

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "OPS",
    "AssertScalarOp",
    "ItemOp",
    "SymSizeOp",
    "scalar_range",
]

"""`coreml` reductions and normalization: `reduce_{mean,sum,max,min}`,
`layer_norm`, `batch_norm`.

The optional `gamma` and `beta` of the norms are named in the custom form:
`coreml.layer_norm %x gamma %g beta %b {axes = ..., epsilon = ...} : ...`.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, IntegerType, TensorType
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
)

from qopt.dialects.coreml.base import (
    FI,
    CoremlOp,
    keyword_optional_format,
    mil_dtype_name,
    same_shape_result,
    with_segments,
)
from qopt.dialects.tensors import elem_of, shape_of


class ReduceOp(CoremlOp):
    """Reduce x over `axes` (each in [-rank, rank), none twice): the result has x's
    type and shape, with the reduced dims 1 (`keep_dims`) or removed."""

    x = operand_def(TensorType)
    axes = prop_def(DenseArrayBase[IntegerType])
    keep_dims = prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axes": "ints", "keep_dims": "bool"}
    INPUT_TYPES: ClassVar[frozenset[str]] = FI

    def check(self) -> None:
        x = shape_of(self.operands[0])
        axes_attr, keep_attr = self.properties["axes"], self.properties["keep_dims"]
        assert isinstance(axes_attr, DenseArrayBase)
        assert isinstance(keep_attr, IntegerAttr)
        axes = self.check_axes(axes_attr.get_values(), len(x))
        if keep_attr.value.data:
            out = tuple(1 if i in axes else d for i, d in enumerate(x))
        else:
            out = tuple(d for i, d in enumerate(x) if i not in axes)
        self.check_result(out, elem_of(self.operands[0]))


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """mean over axes"""

    name = "coreml.reduce_mean"


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """sum over axes"""

    name = "coreml.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """max over axes"""

    name = "coreml.reduce_max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """min over axes"""

    name = "coreml.reduce_min"


@irdl_op_definition
class LayerNormOp(CoremlOp):
    """`(x - mean) / sqrt(var + epsilon) * gamma + beta` over `axes`."""

    name = "coreml.layer_norm"
    x = operand_def(TensorType)
    gamma = opt_operand_def(TensorType)
    beta = opt_operand_def(TensorType)
    axes = prop_def(DenseArrayBase[IntegerType])
    epsilon = prop_def(FloatAttr)
    result = result_def(TensorType)
    irdl_options = with_segments()
    assembly_format = keyword_optional_format("x", optional=("gamma", "beta"))
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "gamma", "beta")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axes": "ints", "epsilon": "float"}

    def check(self) -> None:
        """`axes` in [-rank, rank), none twice; gamma and beta shaped like the
        normalized dims (x's dims at `axes`, in dim order), of x's type before
        iOS17; the result has x's shape and type (coremltools' `layer_norm`).
        MIL wants gamma and beta constant; that is not checked here, because
        convert-to-coreml passes torch's weight and bias through as they are."""
        x = shape_of(self.x)
        axes = self.check_axes(self.axes.get_values(), len(x))
        normalized = [d for i, d in enumerate(x) if i in axes]
        for what, value in (("gamma", self.gamma), ("beta", self.beta)):
            if value is None:
                continue
            if list(shape_of(value)) != normalized:
                raise self.fail(
                    f"{what} must have the normalized shape {normalized}, got "
                    f"{list(shape_of(value))}"
                )
            if self.opset() < 17 and elem_of(value) != elem_of(self.x):
                raise self.fail(
                    f"{what} must have the element type of x before iOS17, got "
                    f"{mil_dtype_name(elem_of(value))}"
                )
        self.check_result(x, elem_of(self.x))


@irdl_op_definition
class BatchNormOp(CoremlOp):
    """`gamma * (x - mean) / sqrt(variance + epsilon) + beta` per channel (axis 1),
    x `[N, C, *D]` of rank 3 to 5; every parameter a constant `[C]` (gamma 1 and
    beta 0 when absent). Before iOS17 the parameters must have x's element type."""

    name = "coreml.batch_norm"
    x = operand_def(TensorType)
    mean = operand_def(TensorType)
    variance = operand_def(TensorType)
    gamma = opt_operand_def(TensorType)
    beta = opt_operand_def(TensorType)
    epsilon = prop_def(FloatAttr)
    result = result_def(TensorType)
    irdl_options = with_segments()
    assembly_format = keyword_optional_format("x", "mean", "variance", optional=("gamma", "beta"))
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "mean", "variance", "gamma", "beta")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"epsilon": "float"}

    def check(self) -> None:
        x = shape_of(self.x)
        if not 3 <= len(x) <= 5:
            raise self.fail(f"x must be [N, C, *D] of rank 3 to 5, got {list(x)}")
        params = {
            "mean": self.mean,
            "variance": self.variance,
            "gamma": self.gamma,
            "beta": self.beta,
        }
        for what, value in params.items():
            if value is None:
                continue
            self.require_const(value, what)
            if shape_of(value) != (x[1],):
                raise self.fail(f"{what} must have shape [{x[1]}]")
            if self.opset() < 17 and elem_of(value) != elem_of(self.x):
                raise self.fail(
                    f"{what} must have the element type of x before iOS17, got "
                    f"{mil_dtype_name(elem_of(value))}"
                )
        same_shape_result(self, self.x, self.result)
        if elem_of(self.result) != elem_of(self.x):
            raise self.fail("result must have the element type of x")


@irdl_op_definition
class CumsumOp(CoremlOp):
    """Prefix sum of x along `axis` (MIL `cumsum`, iOS15+): element i is the sum of
    elements 0..i (`exclusive`: 0..i-1, the first 0; `reverse`: summed from the end);
    x fp16, fp32 or int32 of rank >= 1, `axis` in [-1, rank) (coremltools'
    type inference refuses other negative axes), the result x's shape and type."""

    name = "coreml.cumsum"
    x = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    exclusive = prop_def(IntegerAttr)
    reverse = prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axis": "int", "exclusive": "bool", "reverse": "bool"}
    INPUT_TYPES: ClassVar[frozenset[str]] = FI

    def check(self) -> None:
        same_shape_result(self, self.x, self.result)
        axis, rank = self.axis.value.data, len(shape_of(self.x))
        if not -1 <= axis < rank:
            raise self.fail(f"axis {axis} must be in [-1, {rank}) (MIL cumsum)")
        self.check_result(shape_of(self.x), elem_of(self.x))


#: This family's ops, in the order the dialect lists them.
OPS: tuple[type[CoremlOp], ...] = (
    ReduceMeanOp,
    ReduceSumOp,
    ReduceMaxOp,
    ReduceMinOp,
    LayerNormOp,
    BatchNormOp,
    CumsumOp,
)

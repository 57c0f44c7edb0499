"""`coreml` activation quantization (iOS17): `quantize` and `dequantize`.

`zero_point` is optional and comes between `input` and `scale` in MIL, so the
custom form names it: `coreml.quantize %x, %scale zero_point %zp {...}`.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from qopt.dialects.coreml.base import (
    CoremlOp,
    F,
    keyword_optional_format,
    type_name,
    with_segments,
)
from qopt.dialects.tensors import elem_of, shape_of


@irdl_op_definition
class QuantizeOp(CoremlOp):
    """`q = clip(rne(input / scale) + zero_point)` to the full range of the result type."""

    name = "coreml.quantize"
    input = operand_def(TensorType)
    zero_point = opt_operand_def(TensorType)
    scale = operand_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    output_dtype = prop_def(StringAttr)
    result = result_def(TensorType)
    irdl_options = with_segments()
    assembly_format = keyword_optional_format("input", "scale", optional=("zero_point",))
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("input", "zero_point", "scale")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axis": "int", "output_dtype": "str"}
    MIN_OPSET: ClassVar[int] = 17
    INPUT_TYPES: ClassVar[frozenset[str]] = F | {"int8", "uint8"}

    def check(self) -> None:
        self.require(self.input, "input", F)
        self.require(self.scale, "scale", F)
        self.require_const(self.scale, "scale")
        self.same_elem((("input", self.input), ("scale", self.scale)))  # MIL's SrcT
        out = type_name(elem_of(self.result))
        if out not in ("int8", "uint8") or out != self.output_dtype.data:
            raise self.fail("output_dtype must be int8 or uint8 and match the result type")
        if self.zero_point is not None:
            self.require_const(self.zero_point, "zero_point")
            if elem_of(self.zero_point) != elem_of(self.result):
                raise self.fail("zero_point must have the output dtype")
        _check_axis_params(self, self.input, self.axis, self.scale, self.zero_point)
        self.check_result(shape_of(self.input), None)


@irdl_op_definition
class DequantizeOp(CoremlOp):
    """`out = scale * (input - zero_point)`."""

    name = "coreml.dequantize"
    input = operand_def(TensorType)
    zero_point = opt_operand_def(TensorType)
    scale = operand_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)
    irdl_options = with_segments()
    assembly_format = keyword_optional_format("input", "scale", optional=("zero_point",))
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("input", "zero_point", "scale")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axis": "int"}
    MIN_OPSET: ClassVar[int] = 17
    INPUT_TYPES: ClassVar[frozenset[str]] = F | {"int8", "uint8"}

    def check(self) -> None:
        self.require(self.input, "input", frozenset({"int8", "uint8"}))
        self.require(self.scale, "scale", F)
        self.require_const(self.scale, "scale")
        if self.zero_point is not None:
            self.require_const(self.zero_point, "zero_point")
            if elem_of(self.zero_point) != elem_of(self.input):
                raise self.fail("zero_point must have the input's dtype")
        _check_axis_params(self, self.input, self.axis, self.scale, self.zero_point)
        self.check_result(shape_of(self.input), elem_of(self.scale))


def _check_axis_params(
    op: CoremlOp,
    input: SSAValue,
    axis: IntegerAttr | None,
    scale: SSAValue,
    zero_point: SSAValue | None,
) -> None:
    shape = shape_of(input)
    dim = None if axis is None else op.check_axis(axis.value.data, len(shape))
    for value in (scale, zero_point):
        if value is None:
            continue
        s = shape_of(value)
        if dim is None and s not in ((), (1,)):
            raise op.fail("scale and zero_point must be scalars without axis")
        if dim is not None and s != (shape[dim],):
            raise op.fail("scale and zero_point must be vectors of length shape[axis]")


#: This family's ops, in the order the dialect lists them.
OPS: tuple[type[CoremlOp], ...] = (
    QuantizeOp,
    DequantizeOp,
)

"""`coreml` constants and weight compression: `const` and the `constexpr_*` ops.

Every input of a `constexpr_*` op is a compile-time constant; Core ML
decompresses the weight when it loads the model.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.hints import isa

from qopt.dialects.coreml.base import (
    IOS18_INDICES,
    IOS18_SHIFT_DATA,
    LUT_TYPES,
    CompileTimeOp,
    CoremlOp,
    F,
    storage_dtype,
    trailing_optional_format,
    with_segments,
)
from qopt.dialects.tensors import elem_of, shape_of


@irdl_op_definition
class ConstOp(CompileTimeOp):
    """MIL `const`: a tensor known at compile time (`dense` or `dense_resource`).

    Custom form `%c = coreml.const dense_resource<w> : tensor<3x4xf32>`: the
    value with its type, which is the result's. Written by hand because a
    declarative `$value` would need a `VarConstraint` tying the result type to
    the value's, and that constraint would replace `check`'s message (which
    names the op and its source line) with an anonymous IRDL error.
    """

    name = "coreml.const"
    value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())
    assembly_format = None
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ()

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ConstOp:
        start = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr):
            parser.raise_error(
                "coreml.const takes a dense or dense_resource tensor", start, parser.pos
            )
        attributes = parser.parse_optional_attr_dict()
        properties: dict[str, Attribute] = {"value": value}
        return cls.create(
            properties=properties, result_types=[value.get_type()], attributes=attributes
        )

    def check(self) -> None:
        if self.value.type != self.result.type:
            raise self.fail(f"value type {self.value.type} differs from result {self.result.type}")
        storage_dtype(elem_of(self.result))


class ConstexprOp(CompileTimeOp):
    """A MIL `constexpr_*` op: every input a constant; decompressed by Core ML."""

    INPUT_TYPES: ClassVar[frozenset[str]] = F | IOS18_SHIFT_DATA | IOS18_INDICES | {"uint32"}

    def verify_(self) -> None:
        super().verify_()
        for operand, name in zip(self.operands, self.MIL_OPERANDS, strict=False):
            self.require_const(operand, name)


@irdl_op_definition
class ConstexprBlockwiseShiftScaleOp(ConstexprOp):
    """iOS18: `out[i] = scale[i // block] * (data[i] - offset[i // block])`."""

    name = "coreml.constexpr_blockwise_shift_scale"
    data = operand_def(TensorType)
    scale = operand_def(TensorType)
    offset = opt_operand_def(TensorType)
    result = result_def(TensorType)
    irdl_options = with_segments()
    assembly_format = trailing_optional_format("data", "scale", optional="offset")
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("data", "scale", "offset")
    MIN_OPSET: ClassVar[int] = 18

    def check(self) -> None:
        self.require(self.data, "data", IOS18_SHIFT_DATA)
        self.require(self.scale, "scale", F)
        data, scale = shape_of(self.data), shape_of(self.scale)
        if len(data) != len(scale) or any(
            s == 0 or d % s for d, s in zip(data, scale, strict=True)
        ):
            raise self.fail(f"scale shape {list(scale)} must tile data shape {list(data)}")
        if self.offset is not None:
            if shape_of(self.offset) != scale:
                raise self.fail("offset must have the shape of scale")
            off, dat = elem_of(self.offset), elem_of(self.data)
            if isinstance(off, IntegerType) and off != dat:
                raise self.fail(f"an integer offset must have the data type {dat}, got {off}")
        if shape_of(self.result) != data or elem_of(self.result) != elem_of(self.scale):
            raise self.fail("result must have the data shape and the scale type")


@irdl_op_definition
class ConstexprAffineDequantizeOp(ConstexprOp):
    """iOS16/17: `out = scale * (quantized_data - zero_point)` along `axis`."""

    name = "coreml.constexpr_affine_dequantize"
    quantized_data = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    scale = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("quantized_data", "zero_point", "scale")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axis": "int"}
    MIN_OPSET: ClassVar[int] = 16

    def check(self) -> None:
        if self.opset() >= 18:
            raise self.fail(
                "constexpr_affine_dequantize is iOS16/17 only: use "
                "constexpr_blockwise_shift_scale on iOS18"
            )
        self.require(self.quantized_data, "quantized_data", frozenset({"int8", "uint8"}))
        self.require(self.zero_point, "zero_point", frozenset({"int8", "uint8", "fp32"}))
        self.require(self.scale, "scale", F)
        data = shape_of(self.quantized_data)
        axis = self.axis.value.data
        if not -len(data) <= axis < len(data):
            raise self.fail(f"axis {axis} out of range for rank {len(data)}")
        for what, value in (("scale", self.scale), ("zero_point", self.zero_point)):
            s = shape_of(value)
            if len(s) > 1 or (len(s) == 1 and s[0] not in (1, data[axis])):
                raise self.fail(f"{what} must be a scalar or a vector of length {data[axis]}")
        if shape_of(self.result) != data or elem_of(self.result) != elem_of(self.scale):
            raise self.fail("result must have the data shape and the scale type")


@irdl_op_definition
class ConstexprLutToDenseOp(ConstexprOp):
    """Look-up-table weights.

    iOS18 form (no `shape`): indices `uN[d0..]` (the dtype carries nbits), lut
    `T[g0.., 2^N, V]`: `out[i] = lut[i0 // (d0/g0), ..., indices[i], :]`.
    iOS16 form (`shape` set): indices `u8[M]` bit-packed LSB first, lut `T[2^N]`,
    one table for the whole tensor of shape `shape`.
    """

    name = "coreml.constexpr_lut_to_dense"
    indices = operand_def(TensorType)
    lut = operand_def(TensorType)
    shape = opt_prop_def(DenseArrayBase[IntegerType])
    vector_axis = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("indices", "lut")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"shape": "ints", "vector_axis": "int"}
    MIN_OPSET: ClassVar[int] = 16

    def check(self) -> None:
        self.require(self.lut, "lut", LUT_TYPES)
        lut, idx, out = shape_of(self.lut), shape_of(self.indices), shape_of(self.result)
        if elem_of(self.result) != elem_of(self.lut):
            raise self.fail("result must have the lut's element type")
        if self.shape is not None:
            if self.opset() >= 18:
                raise self.fail("the packed single-LUT form (shape) is iOS16/17 only")
            self.require(self.indices, "packed indices", frozenset({"uint8"}))
            size = len(lut) == 1 and lut[0]
            if size not in (2, 4, 16, 64, 256):
                raise self.fail("iOS16 lut must be a vector of 2, 4, 16, 64 or 256 entries")
            nbits = int(size).bit_length() - 1
            dims = tuple(self.shape.get_values())
            if out != dims:
                raise self.fail(f"result shape must equal shape {list(dims)}")
            if len(idx) != 1 or idx[0] != -(-nbits * int(np.prod(dims)) // 8):
                raise self.fail("packed indices must hold ceil(nbits * numel / 8) bytes")
            return
        if self.opset() < 18:
            raise self.fail("the per-block LUT form needs iOS18 (or give shape for iOS16)")
        self.require(self.indices, "indices", IOS18_INDICES)
        elem = elem_of(self.indices)
        assert isa(elem, IntegerType)
        nbits = elem.width.data
        if len(lut) != len(idx) + 2 or lut[-2] != 2**nbits:
            raise self.fail(f"lut must have shape [g0..g{len(idx) - 1}, {2**nbits}, V]")
        if any(g == 0 or d % g for d, g in zip(idx, lut, strict=False)):
            raise self.fail("lut groups must divide the indices' dimensions")
        vec = lut[-1]
        if vec > 1 and self.vector_axis is None:
            raise self.fail("vector_axis is required when the lut holds vectors")
        expected = list(idx)
        if vec > 1:
            assert self.vector_axis is not None
            expected[self.check_axis(self.vector_axis.value.data, len(idx), "vector_axis")] *= vec
        if list(out) != expected:
            raise self.fail(f"result shape must be {expected}")


#: The compile-time decompressions of a weight (each a `ConstexprOp`).
COMPRESSION_OPS: tuple[type[CoremlOp], ...] = (
    ConstexprLutToDenseOp,
    ConstexprBlockwiseShiftScaleOp,
    ConstexprAffineDequantizeOp,
)
#: This family's ops, in the order the dialect lists them.
OPS: tuple[type[CoremlOp], ...] = (ConstOp, *COMPRESSION_OPS)

"""The `coreml` dialect: the CoreML MIL ops qopt emits (coremltools 9.0 semantics).

One op per MIL op, named as in MIL (`coreml.linear` is MIL `linear`). Tensor
inputs of a MIL op are operands; inputs MIL requires to be compile-time
constants of a small, fixed form (axes, perm, strides, epsilon, ...) are
properties. Weight tensors are operands produced by `coreml.const`, so the
compression ops (`constexpr_*`) read like MIL: constants in, dense weight out.

Each op class declares the MIL parameter names of its operands
(`MIL_OPERANDS`) and properties (`MIL_PARAMS`, name -> kind), and the oldest
opset that has it (`MIN_OPSET`). The emitter (qopt/backends/coreml/emitter.py)
and the reader (reader.py) are driven by those tables, so a new op needs one
class here and one numpy body in qopt/interpreters/coreml.py.

The opset is the `coreml.opset` attribute (`"iOS16"`, `"iOS17"`, `"iOS18"`) of
the enclosing `func.func`; a function without it is taken as iOS18. Verifiers
check each op's opset and the dtype rules of PATTERNS.md §3.

Sub-byte MIL types are integer element types of their width: `i4` (int4),
`ui1`, `ui2`, `ui3`, `ui4`, `ui6`; their numpy values live in int8 / uint8
containers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, TypeVar

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    Float16Type,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from qopt.errors import where

OPSETS = ("iOS15", "iOS16", "iOS17", "iOS18")
OPSET_ATTR = "coreml.opset"


def opset_number(opset: str) -> int:
    if opset not in OPSETS:
        raise ValueError(f"unknown CoreML opset '{opset}': use one of {', '.join(OPSETS[1:])}")
    return int(opset[3:])


def storage_dtype(elem: Attribute) -> np.dtype:
    """numpy dtype holding values of `elem` (sub-byte integers: an 8-bit container)."""
    if isinstance(elem, Float32Type):
        return np.dtype(np.float32)
    if isinstance(elem, Float16Type):
        return np.dtype(np.float16)
    if isinstance(elem, IntegerType):
        width = elem.width.data
        unsigned = elem.signedness.data == Signedness.UNSIGNED
        if width == 1 and not unsigned:
            return np.dtype(np.bool_)
        container = 8 if width < 8 else width
        return np.dtype(f"{'u' if unsigned else ''}int{container}")
    raise VerifyException(f"CoreML has no type for {elem}")


def mil_dtype_name(elem: Attribute) -> str:
    """`fp32`, `fp16`, `int8`, `uint4`, `bool` ... (MIL's names)."""
    if isinstance(elem, Float32Type):
        return "fp32"
    if isinstance(elem, Float16Type):
        return "fp16"
    if isinstance(elem, IntegerType):
        width = elem.width.data
        unsigned = elem.signedness.data == Signedness.UNSIGNED
        if width == 1 and not unsigned:
            return "bool"
        return f"{'u' if unsigned else ''}int{width}"
    raise VerifyException(f"CoreML has no type for {elem}")


def int_bounds(elem: Attribute) -> tuple[int, int]:
    assert isinstance(elem, IntegerType)
    width = elem.width.data
    if elem.signedness.data == Signedness.UNSIGNED:
        return 0, 2**width - 1
    return -(2 ** (width - 1)), 2 ** (width - 1) - 1


def shape_of(value: SSAValue) -> tuple[int, ...]:
    type = value.type
    if not isinstance(type, TensorType):
        raise VerifyException(f"expected a tensor, got {type}")
    return tuple(type.get_shape())


def elem_of(value: SSAValue) -> Attribute:
    type = value.type
    if not isinstance(type, TensorType):
        raise VerifyException(f"expected a tensor, got {type}")
    return type.get_element_type()


def _is_float(elem: Attribute) -> bool:
    return isinstance(elem, Float16Type | Float32Type)


def _int_name(elem: Attribute) -> str:
    return mil_dtype_name(elem) if isinstance(elem, IntegerType) else ""


F = frozenset({"fp16", "fp32"})
FI = F | {"int32"}
ANY = FI | {"bool", "int8", "uint8", "int16", "uint16"}
LUT_TYPES = F | {"int8", "uint8"}
IOS18_INDICES = frozenset({"uint1", "uint2", "uint3", "uint4", "uint6", "uint8"})
IOS18_SHIFT_DATA = F | {"int4", "uint4", "int8", "uint8"}


class CoremlOp(IRDLOperation):
    """Shared behaviour: opset lookup and checks (the MIL tables)."""

    traits = traits_def(Pure())
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x",)
    """MIL input name of each operand definition, in order."""
    MIL_PARAMS: ClassVar[dict[str, str]] = {}
    """MIL input name -> kind (`int`, `ints`, `float`, `bool`, `bools`, `str`) of each property."""
    MIN_OPSET: ClassVar[int] = 15
    INPUT_TYPES: ClassVar[frozenset[str]] = F
    """Element types every operand may have (MIL's type domain of `x`)."""

    @property
    def mil_type(self) -> str:
        return self.name.split(".", 1)[1]

    def fail(self, message: str) -> VerifyException:
        return VerifyException(f"{where(self)}: {message}")

    def opset(self) -> int:
        func = self.parent_op()
        while func is not None and not isinstance(func, FuncOp):
            func = func.parent_op()
        if func is None or (attr := func.attributes.get(OPSET_ATTR)) is None:
            return 18
        assert isinstance(attr, StringAttr)
        try:
            return opset_number(attr.data)
        except ValueError as e:
            raise self.fail(str(e)) from None

    def require(self, value: SSAValue, what: str, allowed: frozenset[str]) -> None:
        name = mil_dtype_name(elem_of(value))
        if name not in allowed:
            raise self.fail(f"{what} must be one of {sorted(allowed)}, got {name}")

    def require_const(self, value: SSAValue, what: str) -> None:
        owner = value.owner
        if not isinstance(owner, ConstOp | ConstexprOp):
            raise self.fail(f"{what} must be a compile-time constant (coreml.const or constexpr)")

    def verify_(self) -> None:
        if self.opset() < self.MIN_OPSET:
            raise self.fail(
                f"needs opset iOS{self.MIN_OPSET} or newer, function is iOS{self.opset()}"
            )
        for operand in self.operands:
            self.require(operand, "operand", self.INPUT_TYPES)
        self.check()

    def check(self) -> None:
        """Op-specific rules (shapes, const-ness, opset-dependent dtypes)."""


def _no_segments() -> tuple[AttrSizedOperandSegments, ...]:
    return (AttrSizedOperandSegments(as_property=True),)


# ----- constants and compression ---------------------------------------------------


@irdl_op_definition
class ConstOp(CoremlOp):
    """MIL `const`: a tensor known at compile time (`dense` or `dense_resource`)."""

    name = "coreml.const"
    value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ()

    def check(self) -> None:
        if self.value.type != self.result.type:
            raise self.fail(f"value type {self.value.type} differs from result {self.result.type}")
        storage_dtype(elem_of(self.result))


class ConstexprOp(CoremlOp):
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
    irdl_options = _no_segments()
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
    shape = opt_prop_def(DenseArrayBase)
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
        assert isinstance(elem, IntegerType)
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
            expected[self.vector_axis.value.data] *= vec
        if list(out) != expected:
            raise self.fail(f"result shape must be {expected}")


# ----- activation quantization (iOS17) ---------------------------------------------


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
    irdl_options = _no_segments()
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("input", "zero_point", "scale")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axis": "int", "output_dtype": "str"}
    MIN_OPSET: ClassVar[int] = 17
    INPUT_TYPES: ClassVar[frozenset[str]] = F | {"int8", "uint8"}

    def check(self) -> None:
        self.require(self.input, "input", F)
        self.require(self.scale, "scale", F)
        self.require_const(self.scale, "scale")
        out = mil_dtype_name(elem_of(self.result))
        if out not in ("int8", "uint8") or out != self.output_dtype.data:
            raise self.fail("output_dtype must be int8 or uint8 and match the result type")
        if self.zero_point is not None:
            self.require_const(self.zero_point, "zero_point")
            if elem_of(self.zero_point) != elem_of(self.result):
                raise self.fail("zero_point must have the output dtype")
        _check_axis_params(self, self.input, self.axis, self.scale, self.zero_point)
        if shape_of(self.result) != shape_of(self.input):
            raise self.fail("result must have the input's shape")


@irdl_op_definition
class DequantizeOp(CoremlOp):
    """`out = scale * (input - zero_point)`."""

    name = "coreml.dequantize"
    input = operand_def(TensorType)
    zero_point = opt_operand_def(TensorType)
    scale = operand_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)
    irdl_options = _no_segments()
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
        if shape_of(self.result) != shape_of(self.input) or elem_of(self.result) != elem_of(
            self.scale
        ):
            raise self.fail("result must have the input's shape and the scale's type")


def _check_axis_params(
    op: CoremlOp,
    input: SSAValue,
    axis: IntegerAttr | None,
    scale: SSAValue,
    zero_point: SSAValue | None,
) -> None:
    shape = shape_of(input)
    for value in (scale, zero_point):
        if value is None:
            continue
        s = shape_of(value)
        if axis is None and s not in ((), (1,)):
            raise op.fail("scale and zero_point must be scalars without axis")
        if axis is not None and s != (shape[axis.value.data],):
            raise op.fail("scale and zero_point must be vectors of length shape[axis]")


# ----- float compute ---------------------------------------------------------------


def _same_shape_result(op: CoremlOp, x: SSAValue, result: SSAValue) -> None:
    if shape_of(result) != shape_of(x):
        raise op.fail("result must have the input's shape")


@irdl_op_definition
class LinearOp(CoremlOp):
    """`y = x @ weight.T + bias`; weight `[Dout, Din]` constant (or constexpr)."""

    name = "coreml.linear"
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    irdl_options = _no_segments()
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "weight", "bias")
    INPUT_TYPES: ClassVar[frozenset[str]] = FI

    def check(self) -> None:
        self.require_const(self.weight, "weight")
        x, w = shape_of(self.x), shape_of(self.weight)
        if not 1 <= len(x) <= 3 and self.opset() < 17:
            raise self.fail("x must have rank 1 to 3")
        if len(w) != 2 or not x or x[-1] != w[1]:
            raise self.fail(f"weight must be [Dout, {x[-1] if x else '?'}], got {list(w)}")
        if self.bias is not None:
            self.require_const(self.bias, "bias")
            if shape_of(self.bias) != (w[0],):
                raise self.fail(f"bias must have shape [{w[0]}]")
        if shape_of(self.result) != (*x[:-1], w[0]):
            raise self.fail(f"result must have shape {[*x[:-1], w[0]]}")


@irdl_op_definition
class MatmulOp(CoremlOp):
    """numpy matmul with optional transposes of the last two dims."""

    name = "coreml.matmul"
    x = operand_def(TensorType)
    y = operand_def(TensorType)
    transpose_x = prop_def(IntegerAttr)
    transpose_y = prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "y")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"transpose_x": "bool", "transpose_y": "bool"}
    INPUT_TYPES: ClassVar[frozenset[str]] = FI


@irdl_op_definition
class ConvOp(CoremlOp):
    """N-d convolution, NC[spatial]; `pad_type` custom with `pad` [begin, end per dim]."""

    name = "coreml.conv"
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    strides = prop_def(DenseArrayBase)
    pad_type = prop_def(StringAttr)
    pad = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    groups = prop_def(IntegerAttr)
    result = result_def(TensorType)
    irdl_options = _no_segments()
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "weight", "bias")
    MIL_PARAMS: ClassVar[dict[str, str]] = {
        "strides": "ints",
        "pad_type": "str",
        "pad": "ints",
        "dilations": "ints",
        "groups": "int",
    }

    def check(self) -> None:
        x, w = shape_of(self.x), shape_of(self.weight)
        groups = self.groups.value.data
        if len(x) != len(w) or len(x) < 3 or x[1] != w[1] * groups:
            raise self.fail(f"weight {list(w)} does not fit input {list(x)} with {groups} groups")
        if self.pad_type.data not in ("valid", "custom", "same", "same_lower"):
            raise self.fail(f"unknown pad_type '{self.pad_type.data}'")


@irdl_op_definition
class GatherOp(CoremlOp):
    """`out = take(x, indices, axis)`; from iOS17 negative indices are out of bounds."""

    name = "coreml.gather"
    x = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "indices")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axis": "int"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def check(self) -> None:
        if self.opset() < 17:
            self.require(self.x, "x", FI)
        else:
            self.require(self.x, "x", FI | {"int8", "uint8", "int16", "uint16"})
        allowed = {"int32"} | ({"int16", "uint16"} if self.opset() >= 16 else set())
        if self.opset() >= 17:
            allowed |= {"int8", "uint8"}
        self.require(self.indices, "indices", frozenset(allowed))
        x, indices = shape_of(self.x), shape_of(self.indices)
        axis = self.axis.value.data
        if not -len(x) <= axis < len(x):
            raise self.fail(f"axis {axis} out of range for rank {len(x)}")
        axis %= len(x)
        out = (*x[:axis], *indices, *x[axis + 1 :])
        if shape_of(self.result) != out or elem_of(self.result) != elem_of(self.x):
            raise self.fail(f"result must have shape {list(out)} and the element type of x")


class BinaryOp(CoremlOp):
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "y")
    INPUT_TYPES: ClassVar[frozenset[str]] = FI


class UnaryOp(CoremlOp):
    def check(self) -> None:
        _same_shape_result(self, self.operands[0], self.results[0])


_OpT = TypeVar("_OpT", bound="CoremlOp")


def _two_operand(base: type[_OpT], mil_name: str, doc: str) -> type[_OpT]:
    """An `x`, `y` -> `result` MIL op class on `base` (elementwise, compare, logical)."""
    cls = type(
        f"{''.join(p.title() for p in mil_name.split('_'))}Op",
        (base,),
        {
            "__doc__": doc,
            "name": f"coreml.{mil_name}",
            "x": operand_def(TensorType),
            "y": operand_def(TensorType),
            "result": result_def(TensorType),
            "__module__": __name__,
        },
    )
    return irdl_op_definition(cls)


def _binary(mil_name: str, doc: str) -> type[BinaryOp]:
    return _two_operand(BinaryOp, mil_name, doc)


def _unary(mil_name: str, doc: str, **params: object) -> type[UnaryOp]:
    namespace: dict[str, object] = {
        "__doc__": doc,
        "name": f"coreml.{mil_name}",
        "x": operand_def(TensorType),
        "result": result_def(TensorType),
        "__module__": __name__,
    }
    kinds: dict[str, str] = {}
    for key, (definition, kind) in params.items():  # type: ignore[misc]
        namespace[key] = definition
        kinds[key] = kind
    namespace["MIL_PARAMS"] = kinds
    namespace["__annotations__"] = {"MIL_PARAMS": ClassVar[dict[str, str]]}
    cls = type(f"{''.join(p.title() for p in mil_name.split('_'))}Op", (UnaryOp,), namespace)
    return irdl_op_definition(cls)


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


class CompareOp(BinaryOp):
    """Elementwise comparison (numpy broadcasting): bool result; x and y share one
    element type, fp16, fp32 or int32 (MIL's `T` in every opset up to iOS18)."""

    def check(self) -> None:
        if elem_of(self.operands[0]) != elem_of(self.operands[1]):
            raise self.fail("x and y must have the same element type")
        out = broadcast(shape_of(self.operands[0]), shape_of(self.operands[1]))
        if out is None:
            raise self.fail("x and y shapes do not broadcast")
        if shape_of(self.results[0]) != out or mil_dtype_name(elem_of(self.results[0])) != "bool":
            raise self.fail(f"result must be a bool tensor of shape {list(out)}")


def _compare(mil_name: str, doc: str) -> type[CompareOp]:
    return _two_operand(CompareOp, mil_name, doc)


AddOp = _binary("add", "x + y (numpy broadcasting)")
SubOp = _binary("sub", "x - y")
MulOp = _binary("mul", "x * y")
RealDivOp = _binary("real_div", "x / y")
PowOp = _binary("pow", "x ** y")
MaximumOp = _binary("maximum", "max(x, y)")
MinimumOp = _binary("minimum", "min(x, y)")
ModOp = _binary(
    "mod",
    "`x % y` with Python's sign rule (the result has the sign of y; coremltools' "
    "`iOS15.elementwise_binary.mod` defines it as `operator.mod`); fp16, fp32 or int32",
)

EqualOp = _compare("equal", "x == y")
NotEqualOp = _compare("not_equal", "x != y")
LessOp = _compare("less", "x < y")
LessEqualOp = _compare("less_equal", "x <= y")
GreaterOp = _compare("greater", "x > y")
GreaterEqualOp = _compare("greater_equal", "x >= y")


class LogicalOp(BinaryOp):
    """Elementwise logic on bools (numpy broadcasting): x and y bool, bool result
    (MIL's `T` is bool only in every opset up to iOS18)."""

    INPUT_TYPES: ClassVar[frozenset[str]] = frozenset({"bool"})

    def check(self) -> None:
        out = broadcast(shape_of(self.operands[0]), shape_of(self.operands[1]))
        if out is None:
            raise self.fail("x and y shapes do not broadcast")
        if shape_of(self.results[0]) != out or mil_dtype_name(elem_of(self.results[0])) != "bool":
            raise self.fail(f"result must be a bool tensor of shape {list(out)}")


def _logical(mil_name: str, doc: str) -> type[LogicalOp]:
    return _two_operand(LogicalOp, mil_name, doc)


LogicalAndOp = _logical("logical_and", "x AND y")
LogicalOrOp = _logical("logical_or", "x OR y")
LogicalXorOp = _logical("logical_xor", "x XOR y")

ReluOp = _unary("relu", "max(x, 0)")
SiluOp = _unary("silu", "x * sigmoid(x)")
SigmoidOp = _unary("sigmoid", "1 / (1 + exp(-x))")
TanhOp = _unary("tanh", "tanh(x)")
ExpOp = _unary("exp", "exp(x)")
SqrtOp = _unary("sqrt", "sqrt(x)")
SinOp = _unary("sin", "sin(x)")
CosOp = _unary("cos", "cos(x)")
ErfOp = _unary("erf", "erf(x)")
RsqrtOp = _unary("rsqrt", "1 / sqrt(x + epsilon)", epsilon=(prop_def(FloatAttr), "float"))
GeluOp = _unary(
    "gelu", "GELU, mode EXACT or TANH_APPROXIMATION", mode=(prop_def(StringAttr), "str")
)
SoftmaxOp = _unary("softmax", "softmax along axis", axis=(prop_def(IntegerAttr), "int"))
ClipOp = _unary(
    "clip",
    "min(max(x, alpha), beta)",
    alpha=(prop_def(FloatAttr), "float"),
    beta=(prop_def(FloatAttr), "float"),
)
SigmoidHardOp = _unary(
    "sigmoid_hard",
    "`min(max(alpha * x + beta, 0), 1)`; x fp16 or fp32: coremltools' "
    "`iOS15.activation.sigmoid_hard`",
    alpha=(prop_def(FloatAttr), "float"),
    beta=(prop_def(FloatAttr), "float"),
)
LeakyReluOp = _unary(
    "leaky_relu",
    "`x` where `x >= 0`, else `alpha * x`; x fp16 or fp32: coremltools' "
    "`iOS15.activation.leaky_relu`",
    alpha=(prop_def(FloatAttr), "float"),
)
CeilOp = _unary("ceil", "ceil(x); x fp16 or fp32")
FloorOp = _unary("floor", "floor(x) (towards -inf); x fp16 or fp32")
LogOp = _unary(
    "log",
    "`log(x + epsilon)` (MIL's default epsilon is 1e-45; qopt emits 0); x fp16 or fp32",
    epsilon=(prop_def(FloatAttr), "float"),
)
InverseOp = _unary(
    "inverse",
    "`1 / (x + epsilon)` (MIL's default epsilon is 1e-4; qopt emits 0); x fp16 or fp32",
    epsilon=(prop_def(FloatAttr), "float"),
)


@irdl_op_definition
class AbsOp(UnaryOp):
    """`|x|`; x fp16, fp32 or int32 (coremltools' `elementwise_unary_with_int`)."""

    name = "coreml.abs"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    INPUT_TYPES: ClassVar[frozenset[str]] = FI

    def check(self) -> None:
        super().check()
        if elem_of(self.result) != elem_of(self.x):
            raise self.fail("result must have the element type of x")


@irdl_op_definition
class LayerNormOp(CoremlOp):
    """`(x - mean) / sqrt(var + epsilon) * gamma + beta` over `axes`."""

    name = "coreml.layer_norm"
    x = operand_def(TensorType)
    gamma = opt_operand_def(TensorType)
    beta = opt_operand_def(TensorType)
    axes = prop_def(DenseArrayBase)
    epsilon = prop_def(FloatAttr)
    result = result_def(TensorType)
    irdl_options = _no_segments()
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "gamma", "beta")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axes": "ints", "epsilon": "float"}


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
    irdl_options = _no_segments()
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
        _same_shape_result(self, self.x, self.result)
        if elem_of(self.result) != elem_of(self.x):
            raise self.fail("result must have the element type of x")


class ReduceOp(CoremlOp):
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axes": "ints", "keep_dims": "bool"}
    INPUT_TYPES: ClassVar[frozenset[str]] = FI


def _reduce(mil_name: str, doc: str) -> type[ReduceOp]:
    cls = type(
        f"{''.join(p.title() for p in mil_name.split('_'))}Op",
        (ReduceOp,),
        {
            "__doc__": doc,
            "name": f"coreml.{mil_name}",
            "x": operand_def(TensorType),
            "axes": prop_def(DenseArrayBase),
            "keep_dims": prop_def(IntegerAttr),
            "result": result_def(TensorType),
            "__module__": __name__,
        },
    )
    return irdl_op_definition(cls)


ReduceMeanOp = _reduce("reduce_mean", "mean over axes")
ReduceSumOp = _reduce("reduce_sum", "sum over axes")
ReduceMaxOp = _reduce("reduce_max", "max over axes")
ReduceMinOp = _reduce("reduce_min", "min over axes")


@irdl_op_definition
class ReshapeOp(CoremlOp):
    """Row-major reshape to `shape`."""

    name = "coreml.reshape"
    x = operand_def(TensorType)
    shape = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"shape": "ints"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def check(self) -> None:
        if int(np.prod(shape_of(self.x))) != int(np.prod(shape_of(self.result))):
            raise self.fail("reshape must keep the number of elements")


@irdl_op_definition
class TransposeOp(CoremlOp):
    name = "coreml.transpose"
    x = operand_def(TensorType)
    perm = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"perm": "ints"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def check(self) -> None:
        perm = tuple(self.perm.get_values())
        if sorted(perm) != list(range(len(shape_of(self.x)))):
            raise self.fail(f"perm {list(perm)} is not a permutation of the input's dims")


@irdl_op_definition
class ConcatOp(CoremlOp):
    name = "coreml.concat"
    values = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    interleave = prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("values",)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axis": "int", "interleave": "bool"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY


@irdl_op_definition
class TileOp(CoremlOp):
    """`numpy.tile(x, reps)`: dim i repeated `reps[i]` times (`reps` has one entry
    per dim of x, each at least 1). x is fp16, fp32, int32 or bool (every opset
    up to iOS18): coremltools' `iOS15.tensor_operation.tile`.
    """

    name = "coreml.tile"
    x = operand_def(TensorType)
    reps = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"reps": "ints"}
    INPUT_TYPES: ClassVar[frozenset[str]] = FI | {"bool"}

    def check(self) -> None:
        x = shape_of(self.x)
        reps = tuple(self.reps.get_values())
        if len(reps) != len(x) or not reps:
            raise self.fail(f"reps must have one entry per dim of x (rank {len(x)})")
        if any(r < 1 for r in reps):
            raise self.fail(f"reps {list(reps)} must all be at least 1")
        out = tuple(d * r for d, r in zip(x, reps, strict=True))
        if shape_of(self.result) != out or elem_of(self.result) != elem_of(self.x):
            raise self.fail(f"result must have shape {list(out)} and the element type of x")


def _mask(attr: DenseArrayBase | None, rank: int) -> tuple[bool, ...]:
    if attr is None:
        return (False,) * rank
    return tuple(bool(v) for v in attr.get_values())


def slice_by_index_indices(
    shape: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    stride: Sequence[int],
    begin_mask: Sequence[bool],
    end_mask: Sequence[bool],
    squeeze_mask: Sequence[bool],
) -> tuple[tuple[slice | int, ...], tuple[int, ...]]:
    """MIL `slice_by_index` as a numpy index and the result shape.

    Per axis i: `begin_mask[i]` ignores `begin[i]` (slice from the start, or from
    the end for a negative stride), `end_mask[i]` ignores `end[i]` (to the end),
    `squeeze_mask[i]` takes the single element at `begin[i]` and removes the
    axis; negative bounds count from the end (coremltools'
    `solve_slice_by_index_slice`, numpy's rules).
    """
    index: list[slice | int] = []
    out: list[int] = []
    for size, b, e, s, bm, em, sq in zip(
        shape, begin, end, stride, begin_mask, end_mask, squeeze_mask, strict=True
    ):
        if sq:
            b = 0 if bm else b
            if not -size <= b < size:
                raise ValueError(f"squeezed index {b} is out of range for a dim of size {size}")
            index.append(b)
            continue
        if s == 0:
            raise ValueError("stride must not be 0")
        piece = slice(None if bm else b, None if em else e, s)
        index.append(piece)
        out.append(len(range(*piece.indices(size))))
    return tuple(index), tuple(out)


@irdl_op_definition
class SliceByIndexOp(CoremlOp):
    """`x[begin:end:stride]` per dimension, with MIL's masks: `begin_mask[i]`
    ignores `begin[i]`, `end_mask[i]` ignores `end[i]`, `squeeze_mask[i]` takes
    the element at `begin[i]` and removes the axis (absent masks: all false)."""

    name = "coreml.slice_by_index"
    x = operand_def(TensorType)
    begin = prop_def(DenseArrayBase)
    end = prop_def(DenseArrayBase)
    stride = prop_def(DenseArrayBase)
    begin_mask = opt_prop_def(DenseArrayBase)
    end_mask = opt_prop_def(DenseArrayBase)
    squeeze_mask = opt_prop_def(DenseArrayBase)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {
        "begin": "ints",
        "end": "ints",
        "stride": "ints",
        "begin_mask": "bools",
        "end_mask": "bools",
        "squeeze_mask": "bools",
    }
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def masks(self) -> tuple[tuple[bool, ...], tuple[bool, ...], tuple[bool, ...]]:
        rank = len(shape_of(self.x))
        return (
            _mask(self.begin_mask, rank),
            _mask(self.end_mask, rank),
            _mask(self.squeeze_mask, rank),
        )

    def index(self) -> tuple[slice | int, ...]:
        index, _ = slice_by_index_indices(
            shape_of(self.x),
            tuple(self.begin.get_values()),
            tuple(self.end.get_values()),
            tuple(self.stride.get_values()),
            *self.masks(),
        )
        return index

    def check(self) -> None:
        if self.opset() < 17:
            self.require(self.x, "x", FI | {"bool"})
        shape = shape_of(self.x)
        params = {
            "begin": self.begin,
            "end": self.end,
            "stride": self.stride,
            "begin_mask": self.begin_mask,
            "end_mask": self.end_mask,
            "squeeze_mask": self.squeeze_mask,
        }
        for key, attr in params.items():
            if attr is not None and len(attr.get_values()) != len(shape):
                raise self.fail(f"{key} must have one entry per dim of x (rank {len(shape)})")
        try:
            _, out = slice_by_index_indices(
                shape,
                tuple(self.begin.get_values()),
                tuple(self.end.get_values()),
                tuple(self.stride.get_values()),
                *self.masks(),
            )
        except ValueError as e:
            raise self.fail(str(e)) from None
        if shape_of(self.result) != out or elem_of(self.result) != elem_of(self.x):
            raise self.fail(f"result must have shape {list(out)} and the element type of x")


@irdl_op_definition
class ExpandDimsOp(CoremlOp):
    name = "coreml.expand_dims"
    x = operand_def(TensorType)
    axes = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axes": "ints"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY


@irdl_op_definition
class SqueezeOp(CoremlOp):
    name = "coreml.squeeze"
    x = operand_def(TensorType)
    axes = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axes": "ints"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY


@irdl_op_definition
class CastOp(CoremlOp):
    """Element type conversion; `dtype` names the result type (MIL's names)."""

    name = "coreml.cast"
    x = operand_def(TensorType)
    dtype = prop_def(StringAttr)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"dtype": "str"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def check(self) -> None:
        if mil_dtype_name(elem_of(self.result)) != self.dtype.data:
            raise self.fail("dtype must name the result's element type")
        allowed = {"fp16", "fp32", "int32", "bool"}
        if self.opset() >= 17:
            allowed |= {"int8", "uint8", "int16", "uint16"}
        if self.dtype.data not in allowed:
            raise self.fail(f"cannot cast to {self.dtype.data} on iOS{self.opset()}")
        _same_shape_result(self, self.x, self.result)


@irdl_op_definition
class SelectOp(CoremlOp):
    """`where(cond, a, b)` with broadcasting."""

    name = "coreml.select"
    cond = operand_def(TensorType)
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("cond", "a", "b")
    INPUT_TYPES: ClassVar[frozenset[str]] = FI | {"bool"}

    def check(self) -> None:
        self.require(self.cond, "cond", frozenset({"bool"}))
        if elem_of(self.a) != elem_of(self.b):
            raise self.fail("a and b must have the same element type")
        out = broadcast(shape_of(self.cond), shape_of(self.a), shape_of(self.b))
        if out is None:
            raise self.fail("cond, a and b shapes do not broadcast")
        if shape_of(self.result) != out or elem_of(self.result) != elem_of(self.a):
            raise self.fail(f"result must have shape {list(out)} and the element type of a")


class PoolOp(CoremlOp):
    MIL_PARAMS: ClassVar[dict[str, str]] = {
        "kernel_sizes": "ints",
        "strides": "ints",
        "pad_type": "str",
        "pad": "ints",
        "ceil_mode": "bool",
    }


@irdl_op_definition
class MaxPoolOp(PoolOp):
    name = "coreml.max_pool"
    x = operand_def(TensorType)
    kernel_sizes = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pad_type = prop_def(StringAttr)
    pad = prop_def(DenseArrayBase)
    ceil_mode = prop_def(IntegerAttr)
    result = result_def(TensorType)


@irdl_op_definition
class AvgPoolOp(PoolOp):
    name = "coreml.avg_pool"
    x = operand_def(TensorType)
    kernel_sizes = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pad_type = prop_def(StringAttr)
    pad = prop_def(DenseArrayBase)
    ceil_mode = prop_def(IntegerAttr)
    exclude_padding_from_average = prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {
        **PoolOp.MIL_PARAMS,
        "exclude_padding_from_average": "bool",
    }


@irdl_op_definition
class ScaledDotProductAttentionOp(CoremlOp):
    """iOS18: `softmax(q @ k.T / sqrt(E) + mask) @ v`; a bool mask keeps True entries."""

    name = "coreml.scaled_dot_product_attention"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    attn_mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    irdl_options = _no_segments()
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("query", "key", "value", "attn_mask")
    MIN_OPSET: ClassVar[int] = 18
    INPUT_TYPES: ClassVar[frozenset[str]] = F | {"bool"}

    def check(self) -> None:
        q, k, v = (shape_of(x) for x in (self.query, self.key, self.value))
        if not len(q) == len(k) == len(v) >= 3 or q[-1] != k[-1] or k[-2] != v[-2]:
            raise self.fail("query, key and value must have the same rank and matching dims")


FLOAT_OPS: tuple[type[CoremlOp], ...] = (
    LinearOp, MatmulOp, ConvOp, GatherOp,
    AddOp, SubOp, MulOp, RealDivOp, PowOp, MaximumOp, MinimumOp, ModOp,
    EqualOp, NotEqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp,
    LogicalAndOp, LogicalOrOp, LogicalXorOp,
    ReluOp, SiluOp, SigmoidOp, TanhOp, ExpOp, SqrtOp, RsqrtOp, SinOp, CosOp, ErfOp, GeluOp,
    SigmoidHardOp, LeakyReluOp, AbsOp, CeilOp, FloorOp, LogOp, InverseOp,
    SoftmaxOp, LayerNormOp, BatchNormOp, ReduceMeanOp, ReduceSumOp, ReduceMaxOp, ReduceMinOp,
    ReshapeOp, TransposeOp, ConcatOp, TileOp, SliceByIndexOp, ExpandDimsOp, SqueezeOp,
    CastOp, ClipOp, SelectOp, MaxPoolOp, AvgPoolOp, ScaledDotProductAttentionOp,
)  # fmt: skip
COMPRESSION_OPS: tuple[type[CoremlOp], ...] = (
    ConstexprLutToDenseOp,
    ConstexprBlockwiseShiftScaleOp,
    ConstexprAffineDequantizeOp,
)
ALL_OPS: tuple[type[CoremlOp], ...] = (
    ConstOp,
    *COMPRESSION_OPS,
    QuantizeOp,
    DequantizeOp,
    *FLOAT_OPS,
)
BY_MIL_NAME: dict[str, type[CoremlOp]] = {op.name.split(".", 1)[1]: op for op in ALL_OPS}

CoreML = Dialect("coreml", list(ALL_OPS), [])

__all__ = ["ALL_OPS", "BY_MIL_NAME", "OPSETS", "OPSET_ATTR", "AnyFloat", "CoreML"]

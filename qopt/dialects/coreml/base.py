"""Shared definitions of the `coreml` dialect: opsets, MIL dtypes, the op base class.

The dialect mirrors the CoreML MIL ops qopt emits (coremltools 9.0 semantics),
one op per MIL op, named as in MIL (`coreml.linear` is MIL `linear`). Tensor
inputs of a MIL op are operands; inputs MIL requires to be compile-time
constants of a small, fixed form (axes, perm, strides, epsilon, ...) are
properties. Weight tensors are operands produced by `coreml.const`, so the
compression ops (`constexpr_*`) read like MIL: constants in, dense weight out.

Each op class declares the MIL parameter names of its operands
(`MIL_OPERANDS`) and properties (`MIL_PARAMS`, name -> kind), and the oldest
opset that has it (`MIN_OPSET`). The emitter (qopt/backends/coreml/emitter.py)
and the reader (reader.py) are driven by those tables, so a new op needs one
class in this package and one numpy body in qopt/interpreters/coreml.py.

The opset is the `coreml.opset` attribute (`"iOS16"`, `"iOS17"`, `"iOS18"`) of
the enclosing `func.func`; a function without it is taken as iOS18. Verifiers
check each op's opset and the dtype rules of MIL (docs/ir.md), and that its result
has the shape and element type MIL's type inference gives it (coremltools'
`type_inference`; `CoremlOp.check_result`), so a package read from disk whose
declared types disagree with its ops is refused before it is interpreted.

Sub-byte MIL types are integer element types of their width: `i4` (int4),
`ui1`, `ui2`, `ui3`, `ui4`, `ui6`; their numpy values live in int8 / uint8
containers.

Custom syntax reads like a MIL call: operands in MIL order, MIL parameters
(properties) in the attribute dictionary, then the types:

    %y = coreml.linear %x, %w, %b
        : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %q = coreml.quantize %x, %s zero_point %z {output_dtype = "int8"}
        : tensor<2x4xf32>, tensor<f32> zero_point tensor<i8> -> tensor<2x4xi8>
    %c = coreml.const dense_resource<w> : tensor<3x4xf32>

`CoremlOp.assembly_format` covers every op whose operands are all required (or
one variadic list); `trailing_optional_format` an op whose one optional
operand comes last (printed positionally, like MIL); `keyword_optional_format`
an op whose optional operands are several or not last (each named by its MIL
input name, as qfused names its optional operands). Only `coreml.const`
prints by hand (constexpr.py says why).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    IntegerType,
    Signedness,
    StringAttr,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    IRDLOption,
    ParsePropInAttrDict,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa

from qopt.dialects.tensors import elem_of, shape_of
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
    if isa(elem, IntegerType):
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
    if isa(elem, IntegerType):
        width = elem.width.data
        unsigned = elem.signedness.data == Signedness.UNSIGNED
        if width == 1 and not unsigned:
            return "bool"
        return f"{'u' if unsigned else ''}int{width}"
    raise VerifyException(f"CoreML has no type for {elem}")


def int_bounds(elem: Attribute) -> tuple[int, int]:
    assert isa(elem, IntegerType)
    width = elem.width.data
    if elem.signedness.data == Signedness.UNSIGNED:
        return 0, 2**width - 1
    return -(2 ** (width - 1)), 2 ** (width - 1) - 1


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """numpy's broadcast of `shapes`, or None where they do not broadcast."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def type_name(elem: Attribute) -> str:
    """MIL's name of `elem` for a message (`fp32`), or its xDSL form if MIL has none."""
    try:
        return mil_dtype_name(elem)
    except VerifyException:
        return str(elem)


def matmul_shape(
    x: tuple[int, ...], y: tuple[int, ...], transpose_x: bool, transpose_y: bool
) -> tuple[int, ...] | str:
    """The shape of MIL `matmul(x, y)` (numpy's matmul after the optional swaps of
    the last two dims), or why there is none. A rank-1 x is `[1, K]` and a rank-1 y
    `[K, 1]`, the added dim dropped from the result; the batch dims (all but the
    last two) broadcast."""
    if not x or not y:
        return "x and y must have rank 1 or more"
    if transpose_x and len(x) == 1:
        return "transpose_x needs x of rank 2 or more"
    if transpose_y and len(y) == 1:
        return "transpose_y needs y of rank 2 or more"
    xm = (1, *x) if len(x) == 1 else x
    ym = (*y, 1) if len(y) == 1 else y
    if transpose_x:
        xm = (*xm[:-2], xm[-1], xm[-2])
    if transpose_y:
        ym = (*ym[:-2], ym[-1], ym[-2])
    if xm[-1] != ym[-2]:
        return (
            f"x {list(x)} and y {list(y)} do not multiply: {xm[-1]} columns against {ym[-2]} rows"
        )
    batch = broadcast(xm[:-2], ym[:-2])
    if batch is None:
        return f"the batch dims of x {list(x)} and y {list(y)} do not broadcast"
    out = (*batch, xm[-2], ym[-1])
    if len(x) == 1:
        out = (*out[:-2], out[-1])
    if len(y) == 1:
        out = out[:-1]
    return out


def spatial_out_shape(
    size: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pad_type: str,
    pad: Sequence[int],
    ceil_mode: bool = False,
) -> tuple[int, ...]:
    """Output sizes of MIL `conv` / `max_pool` / `avg_pool` per spatial dim
    (coremltools' `spatial_dimensions_out_shape`), with `k = dilation * (kernel - 1) + 1`:

    - total padding `p`: `valid` 0; `custom` `pad[2i] + pad[2i+1]`; `same` and
      `same_lower` `max(0, s * ceil(d / s) - d + k - s)` (output `ceil(d / s)`);
    - `floor((d + p - k) / s) + 1`; with `ceil_mode`, `floor((d + p - k + s - 1) / s) + 1`,
      less one where the last window would start in the end padding
      (`(out - 1) * s >= d + pad[2i]` and `p > 0`).

    Sizes below 1 are returned as they are: the caller refuses them."""
    out: list[int] = []
    for i, (d, kk, s, dil) in enumerate(zip(size, kernel, strides, dilations, strict=True)):
        k = dil * (kk - 1) + 1
        if pad_type in ("same", "same_lower"):
            total, before = max(0, s * -(-d // s) - d + k - s), 0
        elif pad_type == "custom":
            total, before = pad[2 * i] + pad[2 * i + 1], pad[2 * i]
        else:
            total, before = 0, 0
        if ceil_mode:
            n = (d + total - k + s - 1) // s + 1
            if (n - 1) * s >= d + before and total > 0:
                n -= 1
        else:
            n = (d + total - k) // s + 1
        out.append(n)
    return tuple(out)


F = frozenset({"fp16", "fp32"})
FI = F | {"int32"}
ANY = FI | {"bool", "int8", "uint8", "int16", "uint16"}
LUT_TYPES = F | {"int8", "uint8"}
IOS18_INDICES = frozenset({"uint1", "uint2", "uint3", "uint4", "uint6", "uint8"})
IOS18_SHIFT_DATA = F | {"int4", "uint4", "int8", "uint8"}


# ----- assembly formats -----------------------------------------------------------


def trailing_optional_format(*required: str, optional: str) -> str:
    """`%a, %b, %c {params} : (A, B, C) -> R` where `%c` (`optional`) may be absent:
    the functional form of `CoremlOp.assembly_format`, written out operand by
    operand because xDSL's `operands` directive cannot fill operand segments."""
    values = " `,` ".join(f"${name}" for name in required)
    types = " `,` ".join(f"type(${name})" for name in required)
    return (
        f"{values} (`,` ${optional}^)? attr-dict "
        f"`:` `(` {types} (`,` type(${optional})^)? `)` `->` type($result)"
    )


def keyword_optional_format(*required: str, optional: Sequence[str]) -> str:
    """`%a, %b name %c {params} : A, B name C -> R`: required operands in order,
    then each present optional operand after its MIL input name (qfused's form)."""
    values = " `,` ".join(f"${name}" for name in required)
    types = " `,` ".join(f"type(${name})" for name in required)
    for name in optional:
        values += f" (`{name}` ${name}^)?"
        types += f" (`{name}` type(${name})^)?"
    return f"{values} attr-dict `:` {types} `->` type($result)"


def with_segments() -> tuple[IRDLOption, ...]:
    """`irdl_options` of an op with an optional operand (segment sizes as a property)."""
    return (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())


# ----- the base class ---------------------------------------------------------------


class CoremlOp(IRDLOperation):
    """Shared behaviour: opset lookup and checks (the MIL tables), the MIL-like syntax."""

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format: ClassVar[str | None] = (
        "operands attr-dict `:` functional-type(operands, results)"
    )
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

    def check_result(
        self, shape: Sequence[int], elem: Attribute | None, result: SSAValue | None = None
    ) -> None:
        """The (first) result has `shape` and, unless None, element type `elem`."""
        result = self.results[0] if result is None else result
        got = shape_of(result)
        if got != tuple(shape):
            raise self.fail(f"result must have shape {list(shape)}, got {list(got)}")
        if elem is not None and elem_of(result) != elem:
            raise self.fail(
                f"result must have element type {type_name(elem)}, got {type_name(elem_of(result))}"
            )

    def check_axis(self, axis: int, rank: int, what: str = "axis") -> int:
        """`axis` in [-rank, rank), made non-negative."""
        if not -rank <= axis < rank:
            raise self.fail(f"{what} {axis} is out of range for rank {rank}")
        return axis % rank

    def check_axes(self, axes: Sequence[int], rank: int, what: str = "axes") -> tuple[int, ...]:
        """Each of `axes` in [-rank, rank), none twice, made non-negative (in order)."""
        out = tuple(self.check_axis(int(a), rank, f"{what} entry") for a in axes)
        if len(set(out)) != len(out):
            raise self.fail(f"{what} {[int(a) for a in axes]} name a dim twice")
        return out

    def same_elem(self, values: Sequence[tuple[str, SSAValue]]) -> Attribute:
        """The element type `values` (named) share; a message naming both if not."""
        (first, value), *rest = values
        elem = elem_of(value)
        for name, other in rest:
            if elem_of(other) != elem:
                raise self.fail(
                    f"{first} and {name} must have the same element type, got "
                    f"{type_name(elem)} and {type_name(elem_of(other))}"
                )
        return elem

    def require_const(self, value: SSAValue, what: str) -> None:
        if not isinstance(value.owner, CompileTimeOp):
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


class CompileTimeOp(CoremlOp):
    """An op whose result Core ML knows at compile time: `coreml.const` and the
    `constexpr_*` ops (what `CoremlOp.require_const` accepts)."""


def same_shape_result(op: CoremlOp, x: SSAValue, result: SSAValue) -> None:
    if (got := shape_of(result)) != (want := shape_of(x)):
        raise op.fail(f"result must have the input's shape {list(want)}, got {list(got)}")

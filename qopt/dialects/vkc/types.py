"""The vkc dialect's types and attributes: device buffers (`!vkc.buffer`) and a
kernel's signature (`#vkc.binding`, `#vkc.push`)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    IntAttr,
    IntegerType,
    Signedness,
    StringAttr,
    f32,
    i32,
)
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa

from qopt.dtypes import is_bool, is_float, is_int, ui32
from qopt.kernels import Binding, is_status_binding

ROW_MAJOR = "row_major"
BINDING_DTYPES = {"f32": f32, "i32": i32, "u32": ui32}
"""Buffer dtype name (the kernel catalogue's) -> element type."""
PUSH_KINDS = {"i32": i32, "u32": ui32, "f32": f32}
"""Push-constant kind (the kernel catalogue's) -> element type."""


def dtype_name(elem: Attribute) -> str:
    """`f32`, `i32` or `u32` for a buffer element type (ValueError otherwise)."""
    for name, attr in BINDING_DTYPES.items():
        if elem == attr:
            return name
    raise ValueError(f"buffer elements must be f32, i32 or ui32, got {elem}")


def abi_element(elem: Attribute) -> Attribute:
    """The buffer element type a tensor element type travels as (the kernel ABI)."""
    if is_float(elem):
        return f32
    if is_int(elem) or is_bool(elem):
        if isa(elem, IntegerType) and elem.signedness.data == Signedness.UNSIGNED:
            if elem.width.data == 32:
                return ui32
        return i32
    raise ValueError(f"no Vulkan buffer type for tensor elements {elem}")


@irdl_attr_definition
class BufferType(ParametrizedAttribute, TypeAttribute):
    """A device storage buffer: its logical shape, element type and layout.

    `!vkc.buffer<16x64xf32>` is row-major; a packed constant names the layout its
    kernel reads, `!vkc.buffer<2048xui32, "q4gsw">`."""

    name = "vkc.buffer"
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    layout: StringAttr

    @staticmethod
    def get(shape: Sequence[int], element: Attribute, layout: str = ROW_MAJOR) -> BufferType:
        return BufferType(ArrayAttr([IntAttr(int(d)) for d in shape]), element, StringAttr(layout))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        dims, elem = parser.parse_ranked_shape()
        layout = ROW_MAJOR
        if parser.parse_optional_punctuation(","):
            layout = parser.parse_str_literal()
        parser.parse_punctuation(">")
        return (ArrayAttr([IntAttr(d) for d in dims]), elem, StringAttr(layout))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        for d in self.dims:
            printer.print_string(f"{d}x")
        printer.print_attribute(self.element_type)
        if self.layout.data != ROW_MAJOR:
            printer.print_string(f', "{self.layout.data}"')
        printer.print_string(">")

    def verify(self) -> None:
        if any(d < 1 for d in self.dims):
            raise VerifyException(f"buffer dimensions must be positive, got {list(self.dims)}")
        try:
            dtype_name(self.element_type)
        except ValueError as e:
            raise VerifyException(str(e)) from None

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def dtype(self) -> str:
        return dtype_name(self.element_type)

    @property
    def nbytes(self) -> int:
        return 4 * self.numel


def binding_accepts(dtype: str, buffer: BufferType) -> bool:
    """A `u32` binding reads raw 32-bit words (packed weights, or any tensor for
    the type-generic kernels); an `f32`/`i32` binding reads a row-major tensor of
    32-bit numbers (the kernel's DTYPE constant picks the interpretation)."""
    if dtype == "u32":
        return True
    return buffer.dtype in ("f32", "i32") and buffer.layout.data == ROW_MAJOR


READ, WRITE = "read", "write"


@irdl_attr_definition
class BindingAttr(ParametrizedAttribute):
    """One storage-buffer binding of a kernel, in binding order: its name, the
    elements it reads (`f32`, `i32`, or `ui32` raw words) and whether the kernel
    writes it: `#vkc.binding<"x", f32>`, `#vkc.binding<"y", f32, write>`."""

    name = "vkc.binding"
    binding: StringAttr
    element_type: Attribute
    access: StringAttr

    @staticmethod
    def get(name: str, dtype: str, writes: bool = False) -> BindingAttr:
        return BindingAttr(
            StringAttr(name), BINDING_DTYPES[dtype], StringAttr(WRITE if writes else READ)
        )

    @staticmethod
    def of(binding: Binding) -> BindingAttr:
        """The attribute of a catalogue binding (qopt.kernels)."""
        return BindingAttr.get(binding.name, binding.dtype, binding.writes)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        name = parser.parse_str_literal()
        parser.parse_punctuation(",")
        elem = parser.parse_type()
        access = READ
        if parser.parse_optional_punctuation(","):
            parser.parse_keyword(WRITE)
            access = WRITE
        parser.parse_punctuation(">")
        return (StringAttr(name), elem, StringAttr(access))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_string_literal(self.binding.data)
        printer.print_string(", ")
        printer.print_attribute(self.element_type)
        if self.writes:
            printer.print_string(f", {WRITE}")
        printer.print_string(">")

    def verify(self) -> None:
        if not self.binding.data:
            raise VerifyException("a binding needs a name")
        if self.element_type not in BINDING_DTYPES.values():
            raise VerifyException(
                f"binding {self.binding.data} reads {self.element_type}: use f32, i32 or ui32"
            )
        if self.access.data not in (READ, WRITE):
            raise VerifyException(f"binding access must be {READ} or {WRITE}")

    @property
    def dtype(self) -> str:
        return dtype_name(self.element_type)

    @property
    def writes(self) -> bool:
        return self.access.data == WRITE

    @property
    def is_status(self) -> bool:
        """The kernel's index status word (`#vkc.binding<"status", ui32, write>`)."""
        return is_status_binding(self.binding.data, self.dtype, self.writes)


@irdl_attr_definition
class PushAttr(ParametrizedAttribute):
    """One 4-byte push constant of a kernel, in block order: `#vkc.push<"n", ui32>`
    (kinds `i32`, `ui32`, `f32`)."""

    name = "vkc.push"
    constant: StringAttr
    kind_type: Attribute

    @staticmethod
    def get(name: str, kind: str) -> PushAttr:
        return PushAttr(StringAttr(name), PUSH_KINDS[kind])

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        name = parser.parse_str_literal()
        parser.parse_punctuation(",")
        kind = parser.parse_type()
        parser.parse_punctuation(">")
        return (StringAttr(name), kind)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_string_literal(self.constant.data)
        printer.print_string(", ")
        printer.print_attribute(self.kind_type)
        printer.print_string(">")

    def verify(self) -> None:
        if not self.constant.data:
            raise VerifyException("a push constant needs a name")
        if self.kind_type not in PUSH_KINDS.values():
            raise VerifyException(
                f"push constant {self.constant.data} is {self.kind_type}: use i32, ui32 or f32"
            )

    @property
    def kind(self) -> str:
        """`i32`, `u32` or `f32` (the kernel catalogue's push kinds)."""
        for name, attr in PUSH_KINDS.items():
            if attr == self.kind_type:
                return name
        raise ValueError(f"push constant kind {self.kind_type}")

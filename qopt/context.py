"""The xDSL context qopt parses and prints in, and module text in and out.

Each context gets its own builtin dialect object whose resource interface is a
`qopt.resources.ResourceSlot`, so `dense_resource` blobs are read into and
printed from the weight store of the module at hand (`parse_module`,
`print_module`), never a process-wide table.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Builtin,
    ComplexType,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    ModuleOp,
)
from xdsl.dialects.func import Func
from xdsl.frontend.mlir import MLIRFrontend
from xdsl.ir import Dialect
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.syntax_printer import SyntaxPrinter
from xdsl.targets.mlir import MLIRTarget

from qopt.dialects import get_all_dialects
from qopt.resources import (
    DEFAULT_ELIDE_BYTES,
    ELIDED_KEY,
    ResourceSlot,
    WeightStore,
    attach,
    weights_of,
)


def builtin_dialect() -> Dialect:
    """xDSL's builtin dialect with a resource slot of its own."""
    return Dialect("builtin", list(Builtin.operations), list(Builtin.attributes), [ResourceSlot()])


def resource_slot(ctx: Context) -> ResourceSlot:
    """The resource slot of a qopt context (one from `make_context` or
    `load_qopt_dialects` always has one)."""
    slot = ctx.get_dialect("builtin").get_interface(ResourceSlot)
    if slot is None:
        raise ValueError(
            "the context's builtin dialect has no qopt ResourceSlot: use make_context()"
        )
    return slot


class WeightPrinter(Printer):
    """xDSL's printer, printing a blob that the context's resource slot leaves out
    as `dense_resource<__elided__>`, as MLIR does: the text says that it carries no
    data (and a pass that needs it says so, `qopt.resources.require_weights`)."""

    def __init__(self, slot: ResourceSlot, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slot = slot

    def print_resource_handle(self, dialect: str, handle: str) -> None:
        if dialect == "builtin" and self.slot.elides(handle):
            self.print_string(ELIDED_KEY)
            return
        super().print_resource_handle(dialect, handle)


class WeightSyntaxPrinter(WeightPrinter, SyntaxPrinter):
    """`WeightPrinter` with xDSL's syntax highlighting (`--syntax-highlight`)."""


@dataclass(frozen=True)
class WeightMLIRTarget(MLIRTarget):
    """xDSL's `mlir` target printing through `WeightPrinter` (qopt-opt's `-t mlir`)."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        cls = WeightSyntaxPrinter if self.syntax_highlight else WeightPrinter
        printer = cls(
            resource_slot(ctx),
            stream=output,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)


_FLOAT_BITS: dict[type, tuple[type[np.unsignedinteger[Any]], type[np.floating[Any]] | None]] = {
    Float16Type: (np.uint16, np.float16),
    BFloat16Type: (np.uint16, None),  # the upper half of an f32
    Float32Type: (np.uint32, np.float32),
    Float64Type: (np.uint64, np.float64),
}


@dataclass
class _HexElement(AttrParser._TensorLiteralElement):  # pyright: ignore[reportPrivateUsage]
    """A `0x...` element of a dense literal. For a float element type MLIR reads it
    as the element's bit pattern (what xDSL's printer writes for -inf and NaN:
    `dense<0xff800000> : tensor<f32>`); xDSL 0.75's parser reads it as the integer
    4286578688, a silent change of the value on a print/parse round trip."""

    def to_type(self, parser: AttrParser, type: AnyFloat | IntegerType | IndexType | ComplexType):
        if not isinstance(type, AnyFloat):
            return super().to_type(parser, type)
        kinds = _FLOAT_BITS.get(type.__class__)
        assert isinstance(self.value, int)
        if kinds is None:
            parser.raise_error(f"a hexadecimal literal of {type} is not supported", self.span)
        bits, floating = kinds
        if self.value >= 1 << (8 * np.dtype(bits).itemsize):
            parser.raise_error(
                f"the hexadecimal literal {self.span.text} is wider than its element type {type}",
                self.span,
            )
        if floating is None:  # bf16: the upper 16 bits of the f32 pattern
            return float(np.array([self.value << 16], np.uint32).view(np.float32)[0])
        return float(np.array([self.value], bits).view(floating)[0])


class QoptParser(Parser):
    """xDSL's parser, reading a hexadecimal element of a float dense literal as its
    bit pattern, as MLIR does (`_HexElement`)."""

    def _parse_tensor_literal_element(self) -> AttrParser._TensorLiteralElement:
        element = super()._parse_tensor_literal_element()
        if (
            type(element.value) is int
            and element.value >= 0
            and element.span.text[:2] in ("0x", "0X")
        ):
            return _HexElement(element.is_negative, element.value, element.span)
        return element


@dataclass(frozen=True)
class QoptMLIRFrontend(MLIRFrontend):
    """xDSL's `mlir` frontend parsing with `QoptParser` (qopt-opt's `.mlir` input)."""

    def parse(self, ctx: Context, input: IO[bytes], input_name: str = "input") -> ModuleOp:
        return QoptParser(ctx, input.read(), input_name).parse_module(not self.no_implicit_module)


def register_qopt_dialects(ctx: Context) -> None:
    for name, factory in get_all_dialects().items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)


def load_qopt_dialects(ctx: Context) -> None:
    """builtin (with its resource slot), func, arith and qopt's dialects."""
    for dialect in (builtin_dialect(), Func, Arith):
        if dialect.name not in ctx.registered_dialect_names:
            ctx.load_dialect(dialect)
    register_qopt_dialects(ctx)


def make_context() -> Context:
    ctx = Context()
    load_qopt_dialects(ctx)
    return ctx


def parse_module(text: str, name: str = "<text>", ctx: Context | None = None) -> ModuleOp:
    """Parse MLIR text into a module owning a new weight store (its blobs from the
    text's `dialect_resources` section)."""
    ctx = ctx or make_context()
    store = WeightStore()
    with resource_slot(ctx).bound(store):
        module = QoptParser(ctx, text, name).parse_module()
    return attach(module, store)


def print_module(
    module: ModuleOp,
    ctx: Context | None = None,
    elide_larger_than: int | None = DEFAULT_ELIDE_BYTES,
    print_generic: bool = False,
) -> str:
    """MLIR text of `module` with its blobs in `dialect_resources` (those above
    `elide_larger_than` bytes printed as `dense_resource<__elided__>`; None prints
    every blob)."""
    ctx = ctx or make_context()
    out = io.StringIO()
    slot = resource_slot(ctx)
    with slot.bound(weights_of(module), elide_larger_than):
        printer = WeightPrinter(slot, stream=out, print_generic_format=print_generic)
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
    return out.getvalue()

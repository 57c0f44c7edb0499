"""MLIR's `ml_program` globals: the state a program keeps between calls.

A buffer the exported program mutates (an LLM's KV cache, a step counter) is a
module-level mutable global named after the buffer's fully qualified name, with
the buffer's value at export as its initial value; each function reads it with
`global_load` and writes its new value with `global_store`, as in MLIR (and IREE,
which runs stateful programs the same way):

    ml_program.global private mutable @layers.0.k(dense<0.0> : tensor<2x8xf32>) : tensor<2x8xf32>
    func.func @forward(...) {
      %k = ml_program.global_load @layers.0.k : tensor<2x8xf32>
      ...
      ml_program.global_store @layers.0.k = %k2 : tensor<2x8xf32>
    }

xDSL's `ml_program` dialect has `global` and `global_load_const` only; qopt
defines the dialect with MLIR's `global_load` and `global_store` too (and a
`global` whose verifier checks its initial value), the smallest extension, worth
proposing upstream. qopt's rules on top of MLIR's, checked by the verifiers so
every target can rely on them: a function stores each global at most once, and
reads it only before that store (a call sees the state it starts with, and leaves
the state the store writes: CoreML's `read_state` / `coreml_update_state`, a
Vulkan buffer updated in place).
"""

from __future__ import annotations

from typing import ClassVar, Self, cast

from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
)
from xdsl.dialects.ml_program import GlobalLoadConstantOp
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import SymbolOpInterface, SymbolTable, SymbolUserOpInterface
from xdsl.utils.exceptions import VerifyException

from qopt.errors import QoptError


@irdl_op_definition
class GlobalOp(IRDLOperation):
    """`ml_program.global [visibility] [mutable] @name[(value)] : type`.

    qopt's globals are tensors; a mutable one is program state, its `value` the
    state a session starts with (absent: zeros)."""

    name = "ml_program.global"

    sym_name = prop_def(SymbolNameConstraint())
    type = prop_def(TensorType)
    is_mutable = opt_prop_def(UnitAttr)
    value = opt_prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    sym_visibility = opt_prop_def(StringAttr)

    traits = traits_def(SymbolOpInterface())

    def __init__(
        self,
        sym_name: str,
        type: TensorType,
        value: DenseIntOrFPElementsAttr | DenseResourceAttr | None,
        *,
        mutable: bool = True,
        visibility: str = "private",
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "type": type,
                "is_mutable": UnitAttr() if mutable else None,
                "value": value,
                "sym_visibility": StringAttr(visibility),
            }
        )

    @property
    def mutable(self) -> bool:
        return self.is_mutable is not None

    def verify_(self) -> None:
        if self.value is None:
            if not self.mutable:
                raise VerifyException(f"immutable global @{self.sym_name.data} has no value")
            return
        if self.value.type != self.type:
            raise VerifyException(
                f"global @{self.sym_name.data}: value of type {self.value.type} for a "
                f"global of type {self.type}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.sym_visibility is not None:
            printer.print_string(f"{self.sym_visibility.data} ")
        if self.mutable:
            printer.print_string("mutable ")
        printer.print_symbol_name(self.sym_name)
        if self.value is not None:
            printer.print_string("(")
            printer.print_attribute(self.value)
            printer.print_string(")")
        printer.print_string(" : ")
        printer.print_attribute(self.type)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        visibility = None
        for keyword in ("private", "public", "nested"):
            if parser.parse_optional_keyword(keyword):
                visibility = keyword
                break
        mutable = parser.parse_optional_keyword("mutable") is not None
        sym_name = parser.parse_symbol_name().data
        value: DenseIntOrFPElementsAttr | DenseResourceAttr | None = None
        if parser.parse_optional_punctuation("("):
            literal = parser.parse_attribute()
            if not isinstance(literal, DenseIntOrFPElementsAttr | DenseResourceAttr):
                parser.raise_error(f"ml_program.global @{sym_name}: expected a dense value")
            value = cast(DenseIntOrFPElementsAttr | DenseResourceAttr, literal)
            parser.parse_punctuation(")")
        parser.parse_punctuation(":")
        type = parser.parse_type()
        if not isinstance(type, TensorType):
            parser.raise_error(f"ml_program.global @{sym_name}: expected a tensor type")
        type = cast(TensorType[Attribute], type)
        op = cls(sym_name, type, value, mutable=mutable, visibility=visibility or "private")
        if visibility is None:
            op.properties.pop("sym_visibility")
        op.attributes |= parser.parse_optional_attr_dict()
        return op


def lookup_global(op: Operation, name: SymbolRefAttr) -> GlobalOp:
    """The global `name` refers to from `op` (VerifyException if there is none)."""
    found = SymbolTable.lookup_symbol(op, name)
    if not isinstance(found, GlobalOp):
        raise VerifyException(f"'{op.name}': @{name.string_value()} is not an ml_program.global")
    return found


class _GlobalUse(SymbolUserOpInterface):
    def verify(self, op: Operation) -> None:
        assert isinstance(op, GlobalLoadOp | GlobalStoreOp)
        target = lookup_global(op, op.global_name)
        value = op.result if isinstance(op, GlobalLoadOp) else op.value
        if value.type != target.type:
            raise VerifyException(
                f"'{op.name}' of @{op.global_name.string_value()}: type {value.type}, the "
                f"global's is {target.type}"
            )
        if isinstance(op, GlobalStoreOp):
            if not target.mutable:
                raise VerifyException(
                    f"'{op.name}': @{op.global_name.string_value()} is not mutable"
                )
            op.check_single_store()


def _same_global(a: SymbolRefAttr, b: SymbolRefAttr) -> bool:
    return a.string_value() == b.string_value()


@irdl_op_definition
class GlobalLoadOp(IRDLOperation):
    """`%v = ml_program.global_load @name : type`: the global's value."""

    name = "ml_program.global_load"

    global_name = prop_def(SymbolRefAttr, prop_name="global")
    result = result_def(TensorType)

    traits = traits_def(_GlobalUse())
    assembly_format: ClassVar[str | None] = "$global attr-dict `:` type($result)"

    def __init__(self, name: str, type: TensorType):
        super().__init__(properties={"global": SymbolRefAttr(name)}, result_types=[type])


@irdl_op_definition
class GlobalStoreOp(IRDLOperation):
    """`ml_program.global_store @name = %v : type`: the global's value from now on.

    At most one per global in a function, after every load of it there."""

    name = "ml_program.global_store"

    global_name = prop_def(SymbolRefAttr, prop_name="global")
    value = operand_def(TensorType)

    traits = traits_def(_GlobalUse())
    assembly_format: ClassVar[str | None] = "$global `=` $value attr-dict `:` type($value)"

    def __init__(self, name: str, value: SSAValue):
        super().__init__(properties={"global": SymbolRefAttr(name)}, operands=[value])

    def check_single_store(self) -> None:
        block = self.parent_block()
        if block is None:
            return
        after = False
        for op in block.walk():
            if op is self:
                after = True
                continue
            if isinstance(op, GlobalStoreOp) and _same_global(op.global_name, self.global_name):
                raise VerifyException(
                    f"'{self.name}': @{self.global_name.string_value()} is stored more than "
                    "once in one function (a call writes each state once)"
                )
            if (
                after
                and isinstance(op, GlobalLoadOp)
                and _same_global(op.global_name, self.global_name)
            ):
                raise VerifyException(
                    f"'ml_program.global_load' of @{self.global_name.string_value()} after "
                    "its store (a call reads the state it starts with)"
                )


def globals_of(op: Operation) -> list[GlobalOp]:
    """The globals declared in `op`'s body (a module), in order."""
    return [g for g in op.walk() if isinstance(g, GlobalOp)]


def refuse_state(module: Operation, pass_name: str) -> None:
    """A QoptError for a pass that does not compile stateful programs yet."""
    names = [g.sym_name.data for g in globals_of(module) if g.mutable]
    if names:
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        raise QoptError(
            f"{pass_name}: the program keeps state between calls ({shown}: buffers it "
            "mutates, e.g. a KV cache); this target does not compile stateful programs "
            "yet: run it with qopt.session(module), the reference interpreter"
        )


MLProgram = Dialect(
    "ml_program",
    [GlobalOp, GlobalLoadOp, GlobalStoreOp, GlobalLoadConstantOp],
)

__all__ = [
    "GlobalLoadOp",
    "GlobalOp",
    "GlobalStoreOp",
    "MLProgram",
    "globals_of",
    "lookup_global",
    "refuse_state",
]

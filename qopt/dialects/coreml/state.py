"""`coreml` program state (iOS18): `read_state`, `coreml_update_state`.

A Core ML state (`ct.StateType`, an `MLState` on device) is a tensor the caller
keeps between calls of the model (an LLM's KV cache). At the coreml level it is
what it is at the import level, a module-level `ml_program.global private
mutable` (qopt/dialects/ml_program.py), named by the buffer's fully qualified
name and typed by the state's MIL type, without an initial value (Core ML states
start as zeros: the caller makes them, `model.make_state()`); the ops name it
by symbol, as `ml_program.global_load` / `global_store` do:

    ml_program.global private mutable @layers.0.k_cache : tensor<1x2x40x8xf16>
    func.func @forward(...) attributes {coreml.opset = "iOS18"} {
      %k = coreml.read_state @layers.0.k_cache : tensor<1x2x40x8xf16>
      ...
      %k3 = coreml.coreml_update_state @layers.0.k_cache, %k2 : tensor<1x2x40x8xf16>
    }

MIL `read_state(input)` returns a copy of the state's current value; MIL
`coreml_update_state(state, value)` (the `coreml` namespace op that coremltools
serializes as `write_state` + `read_state`) writes `value` into the state and
returns it. The state's MIL name is the global's name made an identifier
(`mil_state_names`: `layers.0.k_cache` -> `layers_0_k_cache`), recorded in the
package's metadata so the reader names the global back.

The ops take MIL's element types for states (fp16, fp32, int8/16/32, uint8/16,
bool: `coreml_update_state`'s domain); Core ML packages hold fp16 states only
(coremltools 9 writes no other), which the emitter enforces, so
convert-to-coreml keeps float states in fp16.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import SymbolRefAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from qopt.dialects.coreml.base import CoremlOp, type_name
from qopt.dialects.ml_program import GlobalOp, lookup_global

STATE_TYPES = frozenset({"fp16", "fp32", "int8", "int16", "int32", "uint8", "uint16", "bool"})
"""MIL's element types of a state (`coreml_update_state`'s type domain)."""
PACKAGE_STATE_TYPES = frozenset({"fp16"})
"""The element types a Core ML package holds a state in (coremltools 9's
`State only support fp16 dtype`; iOS18's MLState)."""


class StateOp(CoremlOp):
    """A MIL op reading or writing a state, named by `state` (an `ml_program.global`)."""

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    """A state op reads or writes the caller's state: the effects keep xDSL's dead-code
    elimination from erasing a `coreml_update_state` whose result nothing reads (the
    base's Pure is inherited, as traits are, and these effects outweigh it)."""
    MIN_OPSET: ClassVar[int] = 18
    INPUT_TYPES: ClassVar[frozenset[str]] = STATE_TYPES
    MIL_STATE: ClassVar[str] = "input"
    """The MIL input name of the state (a function input of state type)."""

    @property
    def state_name(self) -> str:
        state = self.properties["state"]
        assert isinstance(state, SymbolRefAttr)
        return state.string_value()

    def state_global(self) -> GlobalOp:
        state = self.properties["state"]
        assert isinstance(state, SymbolRefAttr)
        try:
            found = lookup_global(self, state)
        except VerifyException as e:
            raise self.fail(str(e)) from None
        if not found.mutable:
            raise self.fail(f"@{self.state_name} is not a mutable global (a state)")
        return found

    def check_state(self, value: SSAValue) -> None:
        """`value` has the state's type, an element type a MIL state may have."""
        found = self.state_global()
        if value.type != found.type:
            raise self.fail(
                f"type {value.type} differs from the type of state @{self.state_name}, {found.type}"
            )
        elem = type_name(found.type.get_element_type())
        if elem not in STATE_TYPES:
            raise self.fail(f"a state must be one of {sorted(STATE_TYPES)}, got {elem}")


@irdl_op_definition
class ReadStateOp(StateOp):
    """MIL `read_state` (iOS18): a copy of the state's current value.

    See coremltools' `iOS18.states.read_state`."""

    name = "coreml.read_state"
    state = prop_def(SymbolRefAttr)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ()
    assembly_format: ClassVar[str | None] = "$state attr-dict `:` type($result)"

    def check(self) -> None:
        self.check_state(self.result)


@irdl_op_definition
class CoremlUpdateStateOp(StateOp):
    """MIL `coreml_update_state` (iOS18, `coreml` namespace): write `value` into
    the state and return it (serialized as `write_state` + `read_state`).

    See coremltools' `coreml_dialect.ops.coreml_update_state`."""

    name = "coreml.coreml_update_state"
    T: ClassVar = VarConstraint("T", base(TensorType))
    state = prop_def(SymbolRefAttr)
    value = operand_def(T)
    result = result_def(T)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("value",)
    MIL_STATE: ClassVar[str] = "state"
    assembly_format: ClassVar[str | None] = "$state `,` $value attr-dict `:` type($value)"

    def check(self) -> None:
        self.check_state(self.value)


def mutable_globals(module: Operation) -> list[GlobalOp]:
    """The states of a module (its mutable `ml_program.global`s), in order."""
    return [op for op in module.walk() if isinstance(op, GlobalOp) and op.mutable]


def _identifier(name: str) -> str:
    out = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    return out if out and not out[0].isdigit() else f"state_{out}"


def mil_state_names(states: Iterable[str], taken: Sequence[str] = ()) -> dict[str, str]:
    """Global name -> MIL state name: an identifier (characters other than ASCII
    letters, digits and `_` become `_`), numbered again (`_1`, `_2`) where two
    states, or a state and one of the `taken` names (the function's inputs), meet."""
    used = set(taken)
    out: dict[str, str] = {}
    for state in states:
        base_name = _identifier(state)
        name, i = base_name, 0
        while name in used:
            i += 1
            name = f"{base_name}_{i}"
        used.add(name)
        out[state] = name
    return out


__all__ = [
    "PACKAGE_STATE_TYPES",
    "STATE_TYPES",
    "CoremlUpdateStateOp",
    "ReadStateOp",
    "StateOp",
    "mil_state_names",
    "mutable_globals",
]


#: This family's ops, in the order the dialect lists them.
OPS: tuple[type[CoremlOp], ...] = (
    ReadStateOp,
    CoremlUpdateStateOp,
)

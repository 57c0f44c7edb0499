"""convert-to-coreml for program state: `ml_program` globals -> Core ML states (iOS18).

Each mutable global (a buffer the program mutates: a KV cache) stays a module-level
`ml_program.global`, retyped to its MIL state type (`convert_states`); each
`global_load` becomes `coreml.read_state` and each `global_store`
`coreml.coreml_update_state` (qopt/dialects/coreml/state.py), with a `cast`
between the state's type and the computation's where they differ:

    %k = ml_program.global_load @layers.0.k_cache : tensor<1x2x40x8xf32>
    ml_program.global_store @layers.0.k_cache = %k2 : tensor<1x2x40x8xf32>
  ->
    %s = coreml.read_state @layers.0.k_cache : tensor<1x2x40x8xf16>
    %k = coreml.cast %s {dtype = "fp32"} : (tensor<1x2x40x8xf16>) -> tensor<1x2x40x8xf32>
    %c = coreml.cast %k2 {dtype = "fp16"} : (tensor<1x2x40x8xf32>) -> tensor<1x2x40x8xf16>
    %u = coreml.coreml_update_state @layers.0.k_cache, %c : tensor<1x2x40x8xf16>

State types: Core ML packages hold fp16 states only (coremltools 9 refuses any
other; iOS18's MLState), so a float state (f32, f64, bf16) is an fp16 state, as
coremltools' torch frontend makes it: the cache is rounded to fp16 between calls
(its values between two calls differ from torch's fp32 buffer by fp16 rounding;
within a call, computation stays in the compute precision). An integer or bool
state takes its MIL type (int64 narrowed to int32, as everywhere on Core ML) at
the coreml level, which the interpreter runs; the emitter refuses to write it
(no package holds it), as it refuses a state whose initial value is not all
zeros (a Core ML state starts as zeros). States need iOS18: below it the pass is
a QoptError naming iOS18.

A state no function reads (its loads unused: written before any read, like
transformers' `cumulative_length`) is dropped (`drop_write_only_states`): no output
depends on it, and Core ML could not hold an integer state anyway.

Immutable globals (`ml_program.global_load_const`) become `coreml.const`s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntegerType,
    ModuleOp,
    SymbolRefAttr,
    TensorType,
    f16,
)
from xdsl.dialects.ml_program import GlobalLoadConstantOp
from xdsl.ir import Attribute, SSAValue

from qopt.dialects import coreml
from qopt.dialects import ml_program as mlp
from qopt.dialects.coreml import STATE_TYPES, mil_dtype_name, storage_dtype, type_name
from qopt.dialects.queries import initial_value
from qopt.dialects.tensors import elem_of, shape_of
from qopt.errors import QoptError
from qopt.lowering.convert_to_coreml.lowering import Lowering, RuleTable, mil_elem, mil_tensor
from qopt.resources import make_resource, printable_inline, weights_of

RULES = RuleTable()


def _shown(names: Sequence[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def state_elem(op: mlp.GlobalOp) -> Attribute:
    """The MIL element type of a state: fp16 for a float global (what Core ML
    holds), else its MIL type (int64 -> int32), which must be a MIL state type."""
    elem = op.type.get_element_type()
    if isinstance(elem, AnyFloat):
        return f16
    out = mil_elem(elem)
    name = type_name(out)
    if name not in STATE_TYPES:
        raise QoptError(
            f"convert-to-coreml: state @{op.sym_name.data} is a {name} tensor; Core ML states "
            f"are {', '.join(sorted(STATE_TYPES))}"
        )
    return out


def convert_states(module: ModuleOp, opset: int, target: str) -> None:
    """Retype every mutable global to its MIL state type (`state_elem`), its
    initial value converted (dropped where it is all zeros: a Core ML state
    starts as zeros); a QoptError below iOS18."""
    drop_write_only_states(module)
    states = [g for g in mlp.globals_of(module) if g.mutable]
    if not states:
        return
    if opset < 18:
        names = [g.sym_name.data for g in states]
        raise QoptError(
            f"convert-to-coreml: the program keeps state between calls ({_shown(names)}: "
            "buffers it mutates, e.g. a KV cache); Core ML states (MIL read_state / "
            f"coreml_update_state) exist from iOS18, the target is {target}: use "
            "convert-to-coreml{target=iOS18} / minimum_deployment_target='iOS18', or pass "
            "the states as inputs and outputs of every call (convert-to-coreml{states=io} "
            "/ states='io')"
        )
    for g in states:
        elem = state_elem(g)
        assert isinstance(elem, AnyFloat | IntegerType)  # a MIL state type
        type = TensorType(elem, shape_of(g.type))
        array = initial_value(g)
        converted = array.astype(storage_dtype(elem))
        if array.dtype.kind in "iu" and not np.array_equal(converted, array):
            raise QoptError(
                f"convert-to-coreml: state @{g.sym_name.data} starts with values outside "
                f"{mil_dtype_name(elem)}, Core ML's type for it"
            )
        value: Attribute | None = None
        if converted.any():
            if converted.size <= 16 and printable_inline(converted):
                value = DenseIntOrFPElementsAttr(type, BytesAttr(converted.tobytes()))
            else:
                key = g.sym_name.data.replace(".", "_")
                value = make_resource(key, converted, type, weights_of(module))
        g.properties["type"] = type
        if value is None:
            g.properties.pop("value", None)
        else:
            g.properties["value"] = value


def drop_write_only_states(module: ModuleOp) -> list[str]:
    """Remove the states no function reads (every `global_load` of them unused: e.g.
    transformers' `cumulative_length`, overwritten from `cache_position` before any
    use): their stores cannot change an output, so the package keeps no state for
    them (`read_state` of one is then an error naming the package's states). The
    names dropped, in order."""
    loads: dict[str, list[mlp.GlobalLoadOp]] = {}
    stores: dict[str, list[mlp.GlobalStoreOp]] = {}
    for op in module.walk():
        if isinstance(op, mlp.GlobalLoadOp):
            loads.setdefault(op.global_name.string_value(), []).append(op)
        elif isinstance(op, mlp.GlobalStoreOp):
            stores.setdefault(op.global_name.string_value(), []).append(op)
    dropped: list[str] = []
    for g in mlp.globals_of(module):
        name = g.sym_name.data
        if not g.mutable or any(load.result.uses for load in loads.get(name, [])):
            continue
        for op in [*loads.get(name, []), *stores.get(name, [])]:
            op.detach()
            op.erase()
        g.detach()
        g.erase()
        dropped.append(name)
    return dropped


def erase_constant_globals(module: ModuleOp) -> None:
    """Drop the immutable globals (their loads became `coreml.const`s)."""
    for g in mlp.globals_of(module):
        if not g.mutable:
            g.detach()
            g.erase()


@RULES(mlp.GlobalLoadOp)
def _load(lw: Lowering, op: mlp.GlobalLoadOp) -> Sequence[SSAValue]:
    """`read_state` of the state, cast to the computation's type where they differ."""
    state = mlp.lookup_global(op, op.global_name)
    value = lw.build(
        coreml.ReadStateOp,
        [],
        state.type,
        state=SymbolRefAttr(op.global_name.string_value()),
    )
    return [lw.as_elem(value, mil_tensor(op.result.type).get_element_type())]


@RULES(mlp.GlobalStoreOp)
def _store(lw: Lowering, op: mlp.GlobalStoreOp) -> Sequence[SSAValue]:
    """`coreml_update_state` of the value, cast to the state's type first."""
    state = mlp.lookup_global(op, op.global_name)
    value = lw.as_elem(op.value, state.type.get_element_type())
    update = coreml.CoremlUpdateStateOp.build(
        operands=[value],
        properties={"state": SymbolRefAttr(op.global_name.string_value())},
        result_types=[value.type],
    )
    lw.emit(update)
    return []


@RULES(GlobalLoadConstantOp)
def _load_const(lw: Lowering, op: GlobalLoadConstantOp) -> Sequence[SSAValue]:
    """An immutable global's value as a `coreml.const`."""
    name = op.global_attr
    assert isinstance(name, SymbolRefAttr)
    found = mlp.lookup_global(op, name)
    elem = mil_elem(elem_of(op.results[0]))
    array = initial_value(found).astype(storage_dtype(elem))
    return [lw.const(array, elem, name.string_value().replace(".", "_"))]

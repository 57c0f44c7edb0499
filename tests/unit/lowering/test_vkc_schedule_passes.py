"""vkc-plan-buffers and vkc-insert-barriers: translation validation and idempotence.

The vkc interpreter gives a planned buffer a view into its slot's shared memory, as
the runtime does, so a plan that let two live buffers overlap changes the outputs:
each example program is interpreted right after `convert-to-vkc{schedule=false}`
(every buffer its own memory, no barriers), after vkc-plan-buffers and after
vkc-insert-barriers, and the outputs must be identical. The passes are idempotent,
and `convert-to-vkc` (which still runs both at its end) gives the same program as
the three passes in sequence.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64

import qopt
from qopt.context import make_context
from qopt.dialects import vkc
from qopt.examples import export_model, random_inputs
from qopt.lowering.convert_to_vkc import ConvertToVkcPass
from qopt.lowering.vkc_insert_barriers import VkcInsertBarriersPass
from qopt.lowering.vkc_plan_buffers import VkcPlanBuffersPass

PAIRS = [("llama", "float"), ("llama", "8da4w"), ("convnet", "pt2e_static"), ("mlp", "w4g32")]


@functools.cache
def exported(model: str, scheme: str):
    return export_model(model, scheme)


def lowered(model: str, scheme: str, schedule: bool) -> ModuleOp:
    module = qopt.fuse(qopt.import_program(exported(model, scheme)))
    ConvertToVkcPass(schedule=schedule).apply(make_context(), module)
    module.verify()
    return module


def interpret(module: ModuleOp, model: str) -> tuple[np.ndarray, ...]:
    return qopt.interpret(module, *random_inputs(model, 7))


def count(module: ModuleOp, kind: type) -> int:
    return sum(isinstance(op, kind) for op in module.walk())


def plans(module: ModuleOp) -> list[tuple[int, int]]:
    """(planned, unplanned) bytes of every function."""
    found = []
    for f in module.ops:
        if isinstance(f, func.FuncOp):
            planned, unplanned = (
                f.attributes["vkc.planned_bytes"],
                f.attributes["vkc.unplanned_bytes"],
            )
            assert isinstance(planned, IntegerAttr)
            assert isinstance(unplanned, IntegerAttr)
            found.append((planned.value.data, unplanned.value.data))
    return found


def slots(module: ModuleOp) -> list[int]:
    return [op.slot.value.data for op in module.walk() if isinstance(op, vkc.AllocOp) and op.slot]


@pytest.mark.parametrize(("model", "scheme"), PAIRS)
def test_plan_and_barriers_keep_the_outputs(model: str, scheme: str) -> None:
    module = lowered(model, scheme, schedule=False)
    assert not slots(module)
    assert count(module, vkc.BarrierOp) == 0
    want = interpret(module, model)

    VkcPlanBuffersPass().apply(make_context(), module)
    module.verify()
    assert slots(module)
    ((planned, unplanned),) = plans(module)
    assert planned <= unplanned
    for got, ref in zip(interpret(module, model), want, strict=True):
        np.testing.assert_array_equal(got, ref)

    VkcInsertBarriersPass().apply(make_context(), module)
    module.verify()
    assert count(module, vkc.BarrierOp) > 0
    for got, ref in zip(interpret(module, model), want, strict=True):
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize(("model", "scheme"), PAIRS[:2])
def test_passes_are_idempotent_and_match_convert_to_vkc(model: str, scheme: str) -> None:
    module = lowered(model, scheme, schedule=False)
    VkcPlanBuffersPass().apply(make_context(), module)
    VkcInsertBarriersPass().apply(make_context(), module)
    once = str(module)
    VkcPlanBuffersPass().apply(make_context(), module)
    VkcInsertBarriersPass().apply(make_context(), module)
    assert str(module) == once
    default = lowered(model, scheme, schedule=True)
    assert slots(default) == slots(module)
    assert count(default, vkc.BarrierOp) == count(module, vkc.BarrierOp)
    assert plans(default) == plans(module)


def test_an_overlapping_plan_changes_the_outputs() -> None:
    """The check has teeth: every transient buffer forced into one slot (live buffers
    overlapping) gives different outputs in the interpreter."""
    module = lowered("llama", "float", schedule=False)
    want = interpret(module, "llama")
    for op in module.walk():
        if isinstance(op, vkc.AllocOp) and not op.is_status:
            op.properties["slot"] = IntegerAttr(0, i64)
    got = interpret(module, "llama")
    assert any(not np.array_equal(g, w) for g, w in zip(got, want, strict=True))

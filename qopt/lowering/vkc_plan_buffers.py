"""`vkc-plan-buffers`: transient vkc buffers whose lifetimes do not overlap share a
memory slot.

On every function at the vkc level that has no plan yet (no `vkc.planned_bytes`
attribute), each transient buffer (`vkc.alloc` without `status`: a status buffer
keeps its own memory, and so does a state buffer, `vkc.state`, which outlives the
call: no transient ever shares memory with program state) that a dispatch or an
output uses gets a slot
(`vkc.alloc {slot = n}`), greedily in order of first use, best fit: a slot is free
for a buffer when the last use of everything placed in it comes before the
buffer's first use (a use through `vkc.view` counts as a use of the viewed
buffer; an output keeps its buffer alive to the end; a host segment,
`vkc.host_call`, uses its `ins` and `outs` buffers at its place, so an `outs` buffer
never shares memory with an `ins` buffer of the same call). The function records its
planned and unplanned bytes (`vkc.planned_bytes`, `vkc.unplanned_bytes`).

Run it before vkc-insert-barriers: buffers sharing a slot are one memory to the
barrier pass, so planning after the barriers could add hazards no barrier covers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from qopt.dialects import vkc

log = logging.getLogger("qopt.vkc")

PLANNED = "vkc.planned_bytes"
UNPLANNED = "vkc.unplanned_bytes"
VKC_BODY = (
    vkc.InputOp,
    vkc.AllocOp,
    vkc.ConstantOp,
    vkc.StateOp,
    vkc.DispatchOp,
    vkc.HostCallOp,
    vkc.OutputOp,
)


def is_vkc_function(function: func.FuncOp) -> bool:
    """Whether `function`'s body is vkc code (lowered by convert-to-vkc or written so)."""
    return any(isinstance(op, VKC_BODY) for op in function.body.block.ops)


def _bytes(alloc: vkc.AllocOp) -> int:
    type = alloc.result.type
    assert isinstance(type, vkc.BufferType)
    return type.nbytes


def plan_buffers(ops: list[Operation]) -> dict[str, int]:
    """Give every used transient buffer of `ops` (one function body, in order) a memory
    slot shared with buffers whose lifetimes do not overlap (greedy, best fit); returns
    planned/unplanned bytes and the slot count."""
    first: dict[SSAValue, int] = {}
    last: dict[SSAValue, int] = {}
    allocs: list[vkc.AllocOp] = []
    for index, op in enumerate(ops):
        if isinstance(op, vkc.AllocOp):
            if not op.is_status:  # a status buffer keeps its own memory (never a slot)
                allocs.append(op)
            continue
        if isinstance(op, vkc.DispatchOp | vkc.OutputOp | vkc.HostCallOp):
            for operand in op.operands:
                root = vkc.root_buffer(operand)
                if isinstance(root.owner, vkc.AllocOp):
                    first.setdefault(root, index)
                    last[root] = len(ops) if isinstance(op, vkc.OutputOp) else index
    slots: list[list[int]] = []  # [size, busy until]
    unplanned = 0
    order = sorted(
        (a for a in allocs if a.result in first), key=lambda a: (first[a.result], -_bytes(a))
    )
    for alloc in order:
        need = _bytes(alloc)
        unplanned += need
        start, end = first[alloc.result], last[alloc.result]
        free = [i for i, (_, busy) in enumerate(slots) if busy < start]
        fitting = [i for i in free if slots[i][0] >= need]
        if fitting:
            chosen = min(fitting, key=lambda i: slots[i][0])
        elif free:
            chosen = max(free, key=lambda i: slots[i][0])
        else:
            slots.append([0, -1])
            chosen = len(slots) - 1
        slots[chosen][0] = max(slots[chosen][0], need)
        slots[chosen][1] = end
        alloc.properties["slot"] = IntegerAttr(chosen, i64)
    planned = sum(size for size, _ in slots)
    log.info("buffer plan: %d bytes in %d slots (unplanned %d)", planned, len(slots), unplanned)
    return {"planned": planned, "unplanned": unplanned, "slots": len(slots)}


def plan_function(function: func.FuncOp) -> dict[str, int]:
    """Plan `function`'s transient buffers (replacing any slots it had) and record the
    plan's bytes on it."""
    ops = list(function.body.block.ops)
    for op in ops:
        if isinstance(op, vkc.AllocOp) and op.slot is not None:
            del op.properties["slot"]
    stats = plan_buffers(ops)
    function.attributes[PLANNED] = IntegerAttr(stats["planned"], i64)
    function.attributes[UNPLANNED] = IntegerAttr(stats["unplanned"], i64)
    return stats


@dataclass(frozen=True)
class VkcPlanBuffersPass(ModulePass):
    """Share memory slots between transient vkc buffers (see the module docstring)."""

    name = "vkc-plan-buffers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.ops:
            if not isinstance(function, func.FuncOp) or PLANNED in function.attributes:
                continue
            if is_vkc_function(function):
                plan_function(function)


__all__ = ["VkcPlanBuffersPass", "is_vkc_function", "plan_buffers", "plan_function"]

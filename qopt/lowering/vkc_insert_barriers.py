"""`vkc-insert-barriers`: a `vkc.barrier` before each dispatch that touches memory an
earlier dispatch since the last barrier wrote (read after write, write after
write) or read (write after read).

What a dispatch reads and writes comes from its kernel symbol's typed signature
(`#vkc.binding<..., write>` on `vkc.kernel`); memory is a buffer seen through its
views, or a whole memory slot for planned buffers (run vkc-plan-buffers first).
Barriers already in the function are kept and count as synchronisation points, so
the pass can run again without adding any. A host segment (`vkc.host_call`) is one
too: the device work before it finishes before the host reads its buffers, and the
work after it starts in a new submission, after the host wrote its results; no
barrier is needed on either side of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from qopt.dialects import vkc


def memory_of(value: SSAValue) -> object:
    """The memory a buffer operand lives in: its memory slot, or the buffer itself."""
    root = vkc.root_buffer(value)
    owner = root.owner
    if isinstance(owner, vkc.AllocOp) and owner.slot is not None:
        return ("slot", owner.slot.value.data)
    return root


def insert_barriers(function: func.FuncOp) -> int:
    """Insert the barriers `function`'s dispatches need; returns how many it added."""
    block = function.body.block
    written: set[object] = set()
    read: set[object] = set()
    added = 0
    for op in list(block.ops):
        if isinstance(op, vkc.BarrierOp | vkc.HostCallOp):
            written, read = set(), set()
            continue
        if not isinstance(op, vkc.DispatchOp):
            continue
        bindings = op.kernel_op().bindings.data
        reads = {memory_of(v) for b, v in zip(bindings, op.buffers, strict=True) if not b.writes}
        writes = {memory_of(v) for b, v in zip(bindings, op.buffers, strict=True) if b.writes}
        if reads & written or writes & (written | read):
            barrier = vkc.BarrierOp()
            barrier.location = op.location
            block.insert_op_before(barrier, op)
            added += 1
            written, read = set(), set()
        written |= writes
        read |= reads
    return added


@dataclass(frozen=True)
class VkcInsertBarriersPass(ModulePass):
    """Insert the memory barriers between dependent vkc dispatches (module docstring)."""

    name = "vkc-insert-barriers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.ops:
            if isinstance(function, func.FuncOp):
                insert_barriers(function)


__all__ = ["VkcInsertBarriersPass", "insert_barriers", "memory_of"]

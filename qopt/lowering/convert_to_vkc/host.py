"""The host fallback of convert-to-vkc (`fallback=true`): ops without a Vulkan
lowering run on the host, by the reference interpreter, in `vkc.host_call` segments.

Without the option, `unsupported_ops` finds every op of the program that no rule
lowers (an op whose operands are all compile-time constants is folded, so it needs
none) and `missing_rules_error` lists them all in one QoptError that names the
option. With it, `lower_function` hands each such op to a `HostSegment` instead of
refusing it. A segment collects ops without a rule in program order and is emitted
(`flush`) only when something must read one of its results on the device (a lowered
op, a state op, the function's return), so a connected group of ops without a rule
becomes one segment, and so do unconnected ones between two such reads: one
download of each buffer the segment reads and one upload of each result the device
reads, per call. Ops with rules that do not depend on the segment are lowered
meanwhile, before it. When it is emitted, the segment also takes the later ops
without a rule (up to `LOOKAHEAD` ops ahead, before any state op) whose operands
are ready then: one host segment and one submission boundary fewer each. A state
op (which may write a state buffer in place) flushes the segment first and ends
the lookahead, so the segment reads every buffer as the program order has it.

A constant a segment reads is a `vkc.constant` buffer, which the runtime reads from
the bundle's host copy (no transfer); `HostCallReport` gives each segment's ops and
transfer bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, Region, SSAValue

from qopt.dialects import ml_program as mlp
from qopt.dialects import vkc
from qopt.errors import QoptError, where
from qopt.lowering.convert_to_vkc.lowering import Buf, Lowering, Rules, abi_dtype

log = logging.getLogger("qopt.vkc")

STATE_OPS = (mlp.GlobalLoadOp, mlp.GlobalStoreOp)
"""Ops that read or write the program's state: never run in a host segment (and
never folded at compile time: fold-constants' NEVER_FOLDED)."""

LOOKAHEAD = 256
"""How many ops past the current one a segment looks for more ops to take (a bound
that keeps the pass linear in the program's size)."""

MAX_LISTED = 12
"""Ops without a rule named one by one in the error; the rest are counted."""


def unsupported_ops(functions: Iterable[func.FuncOp], rules: Rules) -> list[Operation]:
    """Every op of `functions` that convert-to-vkc would have to lower without a rule
    for it, in program order (what does not read the inputs was folded before, by
    fold-constants{target=vulkan})."""
    found: list[Operation] = []
    for function in functions:
        for op in function.body.block.ops:
            if isinstance(op, func.ReturnOp):
                break
            if isinstance(op, arith.ConstantOp):
                continue
            if type(op) not in rules and not isinstance(op, STATE_OPS):
                found.append(op)
    return found


def missing_rules_error(ops: list[Operation]) -> QoptError:
    """One error naming every op without a Vulkan lowering, and the fallback option."""
    listed = ", ".join(where(op) for op in ops[:MAX_LISTED])
    if len(ops) > MAX_LISTED:
        listed += f" and {len(ops) - MAX_LISTED} more"
    if len(ops) == 1:
        what, them = f"{listed} has", "it"
    else:
        what, them = f"{len(ops)} ops have", "them"
        listed = f": {listed}"
    return QoptError(
        f"convert-to-vkc: {what} no Vulkan lowering{listed if len(ops) > 1 else ''}; "
        f"run {them} on the host between the device's work with the host fallback "
        "(qopt.compile(..., target='vulkan', fallback=True); qopt-opt --host-fallback, or "
        "-p 'qopt-vulkan{fallback=true}' / 'convert-to-vkc{fallback=true}'), run fuse-quant "
        f"first, rewrite the model without {them}, or add a rule to a family of "
        "qopt/lowering/convert_to_vkc/"
    )


@dataclass
class HostSegment:
    """Ops without a rule waiting to run on the host, in program order."""

    rules: Rules
    ops: list[Operation] = field(default_factory=list)
    produced: set[SSAValue] = field(default_factory=set)
    taken: set[Operation] = field(default_factory=set)
    """Later ops a flushed segment ran ahead of their place (the lowering skips them)."""

    def add(self, op: Operation) -> None:
        self.ops.append(op)
        self.produced.update(op.results)

    def reads(self, op: Operation) -> bool:
        """Whether `op` reads a result of this segment."""
        return any(o in self.produced for o in op.operands)

    def flush(self, lowering: Lowering) -> None:
        """Emit the segment as one `vkc.host_call` (none if nothing reads its results)
        and make its results the buffers it writes; the segment is empty after it."""
        if not self.ops:
            return
        self._look_ahead(lowering)
        ops, self.ops, self.produced = self.ops, [], set()
        inside = set(ops)
        ins: list[SSAValue] = []
        for op in ops:
            for operand in op.operands:
                if operand not in ins and not (
                    isinstance(operand.owner, Operation) and operand.owner in inside
                ):
                    ins.append(operand)
        outs = [
            r for op in ops for r in op.results if any(u.operation not in inside for u in r.uses)
        ]
        if not outs:
            return  # nothing reads what the segment computes
        at = lowering.current
        lowering.current = ops[0]
        in_bufs = [_row_major(lowering, lowering.buffer(value), value) for value in ins]
        out_bufs: list[Buf] = []
        for value in outs:
            type = value.type
            assert isinstance(type, TensorType)
            out_bufs.append(lowering.alloc(type.get_shape(), abi_dtype(value)))
        block = Block(arg_types=[value.type for value in ins])
        mapping: dict[SSAValue, SSAValue] = dict(zip(ins, block.args, strict=True))
        for op in ops:
            block.add_op(op.clone(value_mapper=mapping))
        yields = vkc.HostYieldOp(operands=[[mapping[value] for value in outs]])
        yields.location = ops[-1].location
        block.add_op(yields)
        call = vkc.HostCallOp(
            operands=[[b.value for b in in_bufs], [b.value for b in out_bufs]],
            regions=[Region(block)],
        )
        lowering.emit(call)
        lowering.current = at
        down, up = call.transfer_bytes()
        for op in ops:
            log.info("host fallback: %s (%d bytes down, %d bytes up per call)", where(op), down, up)
        for value, buf in zip(outs, out_bufs, strict=True):
            lowering.values[value] = buf

    def _look_ahead(self, lowering: Lowering) -> None:
        """Take the later ops without a rule whose operands are ready now."""
        current = lowering.current
        op = current.next_op if current is not None else None
        for _ in range(LOOKAHEAD):
            if op is None or isinstance(op, (func.ReturnOp, *STATE_OPS)) or op in lowering.in_place:
                return
            ready = all(o in lowering.values or o in self.produced for o in op.operands)
            constant = all(isinstance(lowering.values.get(o), np.ndarray) for o in op.operands)
            empty = any(0 in _shape(r) for r in op.results)
            if type(op) not in self.rules and ready and not constant and not empty:
                self.add(op)
                self.taken.add(op)
            op = op.next_op


def _shape(value: SSAValue) -> tuple[int, ...]:
    type = value.type
    return tuple(type.get_shape()) if isinstance(type, TensorType) else ()


def _row_major(lowering: Lowering, buf: Buf, value: SSAValue) -> Buf:
    type = buf.value.type
    assert isinstance(type, vkc.BufferType)
    if type.layout.data != vkc.ROW_MAJOR:
        raise QoptError(
            f"convert-to-vkc: the host fallback reads {value.type} from a buffer in the "
            f"packed layout {type.layout.data!r}: only row-major buffers reach the host"
        )
    return buf


__all__ = ["STATE_OPS", "HostSegment", "missing_rules_error", "unsupported_ops"]

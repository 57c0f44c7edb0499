"""`vkc-fuse-elementwise`: fewer, fuller Vulkan dispatches.

Runs on vkc IR before buffers are planned (`convert-to-vkc{schedule=false}`, then this
pass, then `vkc-plan-buffers` and `vkc-insert-barriers`). It merges a dispatch P into
the dispatch C that consumes its result when that is exactly safe:

- elementwise chains: `unary`, `binary`, `copy_strided` and `fused_elementwise`
  dispatches are expression trees over strided loads (leaves) written through a
  strided store. P is inlined at C's loads of P's buffer, its own loads re-indexed
  into C's index space (composed maps that are again strided; checked element by
  element), giving one `fused_elementwise` dispatch (or one `copy_strided` when
  nothing but loads remains): RMSNorm's `+ eps`, `rsqrt`, `* x`, `* w` tail, SiLU-gate
  multiplies, rotary embedding's slices, `neg`, `cat` pieces, `* cos`, `* sin` and
  `+`, residual adds after their producer chains, and transposes read by strided
  loads instead of being copied;
- cat pieces: a buffer written in pieces along one axis (each piece a fusable
  dispatch writing its box) and read only by one fusable consumer goes into that
  consumer: each piece's loads windowed to its box (`L*_AX/LO/N`), the pieces chosen
  by a select on the index along the axis (rotary embedding's `cat(-x2, x1)`);
- squares into reductions: a `pow(x, 2)` / `x * x` / `square(x)` read only by a
  `reduce_rows` sum or mean becomes that reduction's `PRE = 1` (RMSNorm's mean of
  squares in one dispatch).

Producers are merged into consumers until nothing changes, then cat pieces, then
again (so a piece holds its own producers before it is merged).

Safe means: P's result is a transient buffer (`vkc.alloc`, seen through any views)
that P writes whole and alone, read only by C (a pure copy may be read by several
consumers: it is a load remap, inlined into each); no dispatch between P and C
writes what P reads; C does not write what P reads; the fused kernel stays within
fused_elementwise's 4 input buffers, 6 loads and 10 instructions; cat pieces cover
their buffer exactly, disjoint, and the consumer reads it with its own shape. Every
operation keeps its f32 (or i32) code and order (fused_elementwise runs unary.glsl's
and binary.glsl's code per instruction, the interpreter the same numpy references),
so the fused program computes bit for bit what the unfused one did.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ModuleOp,
)
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass

from qopt.dialects import vkc
from qopt.dialects.vkc.types import binding_accepts
from qopt.errors import QoptError
from qopt.kernels.extents import RANK
from qopt.kernels.opcodes import BINARY_OPS, DTYPES, FUSED_OPS, REDUCE_OPS, UNARY_OPS
from qopt.lowering.vkc_rewrite import (
    Expr,
    Kernel,
    KernelSymbols,
    Leaf,
    Node,
    as_kernel,
    buffer_uses,
    dispatch_reads,
    dispatch_writes,
    drop_unplaced,
    erase_dispatch,
    erase_unused,
    leaves_of,
    make_dispatch,
    materialize,
    moves_safely,
    norm_strides,
    rebuild,
    rewrite_functions,
    row_major,
    row_major_full,
    substitute,
)


def _whole(kernel: Kernel, root: SSAValue) -> bool:
    """Whether `kernel` writes every word of `root` row-major (y[i] for i < numel)."""
    buffer = root.type
    assert isinstance(buffer, vkc.BufferType)
    return (
        kernel.out_map == (0, row_major(kernel.dims))
        and kernel.n == math.prod(kernel.dims) == buffer.numel
    )


def _square_of(kernel: Kernel) -> Leaf | None:
    """x when kernel computes x * x / pow(x, 2) / square(x) in f32 from one load of x."""
    value = kernel.value
    if not isinstance(value, Node) or value.dtype != DTYPES["f32"]:
        return None
    if value.op == UNARY_OPS["square"]:
        (x,) = value.args
        return x if isinstance(x, Leaf) else None
    if value.op == FUSED_OPS["binary"] + BINARY_OPS["mul"]:
        x, y = value.args
        if isinstance(x, Leaf) and isinstance(y, Leaf) and x.key() == y.key():
            return x
        return None
    if value.op == FUSED_OPS["binary"] + BINARY_OPS["pow"]:
        x, e = value.args
        if not (isinstance(x, Leaf) and isinstance(e, Leaf)):
            return None
        owner, buffer = e.buffer.owner, e.buffer.type
        if not isinstance(owner, vkc.ConstantOp) or not isinstance(buffer, vkc.BufferType):
            return None
        if buffer.dtype != "f32":
            return None
        try:
            words = owner.words().view(np.float32)
        except QoptError:  # a blob elided from a printout: not fused
            return None
        if words.size == 0 or not bool(np.all(words == np.float32(2))):
            return None
        return x
    return None


def _kernel(op: vkc.DispatchOp) -> Kernel:
    kernel = as_kernel(op)
    assert kernel is not None
    return kernel


def _piece(
    op: vkc.DispatchOp, root: SSAValue, dims: tuple[int, ...]
) -> tuple[int, int, int, Kernel] | None:
    """(axis, start, size, kernel) when `op` is a fusable dispatch writing exactly the box
    [start, start + size) along one axis of `root` (6-D row-major `dims`), the rest of
    the box's dims whole; else None."""
    kernel = as_kernel(op)
    if kernel is None or vkc.root_buffer(kernel.out) is not root:
        return None
    if dispatch_writes(op) != {root} or kernel.n != math.prod(kernel.dims):
        return None
    if kernel.out_map[1] != norm_strides(kernel.dims, row_major_full(dims)):
        return None
    differ = [k for k in range(RANK) if kernel.dims[k] != dims[k]]
    steps = row_major_full(dims)
    if len(differ) > 1:
        return None
    axis = differ[0] if differ else 0
    if kernel.out_map[0] % steps[axis]:
        return None
    start = kernel.out_map[0] // steps[axis]
    if any(kernel.out_map[0] // steps[k] % dims[k] for k in range(RANK) if k != axis):
        return None
    return axis, start, kernel.dims[axis], kernel


def _windowed(expr: Expr, axis: int, start: int, size: int) -> Expr | None:
    """A piece's value in the whole buffer's index space: each load's digit on `axis`
    shifted by -start and clamped to the piece's [0, size) (None for a load already
    windowed, or a select: their index tests are the piece's own)."""
    if isinstance(expr, Leaf):
        if expr.window is not None:
            return None
        if expr.strides[axis] == 0:
            return expr
        return Leaf(expr.buffer, expr.offset, expr.strides, (axis, start, size))
    if expr.op == FUSED_OPS["select"]:
        return None
    return rebuild(expr, [_windowed(a, axis, start, size) for a in expr.args])


class _Fuser:
    def __init__(self, module: ModuleOp, block: Block):
        self.block = block
        self.symbols = KernelSymbols(module)
        self.fused = 0

    def run(self) -> int:
        """Producers into consumers until nothing changes, then cat pieces into their
        consumers (their own producers already in them), and again."""
        while True:
            while self._sweep(self.try_fuse):
                pass
            if not self._sweep(self.try_pieces):
                return self.fused

    def _sweep(self, attempt: Callable[[vkc.DispatchOp], bool]) -> bool:
        changed = False
        for op in list(self.block.ops):
            if op.parent is self.block and isinstance(op, vkc.DispatchOp) and attempt(op):
                changed = True
        return changed

    def try_fuse(self, op: vkc.DispatchOp) -> bool:
        producer = as_kernel(op)
        if producer is None:
            return False
        root = vkc.root_buffer(producer.out)
        owner = root.owner
        if not isinstance(owner, vkc.AllocOp) or owner.is_status or not _whole(producer, root):
            return False
        consumers: list[vkc.DispatchOp] = []
        for user, index in buffer_uses(root):
            if user is op:
                if dispatch_writes(op) != {root} or root in dispatch_reads(op):
                    return False
                continue
            if not isinstance(user, vkc.DispatchOp) or user.parent is not self.block:
                return False
            binding = user.kernel_op().bindings.data[index]
            if binding.writes:
                return False
            if user not in consumers:
                consumers.append(user)
        if not consumers:
            return False
        if len(consumers) > 1 and not isinstance(producer.value, Leaf):
            return False
        reads = {leaf.buffer for leaf in leaves_of(producer.value)}
        if not all(moves_safely(op, consumer, reads) for consumer in consumers):
            return False
        if len(consumers) == 1 and self._into_reduce(producer, consumers[0], root):
            return True
        replacements: list[tuple[vkc.DispatchOp, vkc.DispatchOp]] = []
        for consumer in consumers:
            target = as_kernel(consumer)
            value = None if target is None else substitute(target, producer, root)
            new = None
            if target is not None and value is not None:
                fused = Kernel(target.dims, target.n, value, target.out, target.out_map, consumer)
                new = materialize(self.symbols, fused)
            if new is None:  # give up: the dispatches built for earlier consumers go
                drop_unplaced(built for _, built in replacements)
                return False
            replacements.append((consumer, new))
        for consumer, new in replacements:
            self._replace(consumer, new)
        erase_dispatch(op)
        self.fused += 1
        return True

    def try_pieces(self, op: vkc.DispatchOp) -> bool:
        """A buffer written in pieces along one axis (a cat: each piece a fusable
        dispatch writing its box of the buffer, row-major) and read only by one fusable
        consumer with the buffer's own index map: the pieces' values, their loads
        windowed to their box, selected by the index along the axis, into the consumer."""
        first = as_kernel(op)
        if first is None:
            return False
        root = vkc.root_buffer(first.out)
        owner, buffer = root.owner, root.type
        if not isinstance(owner, vkc.AllocOp) or owner.is_status:
            return False
        assert isinstance(buffer, vkc.BufferType)
        dims = (1,) * (RANK - len(buffer.dims)) + tuple(buffer.dims)
        if len(dims) != RANK:
            return False
        writers: list[vkc.DispatchOp] = []
        consumer: vkc.DispatchOp | None = None
        for user, index in buffer_uses(root):
            if not isinstance(user, vkc.DispatchOp) or user.parent is not self.block:
                return False
            if user.kernel_op().bindings.data[index].writes:
                if user not in writers:
                    writers.append(user)
            elif consumer not in (None, user):
                return False
            else:
                consumer = user
        if consumer is None or len(writers) < 2 or consumer in writers:
            return False
        pieces = [_piece(w, root, dims) for w in writers]
        if any(p is None for p in pieces):
            return False
        boxes = sorted((p for p in pieces if p is not None), key=lambda p: p[1])
        axes = {p[0] for p in boxes}
        if len(axes) != 1:
            return False
        (axis,) = axes
        at = 0
        for _, start, size, _ in boxes:
            if start != at:
                return False
            at += size
        if at != dims[axis]:
            return False
        target = as_kernel(consumer)
        if target is None or target.dims != dims:
            return False
        for leaf in leaves_of(target.value):
            if leaf.buffer is root and (
                (leaf.offset, leaf.strides) != (0, row_major(dims)) or leaf.window is not None
            ):
                return False
        for writer in writers:
            reads = {leaf.buffer for leaf in leaves_of(_kernel(writer).value)}
            if root in reads or not moves_safely(writer, consumer, reads):
                return False
        parts = [_windowed(kernel.value, axis, start, size) for _, start, size, kernel in boxes]
        if any(p is None for p in parts):
            return False
        value: Expr | None = parts[-1]
        for (_, start, _, _), part in zip(reversed(boxes[1:]), reversed(parts[:-1]), strict=True):
            assert part is not None
            assert value is not None
            value = Node(FUSED_OPS["select"], DTYPES["i32"], (part, value), 0.0, 0.0, axis, start)
        assert value is not None

        def swap(expr: Expr) -> Expr:
            if isinstance(expr, Leaf):
                return value if expr.buffer is root else expr  # type: ignore[return-value]
            return Node(
                expr.op,
                expr.dtype,
                tuple(swap(a) for a in expr.args),
                expr.a,
                expr.b,
                expr.axis,
                expr.split,
            )

        fused = Kernel(
            target.dims, target.n, swap(target.value), target.out, target.out_map, consumer
        )
        new = materialize(self.symbols, fused)
        if new is None:
            return False
        self._replace(consumer, new)
        for writer in writers:
            erase_dispatch(writer)
        self.fused += 1
        return True

    def _into_reduce(self, producer: Kernel, consumer: vkc.DispatchOp, root: SSAValue) -> bool:
        kernel = consumer.kernel_op()
        if kernel.kernel.data != "reduce_rows":
            return False
        spec = kernel.spec_values()
        if spec.get("PRE", 0) != 0 or spec.get("OP") not in (REDUCE_OPS["sum"], REDUCE_OPS["mean"]):
            return False
        x = _square_of(producer)
        if x is None or (x.offset, x.strides) != (0, row_major(producer.dims)):
            return False
        if vkc.root_buffer(consumer.buffers[0]) is not root:
            return False
        source = x.buffer.type
        if not isinstance(source, vkc.BufferType) or not binding_accepts("f32", source):
            return False
        new = make_dispatch(
            self.symbols,
            "reduce_rows",
            {**spec, "PRE": 1},
            [x.buffer, *consumer.buffers[1:]],
            consumer.push_values(),
            consumer,
        )
        self._replace(consumer, new)
        erase_dispatch(producer.dispatch)
        self.fused += 1
        return True

    def _replace(self, old: vkc.DispatchOp, new: vkc.DispatchOp) -> None:
        self.block.insert_op_before(new, old)
        operands = list(old.operands)
        old.detach()
        old.erase()
        for value in operands:
            erase_unused(value)


def fuse_function(module: ModuleOp, function: func.FuncOp) -> int:
    """Fuse `function`'s dispatches (module docstring); returns how many merges it made."""
    return _Fuser(module, function.body.block).run()


@dataclass(frozen=True)
class VkcFuseElementwisePass(ModulePass):
    """Merge elementwise chains, copies and squares into fewer dispatches (module
    docstring)."""

    name = "vkc-fuse-elementwise"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_functions(op, fuse_function)


__all__ = ["VkcFuseElementwisePass", "fuse_function"]

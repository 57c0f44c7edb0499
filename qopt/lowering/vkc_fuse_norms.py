"""`vkc-fuse-norms`: an RMSNorm (and the residual add before it) in one dispatch.

Runs on vkc IR before buffers are planned, after `vkc-fuse-elementwise` (which leaves
an RMSNorm as two dispatches: `reduce_rows` mean of squares, `PRE = 1`, and one
`fused_elementwise` tail). It replaces

    R: m[r]    = mean_c(x[r, c] * x[r, c])                (reduce_rows, OP mean, PRE 1)
    T: y[r, c] = (x[r, c] * rsqrt(m[r] + eps)) * w[c]     (the tail; each multiply's and
                                                           the add's operands in either
                                                           order, the add's alpha 1)

with one `rms_norm_rows` dispatch at T's place, eps read from its constant buffer into
a push constant and w through an offset. When x is itself a transient buffer written
whole by one add `x = a + alpha * b` (a `binary` / `fused_elementwise` add of two
row-major loads: a residual add), that add is folded in too: the kernel computes x as
it reads and writes it out (`HAS_H`) when anything else reads x (the residual stream
the next add reads), so a decoder layer's two norms and two residual adds take two
dispatches instead of six.

Safe means: m is a transient buffer written whole by R alone and read only by T; T
writes its output whole, row-major over [rows, cols], and its loads read x[r, c],
m[r], one eps word and w[w_off + c] (checked element by element); no op between R (or
the add) and T writes what they read; every other reader of x comes after T. The
kernel runs the same f32 operations in the same order as reduce_rows and
binary/unary (see rms_norm_rows.glsl), so the fused program computes bit for bit what
the unfused one did.

It also puts a dynamic per-row quantization, `choose_qparams_rows` and the
`quantize_rows` of the same x with its scale and zero point (an 8da4w linear's input),
into one `quantize_rows_dynamic` dispatch (the same f32 operations as the two).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, f32, i32
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from qopt.dialects import vkc
from qopt.errors import QoptError
from qopt.kernels.opcodes import BINARY_OPS, DTYPES, FUSED_OPS, REDUCE_OPS, UNARY_OPS
from qopt.lowering.vkc_rewrite import (
    MAX_COMPOSE,
    Expr,
    KernelSymbols,
    Leaf,
    Node,
    as_kernel,
    buffer_uses,
    digit_index,
    dispatch_writes,
    erase_dispatch,
    make_dispatch,
    moves_safely,
    rewrite_functions,
    row_major,
)

_ADD = FUSED_OPS["binary"] + BINARY_OPS["add"]
_MUL = FUSED_OPS["binary"] + BINARY_OPS["mul"]
_RSQRT = UNARY_OPS["rsqrt"]
_F32 = DTYPES["f32"]
_NO_QUANT = {"qmin": 0, "qmax": 0, "q_eps": 0.0, "q_qmin": 0, "q_qmax": 0}
"""rms_norm_rows' quantization push constants when QUANT = 0 (unused)."""


@dataclass
class _Tail:
    x: Leaf
    mean: Leaf
    eps: Leaf
    w: Leaf


def _f32_node(expr: Expr, op: int) -> Node | None:
    if isinstance(expr, Node) and expr.op == op and expr.dtype == _F32:
        return expr
    return None


def _tail_of(value: Expr) -> _Tail | None:
    """The leaves of `(x * rsqrt(m + eps)) * w` (operands of each multiply and of the
    add in either order; the add's alpha 1), or None."""
    outer = _f32_node(value, _MUL)
    if outer is None:
        return None
    for inner_expr, w in (outer.args, outer.args[::-1]):
        inner = _f32_node(inner_expr, _MUL)
        if inner is None or not isinstance(w, Leaf):
            continue
        for x, rs_expr in (inner.args, inner.args[::-1]):
            rs = _f32_node(rs_expr, _RSQRT)
            if rs is None or not isinstance(x, Leaf):
                continue
            add = _f32_node(rs.args[0], _ADD)
            if add is None or add.a != 1.0:
                continue
            first, second = add.args
            if isinstance(first, Leaf) and isinstance(second, Leaf):
                return _Tail(x, first, second, w)
    return None


def _addresses(dims: tuple[int, ...], leaf: Leaf) -> np.ndarray | None:
    """The word each index of `dims` loads (None for a windowed load)."""
    if leaf.window is not None:
        return None
    return leaf.offset + digit_index(dims, leaf.strides)


def _scalar_word(leaf: Leaf, dims: tuple[int, ...]) -> float | None:
    """The f32 value of the one constant word `leaf` reads everywhere, or None."""
    if any(leaf.strides) or leaf.window is not None:
        return None
    owner, buffer = leaf.buffer.owner, leaf.buffer.type
    if not isinstance(owner, vkc.ConstantOp) or not isinstance(buffer, vkc.BufferType):
        return None
    if buffer.dtype != "f32" or leaf.offset >= buffer.numel:
        return None
    try:
        words = owner.words().view(np.float32)
    except QoptError:  # a blob elided from a printout: not fused
        return None
    return float(words[leaf.offset])


def _f32_buffer(value: SSAValue) -> bool:
    buffer = value.type
    return isinstance(buffer, vkc.BufferType) and buffer.dtype == "f32"


class _Fuser:
    def __init__(self, module: ModuleOp, block: Block):
        self.block = block
        self.symbols = KernelSymbols(module)
        self.fused = 0

    def run(self) -> int:
        changed = True
        while changed:
            changed = False
            for op in list(self.block.ops):
                if op.parent is self.block and isinstance(op, vkc.DispatchOp) and self._try(op):
                    changed = True
        return self.fused

    def _try(self, reduce: vkc.DispatchOp) -> bool:
        kernel = reduce.kernel_op()
        if kernel.kernel.data == "choose_qparams_rows":
            return self._quantize(reduce)
        if kernel.kernel.data != "reduce_rows":
            return False
        spec = kernel.spec_values()
        if spec.get("OP") != REDUCE_OPS["mean"] or spec.get("PRE") != 1:
            return False
        push = reduce.push_values()
        rows, cols = int(push["rows"]), int(push["cols"])
        n = rows * cols
        if n == 0 or n > MAX_COMPOSE:
            return False
        x_root = vkc.root_buffer(reduce.buffers[0])
        mean_root = vkc.root_buffer(reduce.buffers[1])
        mean_owner = mean_root.owner
        if not isinstance(mean_owner, vkc.AllocOp) or mean_owner.is_status:
            return False
        mean_type = mean_root.type
        assert isinstance(mean_type, vkc.BufferType)
        if mean_type.numel != rows or dispatch_writes(reduce) != {mean_root}:
            return False
        users = [user for user, _ in buffer_uses(mean_root) if user is not reduce]
        if len(set(users)) != 1 or not isinstance(users[0], vkc.DispatchOp):
            return False
        tail_op = users[0]
        if tail_op.parent is not self.block or mean_root in dispatch_writes(tail_op):
            return False
        tail_kernel = as_kernel(tail_op)
        if tail_kernel is None or tail_kernel.n != n or math.prod(tail_kernel.dims) != n:
            return False
        dims = tail_kernel.dims
        y_root = vkc.root_buffer(tail_kernel.out)
        y_type = y_root.type
        assert isinstance(y_type, vkc.BufferType)
        if tail_kernel.out_map != (0, row_major(dims)) or y_type.numel != n:
            return False
        if dispatch_writes(tail_op) != {y_root} or not _f32_buffer(y_root):
            return False
        tail = _tail_of(tail_kernel.value)
        if tail is None:
            return False
        if tail.mean.buffer is not mean_root:  # eps + m: the add's operands swapped
            tail = _Tail(tail.x, tail.eps, tail.mean, tail.w)
        flat = np.arange(n, dtype=np.int64)
        x_at, mean_at, w_at = (_addresses(dims, leaf) for leaf in (tail.x, tail.mean, tail.w))
        if x_at is None or mean_at is None or w_at is None:
            return False
        if tail.x.buffer is not x_root or not np.array_equal(x_at, flat):
            return False
        if tail.mean.buffer is not mean_root or not np.array_equal(mean_at, flat // cols):
            return False
        w_off = int(w_at[0])
        if not np.array_equal(w_at, w_off + flat % cols) or not _f32_buffer(tail.w.buffer):
            return False
        eps = _scalar_word(tail.eps, dims)
        if eps is None or not _f32_buffer(x_root):
            return False
        if not moves_safely(reduce, tail_op, {x_root}):
            return False
        if y_root in (x_root, tail.w.buffer):
            return False
        add = self._residual_add(x_root, reduce, tail_op, n)
        w = tail.w.buffer
        if add is not None:
            producer, a, b, alpha, keep_h = add
            if y_root in (a, b) or (keep_h and x_root in (a, b, w)):
                return False
        else:
            producer, a, b, alpha, keep_h = None, x_root, x_root, 1.0, False
        h = x_root if keep_h else self._dummy(f32, tail_op)
        unquantized = [self._dummy(f32, tail_op), self._dummy(i32, tail_op)]
        new = make_dispatch(
            self.symbols,
            "rms_norm_rows",
            {"HAS_ADD": int(producer is not None), "HAS_H": int(keep_h)},
            [a, b, w, h, tail_kernel.out, *unquantized, self._dummy(i32, tail_op)],
            {
                "rows": rows,
                "cols": cols,
                "alpha": alpha,
                "eps": eps,
                "w_off": w_off,
                **_NO_QUANT,
            },
            tail_op,
        )
        self.block.insert_op_before(new, tail_op)
        erase_dispatch(tail_op)
        erase_dispatch(reduce)
        if producer is not None:
            erase_dispatch(producer)
        self.fused += 1
        return True

    def _dummy(self, element: Attribute, before: Operation) -> SSAValue:
        """A one-word buffer for a binding the kernel leaves alone."""
        alloc = vkc.AllocOp(result_types=[vkc.BufferType.get((1,), element)])
        self.block.insert_op_before(alloc, before)
        return alloc.result

    def _quantize(self, choose: vkc.DispatchOp) -> bool:
        """choose_qparams_rows C and the quantize_rows Q of the same x with C's scale and
        zp: one quantize_rows_dynamic at Q's place (C's outputs still written: the
        linear reads them), when they are transient buffers written by C alone, read by
        nothing before Q, and nothing between C and Q writes x."""
        x, scale, zp = (vkc.root_buffer(v) for v in choose.buffers)
        users: list[Operation] = []
        for root in (scale, zp):
            owner = root.owner
            if not isinstance(owner, vkc.AllocOp) or owner.is_status:
                return False
            users.extend(user for user, _ in buffer_uses(root) if user is not choose)
        if dispatch_writes(choose) != {scale, zp}:
            return False
        quantize = next(
            (
                u
                for u in users
                if isinstance(u, vkc.DispatchOp)
                and u.parent is self.block
                and u.kernel_op().kernel.data == "quantize_rows"
                and [vkc.root_buffer(v) for v in u.buffers[:3]] == [x, scale, zp]
            ),
            None,
        )
        if quantize is None:
            return False
        push, q_push = choose.push_values(), quantize.push_values()
        if (push["rows"], push["cols"]) != (q_push["rows"], q_push["cols"]):
            return False
        order = {op: k for k, op in enumerate(self.block.ops)}
        if any(u.parent is not self.block or order[u] < order[quantize] for u in users):
            return False
        if not moves_safely(choose, quantize, {x}):
            return False
        spec = {
            "MAPPING": choose.kernel_op().spec_values().get("MAPPING", 0),
            "ZP_BEFORE_ROUND": quantize.kernel_op().spec_values().get("ZP_BEFORE_ROUND", 0),
        }
        new = make_dispatch(
            self.symbols,
            "quantize_rows_dynamic",
            spec,
            [*choose.buffers, quantize.buffers[3]],
            {**push, "q_qmin": q_push["qmin"], "q_qmax": q_push["qmax"]},
            quantize,
        )
        self.block.insert_op_before(new, quantize)
        erase_dispatch(quantize)
        erase_dispatch(choose)
        self.fused += 1
        return True

    def _residual_add(
        self, x_root: SSAValue, reduce: vkc.DispatchOp, tail: vkc.DispatchOp, n: int
    ) -> tuple[vkc.DispatchOp, SSAValue, SSAValue, float, bool] | None:
        """(the add, a, b, alpha, whether x has readers besides R and T) when x is a
        transient buffer written whole by one f32 add of two row-major loads, its reads
        movable to T and x's other readers all after T; else None."""
        owner = x_root.owner
        if not isinstance(owner, vkc.AllocOp) or owner.is_status:
            return None
        writers: list[vkc.DispatchOp] = []
        readers: list[Operation] = []
        for user, index in buffer_uses(x_root):
            if isinstance(user, vkc.DispatchOp) and user.kernel_op().bindings.data[index].writes:
                writers.append(user)
            elif user is not reduce and user is not tail:
                readers.append(user)
        if len(set(writers)) != 1:
            return None
        producer = writers[0]
        if producer.parent is not self.block or dispatch_writes(producer) != {x_root}:
            return None
        kernel = as_kernel(producer)
        if kernel is None or kernel.n != n or kernel.out_map != (0, row_major(kernel.dims)):
            return None
        add = _f32_node(kernel.value, _ADD)
        if add is None:
            return None
        a, b = add.args
        identity = (0, row_major(kernel.dims))
        for leaf in (a, b):
            if not isinstance(leaf, Leaf) or leaf.window is not None:
                return None
            if (leaf.offset, leaf.strides) != identity or not _f32_buffer(leaf.buffer):
                return None
        assert isinstance(a, Leaf)
        assert isinstance(b, Leaf)
        if x_root in (a.buffer, b.buffer):
            return None
        if not moves_safely(producer, tail, {a.buffer, b.buffer}):
            return None
        order = {op: k for k, op in enumerate(self.block.ops)}
        for reader in readers:
            if reader.parent is not self.block or order[reader] < order[tail]:
                return None
        return producer, a.buffer, b.buffer, add.a, bool(readers)


def fuse_function(module: ModuleOp, function: func.FuncOp) -> int:
    """Fuse `function`'s RMSNorms (module docstring); returns how many it fused."""
    return _Fuser(module, function.body.block).run()


@dataclass(frozen=True)
class VkcFuseNormsPass(ModulePass):
    """RMSNorm (with a residual add before it) in one dispatch (module docstring)."""

    name = "vkc-fuse-norms"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_functions(op, fuse_function)


__all__ = ["VkcFuseNormsPass", "fuse_function"]

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

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from qopt.dialects import vkc
from qopt.dialects.vkc.types import binding_accepts
from qopt.errors import QoptError
from qopt.kernels import catalogue
from qopt.kernels.elementwise import (
    FUSED_INPUTS,
    FUSED_INSTRS,
    FUSED_LEAVES,
    fused_dims,
    fused_strides,
)
from qopt.kernels.extents import RANK
from qopt.kernels.opcodes import BINARY_OPS, DTYPES, FUSED_OPS, REDUCE_OPS, UNARY_OPS
from qopt.kernels.source import kernel_source

MAX_COMPOSE = 1 << 22
"""Largest index space (elements) whose composed load maps are checked element by
element; a bigger one is not fused unless the maps compose trivially."""

Map = tuple[int, tuple[int, ...]]
"""(offset, strides over the 6-D index space)."""


@dataclass(frozen=True, eq=False)
class Leaf:
    buffer: SSAValue
    """The root buffer read (views looked through: a load reads 32-bit words)."""
    offset: int
    strides: tuple[int, ...]
    window: tuple[int, int, int] | None = None
    """(axis, lo, n): the digit on `axis` is clamp(idx - lo, 0, n - 1) (a cat piece)."""

    def key(self) -> tuple[object, ...]:
        return ("leaf", id(self.buffer), self.offset, self.strides, self.window)


@dataclass(frozen=True, eq=False)
class Node:
    op: int
    """A UNARY_OPS code, FUSED_BINARY + a BINARY_OPS code, or FUSED_SELECT."""
    dtype: int
    args: tuple[Expr, ...]
    a: float
    b: float
    axis: int = 0
    split: int = 0
    """FUSED_SELECT: args[0] where idx[axis] < split, else args[1]."""

    def key(self) -> tuple[object, ...]:
        head = ("node", self.op, self.dtype, self.a, self.b, self.axis, self.split)
        return (*head, *(x.key() for x in self.args))


Expr = Leaf | Node


@dataclass
class Kernel:
    """A fusable dispatch as an expression: y[out map(idx)] = value(idx) for the n
    indices idx of the 6-D space dims."""

    dims: tuple[int, ...]
    n: int
    value: Expr
    out: SSAValue
    out_map: Map
    dispatch: vkc.DispatchOp


def norm_strides(dims: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """Strides with those of size-1 dims zeroed (they never move the index)."""
    return tuple(0 if d == 1 else int(s) for d, s in zip(dims, strides, strict=True))


def row_major(dims: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= int(d)
    return norm_strides(dims, tuple(reversed(strides)))


def _push6(push: dict[str, int | float], prefix: str) -> tuple[int, ...]:
    return tuple(int(push[f"{prefix}{k}"]) for k in range(RANK))


def as_kernel(op: vkc.DispatchOp) -> Kernel | None:
    """The expression of a fusable dispatch, or None."""
    name = op.kernel_op().kernel.data
    spec = op.kernel_op().spec_values()
    push = op.push_values()
    buffers = [vkc.root_buffer(b) for b in op.buffers]
    if name == "unary":
        n = int(push["n"])
        dims = (1,) * (RANK - 1) + (n,)
        ident = (0, row_major(dims))
        code = int(spec.get("OP", UNARY_OPS["identity"]))
        dtype = int(spec.get("DTYPE", DTYPES["f32"]))
        leaf = Leaf(buffers[0], *ident)
        value = Node(code, dtype, (leaf,), float(push["a"]), float(push["b"]))
        return Kernel(dims, n, value, op.buffers[1], ident, op)
    if name in ("binary", "copy_strided"):
        dims = _push6(push, "d")
        n = int(push["n"])
        if n != math.prod(dims) or n == 0:
            return None
        if name == "copy_strided":
            leaf = Leaf(buffers[0], int(push["in_off"]), norm_strides(dims, _push6(push, "si")))
            out_map = (int(push["out_off"]), norm_strides(dims, _push6(push, "so")))
            return Kernel(dims, n, leaf, op.buffers[1], out_map, op)
        a = Leaf(buffers[0], int(push["a_off"]), norm_strides(dims, _push6(push, "sa")))
        b = Leaf(buffers[1], int(push["b_off"]), norm_strides(dims, _push6(push, "sb")))
        code = FUSED_OPS["binary"] + int(spec.get("OP", BINARY_OPS["add"]))
        dtype = int(spec.get("DTYPE", DTYPES["f32"]))
        value = Node(code, dtype, (a, b), float(push["alpha"]), 0.0)
        return Kernel(dims, n, value, op.buffers[2], (0, row_major(dims)), op)
    if name == "fused_elementwise":
        return _decode_fused(op, spec, push, buffers)
    return None


def _decode_fused(
    op: vkc.DispatchOp, spec: dict[str, int], push: dict[str, int | float], buffers: list[SSAValue]
) -> Kernel:
    dims = fused_dims(spec)
    registers: dict[int, Expr] = {}
    for leaf in range(FUSED_LEAVES):
        buf = spec[f"L{leaf}_BUF"]
        if buf >= 0:
            strides = norm_strides(dims, fused_strides(spec, f"L{leaf}_S"))
            axis = spec[f"L{leaf}_AX"]
            window = (axis, spec[f"L{leaf}_LO"], spec[f"L{leaf}_N"]) if axis >= 0 else None
            registers[leaf] = Leaf(buffers[buf], spec[f"L{leaf}_OFF"], strides, window)
    for k in range(FUSED_INSTRS):
        code = spec[f"I{k}_OP"]
        if code == FUSED_OPS["none"]:
            continue
        args = [registers[spec[f"I{k}_A"]]]
        if code >= FUSED_OPS["binary"]:
            args.append(registers[spec[f"I{k}_B"]])
        registers[FUSED_LEAVES + k] = Node(
            code,
            spec[f"I{k}_DT"],
            tuple(args),
            float(push[f"a{k}"]),
            float(push[f"b{k}"]),
            spec[f"I{k}_X"],
            spec[f"I{k}_Y"],
        )
    out_map = (spec["OUT_OFF"], norm_strides(dims, fused_strides(spec, "OS")))
    return Kernel(
        dims, int(push["n"]), registers[spec["RES"]], op.buffers[FUSED_INPUTS], out_map, op
    )


# ----- composing load maps ------------------------------------------------------------------


def digit_index(dims: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    idx = np.zeros(tuple(dims), dtype=np.int64)
    for axis, (d, s) in enumerate(zip(dims, strides, strict=True)):
        shape = [1] * len(dims)
        shape[axis] = d
        idx = idx + (np.arange(d, dtype=np.int64) * s).reshape(shape)
    return idx.reshape(-1)


def compose(
    outer_dims: tuple[int, ...], outer: Map, inner_dims: tuple[int, ...], inner: Map
) -> Map | None:
    """The map i -> inner(digits of outer(i) in inner_dims) over outer_dims, when it is
    strided again (offset and strides >= 0), else None. `outer` gives flat indices into
    a row-major buffer of shape inner_dims."""
    inner_ident = inner[0] == 0 and inner[1] == row_major(inner_dims)
    outer_ident = outer[0] == 0 and outer[1] == row_major(outer_dims)
    if inner_ident:
        return outer
    if outer_ident and outer_dims == inner_dims:
        return inner
    n = math.prod(outer_dims)
    if n > MAX_COMPOSE:
        return None
    flat = outer[0] + digit_index(outer_dims, outer[1])
    target = np.full(n, inner[0], dtype=np.int64)
    rem = flat
    for d, s in zip(reversed(inner_dims), reversed(inner[1]), strict=True):
        target += (rem % d) * s
        rem = rem // d
    offset = int(target[0])
    strides = []
    for d, step in zip(outer_dims, row_major_full(outer_dims), strict=True):
        strides.append(0 if d == 1 else int(target[step]) - offset)
    if offset < 0 or any(s < 0 for s in strides):
        return None
    if not np.array_equal(target, offset + digit_index(outer_dims, strides)):
        return None
    return offset, tuple(strides)


def row_major_full(dims: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= int(d)
    return tuple(reversed(strides))


def leaves_of(expr: Expr) -> list[Leaf]:
    if isinstance(expr, Leaf):
        return [expr]
    return [leaf for arg in expr.args for leaf in leaves_of(arg)]


def substitute(consumer: Kernel, producer: Kernel, root: SSAValue) -> Expr | None:
    """consumer's value with every load of `root` replaced by producer's value,
    re-indexed into consumer's index space (None when a map does not compose)."""

    def walk(expr: Expr) -> Expr | None:
        if isinstance(expr, Leaf):
            if expr.buffer is not root:
                return expr
            if expr.window is not None:
                return None
            return inline(producer.value, (expr.offset, expr.strides))
        return rebuild(expr, [walk(a) for a in expr.args])

    def inline(expr: Expr, outer: Map) -> Expr | None:
        identity = outer == (0, row_major(consumer.dims)) and consumer.dims == producer.dims
        if isinstance(expr, Leaf):
            if identity:
                return expr
            if expr.window is not None:
                return None
            found = compose(consumer.dims, outer, producer.dims, (expr.offset, expr.strides))
            if found is None:
                return None
            return Leaf(expr.buffer, found[0], norm_strides(consumer.dims, found[1]))
        if expr.op == FUSED_OPS["select"] and not identity:
            return None  # its digit test is in the producer's index space
        return rebuild(expr, [inline(a, outer) for a in expr.args])

    return walk(consumer.value)


def rebuild(node: Node, args: Sequence[Expr | None]) -> Node | None:
    """`node` over new arguments (None if one is None)."""
    kept = [a for a in args if a is not None]
    if len(kept) != len(args):
        return None
    return Node(node.op, node.dtype, tuple(kept), node.a, node.b, node.axis, node.split)


# ----- encoding ---------------------------------------------------------------------------


@dataclass
class Encoded:
    inputs: list[SSAValue]
    spec: dict[str, int]
    push: dict[str, int | float]


def encode(kernel: Kernel) -> Encoded | None:
    """fused_elementwise's specialization and push values for `kernel` (None when it
    needs more inputs, loads or instructions than the kernel has)."""
    inputs: list[SSAValue] = []
    leaves: dict[tuple[object, ...], int] = {}
    nodes: dict[tuple[object, ...], int] = {}
    spec: dict[str, int] = {"WG": 64}
    push: dict[str, int | float] = {"n": kernel.n}
    for k in range(RANK):
        spec[f"D{k}"] = kernel.dims[k]
    for leaf in range(FUSED_LEAVES):
        spec[f"L{leaf}_BUF"], spec[f"L{leaf}_OFF"] = -1, 0
        for k in range(RANK):
            spec[f"L{leaf}_S{k}"] = 0
        spec[f"L{leaf}_AX"], spec[f"L{leaf}_LO"], spec[f"L{leaf}_N"] = -1, 0, 1
    for k in range(FUSED_INSTRS):
        spec[f"I{k}_OP"], spec[f"I{k}_DT"], spec[f"I{k}_A"], spec[f"I{k}_B"] = -1, 0, 0, 0
        spec[f"I{k}_X"], spec[f"I{k}_Y"] = 0, 0
        push[f"a{k}"], push[f"b{k}"] = 0.0, 0.0

    class _Full(Exception):
        pass

    def reg(expr: Expr) -> int:
        key = expr.key()
        if isinstance(expr, Leaf):
            if key in leaves:
                return leaves[key]
            if expr.buffer not in inputs:
                if len(inputs) == FUSED_INPUTS:
                    raise _Full
                inputs.append(expr.buffer)
            if len(leaves) == FUSED_LEAVES:
                raise _Full
            r = leaves[key] = len(leaves)
            spec[f"L{r}_BUF"] = inputs.index(expr.buffer)
            spec[f"L{r}_OFF"] = expr.offset
            for k in range(RANK):
                spec[f"L{r}_S{k}"] = expr.strides[k]
            if expr.window is not None:
                axis, lo, size = expr.window
                spec[f"L{r}_AX"], spec[f"L{r}_LO"], spec[f"L{r}_N"] = axis, lo, size
            return r
        if key in nodes:
            return nodes[key]
        args = [reg(a) for a in expr.args]
        if len(nodes) == FUSED_INSTRS:
            raise _Full
        k = len(nodes)
        spec[f"I{k}_OP"], spec[f"I{k}_DT"] = expr.op, expr.dtype
        spec[f"I{k}_A"] = args[0]
        spec[f"I{k}_B"] = args[1] if len(args) > 1 else 0
        spec[f"I{k}_X"], spec[f"I{k}_Y"] = expr.axis, expr.split
        push[f"a{k}"], push[f"b{k}"] = expr.a, expr.b
        nodes[key] = FUSED_LEAVES + k
        return nodes[key]

    try:
        spec["RES"] = reg(kernel.value)
    except _Full:
        return None
    spec["OUT_OFF"] = kernel.out_map[0]
    for k in range(RANK):
        spec[f"OS{k}"] = kernel.out_map[1][k]
    return Encoded(inputs, spec, push)


# ----- the pass ---------------------------------------------------------------------------


class KernelSymbols:
    """The module's vkc.kernel symbols, found or added by (kernel, specialization)."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.by_key: dict[tuple[object, ...], vkc.KernelOp] = {}
        self.names: set[str] = set()
        self.last: vkc.KernelOp | None = None
        for op in module.ops:
            if isinstance(op, vkc.KernelOp):
                self.by_key[(op.kernel.data, tuple(sorted(op.spec_values().items())))] = op
                self.names.add(op.sym_name.data)
                self.last = op

    def get(self, name: str, values: dict[str, int]) -> vkc.KernelOp:
        spec = catalogue()[name]
        full = {n: int(values.get(n, default)) for n, default in spec.spec}
        key = (name, tuple(sorted(full.items())))
        if key in self.by_key:
            return self.by_key[key]
        index = 0
        while f"{name}_{index}" in self.names:
            index += 1
        symbol = f"{name}_{index}"
        op = vkc.KernelOp(
            properties={
                "sym_name": StringAttr(symbol),
                "kernel": StringAttr(name),
                "glsl": StringAttr(spec.glsl),
                "entry": StringAttr("main"),
                "hash": StringAttr(
                    hashlib.sha256(kernel_source(spec.glsl).encode()).hexdigest()[:16]
                ),
                "local_size": DenseArrayBase.from_list(i64, list(spec.local_size)),
                "spec": DictionaryAttr({k: IntegerAttr(v, i64) for k, v in full.items()}),
                "bindings": ArrayAttr([vkc.BindingAttr.of(b) for b in spec.bindings]),
                "push": ArrayAttr([vkc.PushAttr.get(n, k) for n, k in spec.push]),
            }
        )
        block = self.module.body.block
        if self.last is not None:
            block.insert_op_after(op, self.last)
        elif block.first_op is not None:
            block.insert_op_before(op, block.first_op)
        else:
            block.add_op(op)
        self.last = op
        self.by_key[key] = op
        self.names.add(symbol)
        return op


def make_dispatch(
    symbols: KernelSymbols,
    name: str,
    spec: dict[str, int],
    buffers: Sequence[SSAValue],
    push: dict[str, int | float],
    like: Operation,
) -> vkc.DispatchOp:
    kernel_spec = catalogue()[name]
    kernel = symbols.get(name, spec)
    kinds = dict(kernel_spec.push)
    attrs: dict[str, Attribute] = {}
    for key, v in push.items():  # as convert-to-vkc writes them: u32 as i64, i32 as i32
        if kinds[key] == "f32":
            attrs[key] = FloatAttr(float(np.float32(v)), f32)
        else:
            attrs[key] = IntegerAttr(int(v), i64 if kinds[key] == "u32" else i32)
    groups = kernel_spec.workgroups(push, kernel_spec.spec_values(spec))
    op = vkc.DispatchOp.create(
        operands=list(buffers),
        properties={
            "kernel": SymbolRefAttr(kernel.sym_name.data),
            "push": DictionaryAttr(attrs),
            "workgroups": DenseArrayBase.from_list(i64, [int(g) for g in groups]),
        },
    )
    op.location = like.location
    return op


def materialize(symbols: KernelSymbols, kernel: Kernel) -> vkc.DispatchOp | None:
    """The dispatch computing `kernel`: copy_strided for a bare load, else
    fused_elementwise (None when it does not fit)."""
    if isinstance(kernel.value, Leaf):
        leaf = kernel.value
        push: dict[str, int | float] = {
            "n": kernel.n,
            "in_off": leaf.offset,
            "out_off": kernel.out_map[0],
        }
        for k in range(RANK):
            push[f"d{k}"] = kernel.dims[k]
            push[f"si{k}"] = leaf.strides[k]
            push[f"so{k}"] = kernel.out_map[1][k]
        return make_dispatch(
            symbols, "copy_strided", {}, [leaf.buffer, kernel.out], push, kernel.dispatch
        )
    encoded = encode(kernel)
    if encoded is None:
        return None
    inputs = encoded.inputs + [encoded.inputs[0]] * (FUSED_INPUTS - len(encoded.inputs))
    return make_dispatch(
        symbols,
        "fused_elementwise",
        encoded.spec,
        [*inputs, kernel.out],
        encoded.push,
        kernel.dispatch,
    )


def buffer_uses(root: SSAValue) -> list[tuple[Operation, int]]:
    """(op, operand index) of every use of `root`, through views (views themselves not
    listed)."""
    found: list[tuple[Operation, int]] = []
    for use in list(root.uses):
        if isinstance(use.operation, vkc.ViewOp):
            found.extend(buffer_uses(use.operation.result))
        else:
            found.append((use.operation, use.index))
    return found


def dispatch_writes(op: vkc.DispatchOp) -> set[SSAValue]:
    bindings = op.kernel_op().bindings.data
    return {vkc.root_buffer(v) for b, v in zip(bindings, op.buffers, strict=True) if b.writes}


def dispatch_reads(op: vkc.DispatchOp) -> set[SSAValue]:
    bindings = op.kernel_op().bindings.data
    return {vkc.root_buffer(v) for b, v in zip(bindings, op.buffers, strict=True) if not b.writes}


def _whole(kernel: Kernel, root: SSAValue) -> bool:
    """Whether `kernel` writes every word of `root` row-major (y[i] for i < numel)."""
    buffer = root.type
    assert isinstance(buffer, vkc.BufferType)
    return (
        kernel.out_map == (0, row_major(kernel.dims))
        and kernel.n == math.prod(kernel.dims) == buffer.numel
    )


_PURE = (vkc.ViewOp, vkc.OutputOp, vkc.AllocOp, vkc.ConstantOp, vkc.InputOp, vkc.StateOp,
         vkc.BarrierOp)  # fmt: skip
"""vkc ops that write no buffer (any other op with buffer operands may write them)."""


def op_writes(op: Operation) -> set[SSAValue]:
    """The buffers (roots) `op` may write: a dispatch's written bindings; nothing for the
    ops of `_PURE`; every buffer operand of any other op (a host call, say)."""
    if isinstance(op, vkc.DispatchOp):
        return dispatch_writes(op)
    if isinstance(op, _PURE):
        return set()
    return {vkc.root_buffer(v) for v in op.operands if isinstance(v.type, vkc.BufferType)}


def moves_safely(first: Operation, last: Operation, reads: set[SSAValue]) -> bool:
    """Whether reads of `reads` at `first` may move to `last` (one block): `last` comes
    after it and no op between them (nor `last` itself) may write any of them."""
    op = first.next_op
    while op is not None and op is not last:
        if op_writes(op) & reads:
            return False
        op = op.next_op
    return op is last and not op_writes(last) & reads


def erase_unused(value: SSAValue) -> None:
    owner = value.owner
    if isinstance(owner, vkc.AllocOp | vkc.ViewOp | vkc.ConstantOp) and not value.uses:
        source = owner.source if isinstance(owner, vkc.ViewOp) else None
        owner.detach()
        owner.erase()
        if source is not None:
            erase_unused(source)


def drop_unplaced(ops: Iterable[Operation | None]) -> None:
    """Erase ops a rewrite built but did not insert (it gave up): a built op already
    uses its operands, and a dangling use would be seen by later passes as a reader
    or writer outside the function (vkc-fuse-row-quant looked up its kernel and
    crashed: "has no SymbolTable ancestor")."""
    for op in ops:
        if op is not None and op.parent is None:
            op.erase(safe_erase=False)


def erase_dispatch(op: Operation) -> None:
    """Erase `op` and then every buffer (alloc / view / constant) it alone used."""
    operands = list(dict.fromkeys(op.operands))
    op.detach()
    op.erase()
    for value in operands:
        erase_unused(value)


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


def rewrite_functions(module: ModuleOp, rewrite: Callable[[ModuleOp, func.FuncOp], int]) -> None:
    """Run a vkc pass's `rewrite` on every function of `module` (it returns how many
    rewrites it made); if any, drop the kernel symbols no dispatch uses any more."""
    done = 0
    for function in list(module.ops):
        if isinstance(function, func.FuncOp):
            done += rewrite(module, function)
    if done:
        drop_unused_kernels(module)


def drop_unused_kernels(module: ModuleOp) -> None:
    used = {op.kernel.root_reference.data for op in module.walk() if isinstance(op, vkc.DispatchOp)}
    for op in list(module.ops):
        if isinstance(op, vkc.KernelOp) and op.sym_name.data not in used:
            op.detach()
            op.erase()


@dataclass(frozen=True)
class VkcFuseElementwisePass(ModulePass):
    """Merge elementwise chains, copies and squares into fewer dispatches (module
    docstring)."""

    name = "vkc-fuse-elementwise"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_functions(op, fuse_function)


__all__ = ["VkcFuseElementwisePass", "as_kernel", "compose", "fuse_function"]

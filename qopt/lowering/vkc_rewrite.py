"""The vkc rewrite library: what the vkc passes share.

`vkc-fuse-elementwise`, `vkc-fuse-norms`, `vkc-merge-siblings`, `vkc-fuse-row-quant` and
`vkc-fold-copies` all read dispatches as expressions and write new ones; this module
is that common ground (no pass lives here):

- fusable dispatches as expression trees: `as_kernel` reads a `unary`, `binary`,
  `copy_strided` or `fused_elementwise` dispatch as a `Kernel` (an `Expr` of `Leaf`
  loads and `Node` operations over a 6-D index space, written through a strided
  store); `compose`, `substitute`, `rebuild` and `encode` combine and re-encode them,
  `materialize` turns one back into a dispatch;
- building vkc IR from the kernel catalogue: `kernel_symbol_op` (a `vkc.kernel` symbol
  for a kernel and its specialization, also what convert-to-vkc emits),
  `push_attributes` (push-constant values as convert-to-vkc writes them),
  `KernelSymbols` (a module's symbols, found or added) and `make_dispatch`;
- the buffer questions a rewrite must answer to be safe: `buffer_uses`,
  `dispatch_reads` / `dispatch_writes` / `op_writes`, `moves_safely`; and the clean-up:
  `erase_dispatch`, `erase_unused`, `rewrite_functions` (run a pass's per-function
  rewrite, then drop the kernel symbols nothing dispatches any more).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
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
from xdsl.ir import Attribute, Operation, SSAValue

from qopt.dialects import vkc
from qopt.errors import QoptError
from qopt.kernels import KernelSpec, catalogue
from qopt.kernels.elementwise import (
    FUSED_INPUTS,
    FUSED_INSTRS,
    FUSED_LEAVES,
    fused_dims,
    fused_strides,
)
from qopt.kernels.extents import RANK
from qopt.kernels.opcodes import BINARY_OPS, DTYPES, FUSED_OPS, UNARY_OPS
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


# ----- kernel symbols and dispatches -------------------------------------------------------


KernelKey = tuple[str, tuple[tuple[str, int], ...]]
"""A kernel symbol's identity: (kernel name, its specialization constants sorted)."""


def specialization(spec: KernelSpec, values: Mapping[str, int]) -> dict[str, int]:
    """Every specialization constant of kernel `spec`, in the kernel's order: the value in
    `values`, else its default."""
    return {n: int(values.get(n, default)) for n, default in spec.spec}


def kernel_key(name: str, full: Mapping[str, int]) -> KernelKey:
    return name, tuple(sorted(full.items()))


def kernel_symbol_op(spec: KernelSpec, full: Mapping[str, int], symbol: str) -> vkc.KernelOp:
    """The `vkc.kernel` symbol `symbol` of catalogue kernel `spec` specialised with `full`
    (`specialization`): its GLSL, the source's content hash ("missing" when the source
    cannot be read: the bundle's compile names it), local size and interface."""
    try:
        source_hash = hashlib.sha256(kernel_source(spec.glsl).encode()).hexdigest()[:16]
    except QoptError:
        source_hash = "missing"
    return vkc.KernelOp(
        properties={
            "sym_name": StringAttr(symbol),
            "kernel": StringAttr(spec.name),
            "glsl": StringAttr(spec.glsl),
            "entry": StringAttr("main"),
            "hash": StringAttr(source_hash),
            "local_size": DenseArrayBase.from_list(i64, list(spec.local_size)),
            "spec": DictionaryAttr({k: IntegerAttr(v, i64) for k, v in full.items()}),
            "bindings": ArrayAttr([vkc.BindingAttr.of(b) for b in spec.bindings]),
            "push": ArrayAttr([vkc.PushAttr.get(n, k) for n, k in spec.push]),
        }
    )


def push_attributes(spec: KernelSpec, push: Mapping[str, int | float]) -> dict[str, Attribute]:
    """Push-constant values as attributes, in `push`'s order, typed by the kernel's block
    (f32 as f32, u32 as i64, i32 as i32)."""
    kinds = dict(spec.push)
    attrs: dict[str, Attribute] = {}
    for name, value in push.items():
        if kinds[name] == "f32":
            attrs[name] = FloatAttr(float(np.float32(value)), f32)
        else:
            attrs[name] = IntegerAttr(int(value), i64 if kinds[name] == "u32" else i32)
    return attrs


class KernelSymbols:
    """The module's vkc.kernel symbols, found or added by (kernel, specialization)."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.by_key: dict[KernelKey, vkc.KernelOp] = {}
        self.names: set[str] = set()
        self.last: vkc.KernelOp | None = None
        for op in module.ops:
            if isinstance(op, vkc.KernelOp):
                self.by_key[kernel_key(op.kernel.data, op.spec_values())] = op
                self.names.add(op.sym_name.data)
                self.last = op

    def get(self, name: str, values: dict[str, int]) -> vkc.KernelOp:
        spec = catalogue()[name]
        full = specialization(spec, values)
        key = kernel_key(name, full)
        if key in self.by_key:
            return self.by_key[key]
        index = 0
        while f"{name}_{index}" in self.names:
            index += 1
        symbol = f"{name}_{index}"
        op = kernel_symbol_op(spec, full, symbol)
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
    groups = kernel_spec.workgroups(push, kernel_spec.spec_values(spec))
    op = vkc.DispatchOp.create(
        operands=list(buffers),
        properties={
            "kernel": SymbolRefAttr(kernel.sym_name.data),
            "push": DictionaryAttr(push_attributes(kernel_spec, push)),
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

"""`vkc-merge-siblings`: sibling linears that read the same activations in one dispatch.

Runs on vkc IR before buffers are planned (after `vkc-fuse-elementwise` in qopt-vulkan).
Two dispatches A (first) and B of the same row-parallel linear kernel symbol (the same
kernel and specialization: `ROW_KERNELS`) that bind the same activation buffers and
push the same values except N (the output columns) become one dispatch at A's place
over the weights concatenated along N: every per-output-row constant binding (packed
weights, scales, zero points, bias) of A and B is a `vkc.constant` whose words are
N rows of equal width, and the merged constant holds A's rows then B's. The merged
output is a new transient buffer [..., N_A + N_B]; every reader of A's or B's output
reads its columns through a strided load (the dispatches `vkc-fuse-elementwise` can
decode: unary, binary, copy_strided, fused_elementwise; for one output row the
offset moves by the column start, else the load map is composed with the embedding
and checked to stay strided), so q/k/v (wq, wk, wv) and the gate/up pair (w1, w3) of
a decoder layer take one dispatch each. Repeats until nothing changes (q + k, then
qk + v).

Safe means: A's and B's outputs are transient buffers each written whole by its
dispatch alone and read only by such dispatches, all after B; no op between A and B
writes what they read (B's reads move up to A). Every output element is computed by
the same code over the same row of weights and x as before (the kernel's work per
output column does not depend on N: same specialization, rows clamped to N - 1 only
past the end), so the merged program computes bit for bit what the unmerged one did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseResourceAttr, ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from qopt.dialects import vkc
from qopt.dtypes import tensor_type
from qopt.errors import QoptError
from qopt.kernels import catalogue
from qopt.kernels.extents import RANK
from qopt.lowering.vkc_rewrite import (
    Expr,
    Kernel,
    KernelSymbols,
    Leaf,
    as_kernel,
    buffer_uses,
    compose,
    dispatch_writes,
    drop_unplaced,
    erase_dispatch,
    erase_unused,
    make_dispatch,
    materialize,
    moves_safely,
    norm_strides,
    rebuild,
    rewrite_functions,
)
from qopt.resources import make_resource, weights_of


@dataclass(frozen=True)
class RowKernel:
    """A linear kernel's bindings by role: activations every sibling shares, constants
    with one row per output column, and the output [..., N]."""

    shared: tuple[int, ...]
    rows: tuple[int, ...]
    out: int


_QW = RowKernel(shared=(0,), rows=(1, 2, 3, 4), out=5)
_DQ8CA = RowKernel(shared=(0, 1, 2), rows=(3, 4, 5, 6), out=7)
ROW_KERNELS: dict[str, RowKernel] = {
    "linear_q4gsw": _QW,
    "linear_q8csw": _QW,
    "linear_dq8ca_q4gsw": _DQ8CA,
    "linear_dq8ca_q8csw": _DQ8CA,
}
"""Kernels whose output column n reads row n of each `rows` binding (w u32 [N,
row_words], scales / zeros [N, ngroups], bias [N]) and nothing else of them, and
whose push holds N (the output columns) and values independent of N."""


def _buffer(value: SSAValue) -> vkc.BufferType:
    type = value.type
    assert isinstance(type, vkc.BufferType)
    return type


def _out_dims(op: vkc.DispatchOp, role: RowKernel) -> tuple[int, ...]:
    return tuple(_buffer(op.buffers[role.out]).dims)


def _index(block: Block) -> dict[Operation, int]:
    return {op: k for k, op in enumerate(block.ops)}


_Blobs = dict[tuple[Attribute, Attribute, Attribute], DenseResourceAttr]


class _Merger:
    def __init__(self, module: ModuleOp, block: Block, concatenated: _Blobs):
        self.module = module
        self.block = block
        self.symbols = KernelSymbols(module)
        self.concatenated = concatenated
        """Merged blobs by their parts: functions (methods) merging the same weights
        share one."""
        self.merged = 0

    def run(self) -> int:
        while self._dedupe() or self._sweep():
            pass
        return self.merged

    def _dedupe(self) -> bool:
        """One later dispatch of a `WHOLE_KERNELS` kernel identical to an earlier one
        (same kernel symbol, push and read buffers, nothing between them writing those)
        dropped, its outputs' readers reading the earlier one's outputs."""
        seen: list[vkc.DispatchOp] = []
        for op in list(self.block.ops):
            if not isinstance(op, vkc.DispatchOp) or not _whole_outputs(op):
                continue
            for first in seen:
                if self._same(first, op):
                    olds, news = _outputs(op), _outputs(first)
                    op.detach()
                    op.erase()
                    for old, new in zip(olds, news, strict=True):
                        old.replace_all_uses_with(new)
                        erase_unused(old)
                    self.merged += 1
                    return True
            seen.append(op)
        return False

    def _same(self, first: vkc.DispatchOp, second: vkc.DispatchOp) -> bool:
        if first.kernel != second.kernel or first.push != second.push:
            return False
        bindings = first.kernel_op().bindings.data
        for binding, a, b in zip(bindings, first.buffers, second.buffers, strict=True):
            if binding.writes:
                if a.type != b.type:
                    return False
            elif a is not b:
                return False
        reads = {vkc.root_buffer(v) for v in _reads_of(first)}
        return moves_safely(first, second, reads | set(_outputs(first)))

    def _sweep(self) -> bool:
        """The first pair (in block order: first dispatch, then second) that merges.
        Only pairs of the same kernel symbol binding the same shared buffers can be
        siblings (`_siblings`), so each dispatch is paired with the later ones of its
        group alone: the same pairs in the same order as trying every later dispatch."""
        groups: dict[tuple[Attribute, tuple[SSAValue, ...]], list[vkc.DispatchOp]] = {}
        ordered: list[tuple[vkc.DispatchOp, list[vkc.DispatchOp]]] = []
        for op in self.block.ops:
            if not isinstance(op, vkc.DispatchOp):
                continue
            role = ROW_KERNELS.get(op.kernel_op().kernel.data)
            if role is None:
                continue
            key = (op.kernel, tuple(op.buffers[i] for i in role.shared))
            group = groups.setdefault(key, [])
            group.append(op)
            ordered.append((op, group))
        for first, group in ordered:
            for second in group[group.index(first) + 1 :]:
                if self._try(first, second):
                    return True
        return False

    def _siblings(self, a: vkc.DispatchOp, b: vkc.DispatchOp, role: RowKernel) -> bool:
        if a.kernel != b.kernel:
            return False
        pa, pb = a.push_values(), b.push_values()
        if {k: v for k, v in pa.items() if k != "N"} != {k: v for k, v in pb.items() if k != "N"}:
            return False
        if any(a.buffers[i] is not b.buffers[i] for i in role.shared):
            return False
        da, db = _out_dims(a, role), _out_dims(b, role)
        if da[:-1] != db[:-1] or da[-1] != int(pa["N"]) or db[-1] != int(pb["N"]):
            return False
        if math.prod(da[:-1]) != int(pa["M"]):
            return False
        return all(
            isinstance(a.buffers[i].owner, vkc.ConstantOp)
            and isinstance(b.buffers[i].owner, vkc.ConstantOp)
            for i in role.rows
        )

    def _readers(self, op: vkc.DispatchOp, role: RowKernel) -> list[vkc.DispatchOp] | None:
        """The dispatches reading `op`'s output, when it is a transient buffer written
        whole by `op` alone and read only by dispatches with a strided-load form."""
        out = vkc.root_buffer(op.buffers[role.out])
        owner = out.owner
        if not isinstance(owner, vkc.AllocOp) or owner.is_status:
            return None
        if dispatch_writes(op) != {out}:
            return None
        readers: list[vkc.DispatchOp] = []
        for user, index in buffer_uses(out):
            if user is op:
                continue
            if not isinstance(user, vkc.DispatchOp) or user.parent is not self.block:
                return None
            if user.kernel_op().bindings.data[index].writes or as_kernel(user) is None:
                return None
            if user not in readers:
                readers.append(user)
        return readers

    def _try(self, a: vkc.DispatchOp, b: vkc.DispatchOp) -> bool:
        role = ROW_KERNELS[a.kernel_op().kernel.data]
        if not self._siblings(a, b, role):
            return False
        readers_a, readers_b = self._readers(a, role), self._readers(b, role)
        if readers_a is None or readers_b is None:
            return False
        order = _index(self.block)
        if any(order[r] < order[b] for r in (*readers_a, *readers_b)):
            return False
        shared = {vkc.root_buffer(a.buffers[i]) for i in role.shared}
        if not moves_safely(a, b, shared):
            return False
        dims = _out_dims(a, role)
        n_a, n_b = dims[-1], _out_dims(b, role)[-1]
        rows = math.prod(dims[:-1])
        pairs: dict[tuple[SSAValue, SSAValue], vkc.ConstantOp | None] = {}
        for i in role.rows:
            pair = (a.buffers[i], b.buffers[i])
            if pair not in pairs:
                pairs[pair] = self._concat(*pair, n_a, n_b)
        if any(c is None for c in pairs.values()):
            return False
        out_type = _buffer(a.buffers[role.out])
        merged_out = vkc.AllocOp(
            result_types=[vkc.BufferType.get((*dims[:-1], n_a + n_b), out_type.element_type)]
        )
        plan = [
            (readers_a, vkc.root_buffer(a.buffers[role.out]), 0, n_a),
            (readers_b, vkc.root_buffer(b.buffers[role.out]), n_a, n_b),
        ]
        rewritten: dict[vkc.DispatchOp, Kernel] = {}
        for readers, root, start, width in plan:
            for reader in readers:
                kernel = rewritten.get(reader) or as_kernel(reader)
                assert kernel is not None
                value = _reembed(kernel, root, merged_out.result, rows, width, n_a + n_b, start)
                if value is None:
                    return False
                rewritten[reader] = Kernel(
                    kernel.dims, kernel.n, value, kernel.out, kernel.out_map, reader
                )
        replacements = {reader: materialize(self.symbols, k) for reader, k in rewritten.items()}
        if any(new is None for new in replacements.values()):
            drop_unplaced([*replacements.values(), merged_out, *pairs.values()])
            return False
        for c in pairs.values():
            assert c is not None
            self.block.insert_op_before(c, a)
        self.block.insert_op_before(merged_out, a)
        buffers = list(a.buffers)
        for i in role.rows:
            c = pairs[a.buffers[i], b.buffers[i]]
            assert c is not None
            buffers[i] = c.result
        buffers[role.out] = merged_out.result
        push = {**a.push_values(), "N": n_a + n_b}
        kernel = a.kernel_op()
        merged = make_dispatch(
            self.symbols, kernel.kernel.data, kernel.spec_values(), buffers, push, a
        )
        self.block.insert_op_before(merged, a)
        for reader, new in replacements.items():
            assert new is not None
            self.block.insert_op_before(new, reader)
            erase_dispatch(reader)
        erase_dispatch(a)
        erase_dispatch(b)
        self.merged += 1
        return True

    def _concat(
        self, first: SSAValue, second: SSAValue, n_a: int, n_b: int
    ) -> vkc.ConstantOp | None:
        """A constant holding `first`'s n_a rows then `second`'s n_b rows (None when the
        rows differ in width or a blob was elided from a printout)."""
        ca, cb = first.owner, second.owner
        assert isinstance(ca, vkc.ConstantOp)
        assert isinstance(cb, vkc.ConstantOp)
        ta, tb = _buffer(first), _buffer(second)
        if ta.element_type != tb.element_type or ta.layout != tb.layout:
            return None
        if ta.numel % n_a or tb.numel % n_b or ta.numel // n_a != tb.numel // n_b:
            return None
        if len(ta.dims) > 1 and ta.dims[0] == n_a and tb.dims[0] == n_b:
            if tuple(ta.dims[1:]) != tuple(tb.dims[1:]):
                return None
            shape: tuple[int, ...] = (n_a + n_b, *ta.dims[1:])
        else:
            shape = (ta.numel + tb.numel,)
        key = (ca.value, cb.value, ta)
        attr = self.concatenated.get(key)
        if attr is None:
            try:
                words = np.concatenate([ca.words(), cb.words()])
            except QoptError:
                return None
            attr = make_resource(
                "vkc_const", words, tensor_type(words.dtype, [words.size]), weights_of(self.module)
            )
            self.concatenated[key] = attr
        return vkc.ConstantOp(
            properties={"value": attr},
            result_types=[vkc.BufferType.get(shape, ta.element_type, ta.layout.data)],
        )


WHOLE_KERNELS = frozenset({"choose_qparams_rows", "quantize_rows", "quantize_rows_dynamic"})
"""Kernels whose result depends on their read bindings and push only and that write
every word of each written binding (when its extent is the buffer's size): two such
dispatches over the same buffers compute the same words."""


def _outputs(op: vkc.DispatchOp) -> list[SSAValue]:
    bindings = op.kernel_op().bindings.data
    return [v for b, v in zip(bindings, op.buffers, strict=True) if b.writes]


def _reads_of(op: vkc.DispatchOp) -> list[SSAValue]:
    bindings = op.kernel_op().bindings.data
    return [v for b, v in zip(bindings, op.buffers, strict=True) if not b.writes]


def _whole_outputs(op: vkc.DispatchOp) -> bool:
    """Whether `op` is a `WHOLE_KERNELS` dispatch writing all of each of its outputs,
    transient buffers (`vkc.alloc`, no views) written by it alone."""
    kernel = op.kernel_op()
    if kernel.kernel.data not in WHOLE_KERNELS:
        return False
    spec = catalogue()[kernel.kernel.data]
    if spec.extents is None:
        return False
    extents = spec.extents(op.push_values(), kernel.spec_values())
    bindings = kernel.bindings.data
    for binding, value in zip(bindings, op.buffers, strict=True):
        if not binding.writes:
            continue
        owner = value.owner
        if not isinstance(owner, vkc.AllocOp) or owner.is_status:
            return False
        if extents.get(binding.binding.data) != _buffer(value).numel:
            return False
        writers = {
            user
            for user, index in buffer_uses(value)
            if isinstance(user, vkc.DispatchOp) and user.kernel_op().bindings.data[index].writes
        }
        if writers != {op} or any(
            not isinstance(user, vkc.DispatchOp) for user, _ in buffer_uses(value)
        ):
            return False
    return True


def _reembed(
    kernel: Kernel,
    root: SSAValue,
    merged: SSAValue,
    rows: int,
    width: int,
    total: int,
    start: int,
) -> Expr | None:
    """`kernel`'s value with its loads of `root` ([rows, width] row-major) turned into
    loads of columns [start, start + width) of `merged` ([rows, total]); None when a
    load map does not stay strided (a windowed load's map is composed over the digits
    its window lets through)."""
    inner_dims = (1,) * (RANK - 2) + (rows, width)
    inner = (start, norm_strides(inner_dims, (0,) * (RANK - 2) + (total, 1)))

    def walk(expr: Expr) -> Expr | None:
        if isinstance(expr, Leaf):
            if expr.buffer is not root:
                return expr
            if rows == 1:
                return Leaf(merged, expr.offset + start, expr.strides, expr.window)
            dims = list(kernel.dims)
            if expr.window is not None:
                axis, _, size = expr.window
                dims[axis] = size  # the windowed digit stays in [0, size)
            found = compose(tuple(dims), (expr.offset, expr.strides), inner_dims, inner)
            if found is None:
                return None
            return Leaf(merged, found[0], norm_strides(dims, found[1]), expr.window)
        return rebuild(expr, [walk(arg) for arg in expr.args])

    return walk(kernel.value)


def merge_function(module: ModuleOp, function: func.FuncOp, blobs: _Blobs | None = None) -> int:
    """Merge `function`'s sibling linears (module docstring); returns how many merges.
    `blobs`: merged weights already made (by their parts), shared across functions."""
    return _Merger(module, function.body.block, {} if blobs is None else blobs).run()


@dataclass(frozen=True)
class VkcMergeSiblingsPass(ModulePass):
    """Merge sibling linear dispatches over concatenated weights (module docstring)."""

    name = "vkc-merge-siblings"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        blobs: _Blobs = {}
        rewrite_functions(op, lambda module, function: merge_function(module, function, blobs))


__all__ = ["ROW_KERNELS", "VkcMergeSiblingsPass", "merge_function"]

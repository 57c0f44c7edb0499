"""`vkc-fold-copies`: copies that move nothing, or that a scatter or an sdpa reads or
writes through.

Runs on vkc IR before buffers are planned (last of qopt-vulkan's dispatch fusions). A
`copy_strided` dispatch C (what `vkc-fuse-elementwise` leaves of a transpose, a slice
or a reshape) writing a transient buffer d whole, d written by C alone:

- identity copies: when C reads its source s row-major in full (the same words in the
  same order: a transpose of size-1 dims, as attention's at one token), d becomes a
  `vkc.view` of s and C goes; safe when every use of d is a dispatch reading it and no
  op from C to d's last reader writes s;
- copies into a scatter: when d's one reader is a `scatter_dim` reading it as its
  values, the scatter reads s through C's map instead (`VMAP = 1`: vals[VOFF + p*VSP +
  s*VSS + q*VSQ], C's map composed into the scatter's [P, S, Q] index space and checked
  to stay strided) and C goes; safe when no op between C and the scatter writes s (a
  KV-cache update from a slice of a merged q/k/v projection, or a transposed v);
- copies into attention: when d's one reader is an `sdpa` reading it as v (v's
  transpose, or its slice of a merged q/k/v output), the sdpa reads s through C's map
  composed into its [kv heads, S, EV] index space (`VMAP = 1`: v[VOFF + kvh*VSH +
  s*VSS + e*VSE]) and C goes; safe when no op between C and the sdpa writes s;
- copies out of attention: when s is the whole output of an `sdpa` (a transient
  buffer it alone writes, read by C alone) and C moves every word of it once (a
  permutation: the transpose of the attention output back to [batch, seq, heads,
  dim]), the sdpa writes each output word where C put it (`OMAP = 1`: out[OOFF +
  bh*OSH + l*OSL + e*OSE], C's inverse map, checked to be strided) and C goes; safe
  when every reader of d comes after C and the sdpa reads no d.

The words each reader sees are the ones C copied (copies move 32-bit words
unchanged; the sdpa runs the same f32 operations at other addresses), so the program
computes bit for bit what it did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass

from qopt.dialects import vkc
from qopt.kernels.extents import RANK
from qopt.lowering.vkc_rewrite import (
    MAX_COMPOSE,
    Kernel,
    KernelSymbols,
    Leaf,
    as_kernel,
    buffer_uses,
    compose,
    digit_index,
    dispatch_reads,
    dispatch_writes,
    erase_dispatch,
    make_dispatch,
    moves_safely,
    op_writes,
    rewrite_functions,
    row_major,
)


def _buffer(value: SSAValue) -> vkc.BufferType:
    type = value.type
    assert isinstance(type, vkc.BufferType)
    return type


@dataclass
class _Copy:
    op: vkc.DispatchOp
    kernel: Kernel
    source: Leaf
    dest: SSAValue
    """The written buffer (a `vkc.alloc` result)."""
    readers: list[tuple[vkc.DispatchOp, int]]


class _Folder:
    def __init__(self, module: ModuleOp, block: Block):
        self.block = block
        self.symbols = KernelSymbols(module)
        self.folded = 0

    def run(self) -> int:
        changed = True
        while changed:
            changed = False
            for op in list(self.block.ops):
                if op.parent is not self.block or not isinstance(op, vkc.DispatchOp):
                    continue
                copy = self._copy(op)
                if copy is not None and (
                    self._elide(copy)
                    or self._into_scatter(copy)
                    or self._into_sdpa(copy)
                    or self._out_of_sdpa(copy)
                ):
                    changed = True
                    self.folded += 1
        return self.folded

    def _copy(self, op: vkc.DispatchOp) -> _Copy | None:
        """`op` as a copy_strided writing a transient buffer whole, alone, read only by
        dispatches of this block (None otherwise)."""
        if op.kernel_op().kernel.data != "copy_strided":
            return None
        kernel = as_kernel(op)
        if kernel is None or not isinstance(kernel.value, Leaf):
            return None
        source = kernel.value
        dest = vkc.root_buffer(kernel.out)
        owner = dest.owner
        if not isinstance(owner, vkc.AllocOp) or owner.is_status:
            return None
        if dispatch_writes(op) != {dest} or source.window is not None:
            return None
        n = math.prod(kernel.dims)
        if kernel.n != n or _buffer(dest).numel != n:
            return None
        if kernel.out_map != (0, row_major(kernel.dims)):
            return None
        readers: list[tuple[vkc.DispatchOp, int]] = []
        for user, index in buffer_uses(dest):
            if user is op:
                continue
            if not isinstance(user, vkc.DispatchOp) or user.parent is not self.block:
                return None
            if user.kernel_op().bindings.data[index].writes:
                return None
            readers.append((user, index))
        if not readers or source.buffer is dest:
            return None
        return _Copy(op, kernel, source, dest, readers)

    def _elide(self, copy: _Copy) -> bool:
        source, dest = copy.source, copy.dest
        src_type, dest_type = _buffer(source.buffer), _buffer(dest)
        if (source.offset, source.strides) != (0, row_major(copy.kernel.dims)):
            return False
        if src_type.numel != dest_type.numel or src_type.element_type != dest_type.element_type:
            return False
        if src_type.layout != dest_type.layout or dest_type.layout.data != vkc.ROW_MAJOR:
            return False
        order = {op: k for k, op in enumerate(self.block.ops)}
        last = max((reader for reader, _ in copy.readers), key=lambda r: order[r])
        if order[last] < order[copy.op]:
            return False
        op = copy.op.next_op
        while op is not None:
            if source.buffer in op_writes(op):
                return False
            if op is last:
                break
            op = op.next_op
        view = vkc.ViewOp(operands=[source.buffer], result_types=[dest_type])
        self.block.insert_op_before(view, copy.op)
        erase_dispatch(copy.op)
        dest.replace_all_uses_with(view.result)
        owner = dest.owner
        assert isinstance(owner, vkc.AllocOp)
        owner.detach()
        owner.erase()
        return True

    def _into_scatter(self, copy: _Copy) -> bool:
        if len({reader for reader, _ in copy.readers}) != 1:
            return False
        scatter, index = copy.readers[0]
        kernel = scatter.kernel_op()
        if kernel.kernel.data != "scatter_dim" or index != 0 or len(copy.readers) != 1:
            return False
        spec = kernel.spec_values()
        if spec.get("VMAP", 0) != 0:
            return False
        push = scatter.push_values()
        p, s, q = (int(push[k]) for k in ("P", "S", "Q"))
        if p * s * q != copy.kernel.n or p * s * q == 0:
            return False
        source = copy.source
        found = self._composed((p, s, q), copy)
        if found is None:
            return False
        offset, (vsp, vss, vsq) = found
        if not moves_safely(copy.op, scatter, {source.buffer}):
            return False
        if source.buffer in dispatch_writes(scatter):
            return False
        new_spec = {
            **spec,
            "VMAP": 1,
            "VOFF": offset,
            "VSP": vsp,
            "VSS": vss,
            "VSQ": vsq,
        }
        buffers = [source.buffer, *scatter.buffers[1:]]
        new = make_dispatch(self.symbols, "scatter_dim", new_spec, buffers, push, scatter)
        self.block.insert_op_before(new, scatter)
        erase_dispatch(scatter)
        erase_dispatch(copy.op)
        return True

    def _into_sdpa(self, copy: _Copy) -> bool:
        """The copy's one reader an sdpa reading it as v: the sdpa reads the copy's
        source through the composed map (VMAP) instead."""
        if len({reader for reader, _ in copy.readers}) != 1 or len(copy.readers) != 1:
            return False
        sdpa, index = copy.readers[0]
        kernel = sdpa.kernel_op()
        if kernel.kernel.data != "sdpa" or index != 2:
            return False
        spec = kernel.spec_values()
        if spec.get("VMAP", 0) != 0:
            return False
        push = sdpa.push_values()
        bh, s, ev, group = (int(push[k]) for k in ("BH", "S", "EV", "G"))
        if bh == 0 or group == 0 or s * ev == 0:
            return False
        heads = (bh - 1) // group + 1  # the key/value heads read
        if heads * s * ev != copy.kernel.n:
            return False
        found = self._composed((heads, s, ev), copy)
        if found is None:
            return False
        offset, (vsh, vss, vse) = found
        if not moves_safely(copy.op, sdpa, {copy.source.buffer}):
            return False
        if copy.source.buffer in dispatch_writes(sdpa):
            return False
        new_spec = {**spec, "VMAP": 1, "VOFF": offset, "VSH": vsh, "VSS": vss, "VSE": vse}
        buffers = list(sdpa.buffers)
        buffers[2] = copy.source.buffer
        new = make_dispatch(self.symbols, "sdpa", new_spec, buffers, push, sdpa)
        self.block.insert_op_before(new, sdpa)
        erase_dispatch(sdpa)
        erase_dispatch(copy.op)
        return True

    def _out_of_sdpa(self, copy: _Copy) -> bool:
        """The copy's source the whole output of an sdpa, read by nothing else and
        copied word for word (a permutation: the transpose after attention): the sdpa
        writes each output word where the copy put it (OMAP) and the copy goes."""
        source = copy.source
        root = source.buffer
        owner = root.owner
        if not isinstance(owner, vkc.AllocOp) or owner.is_status:
            return False
        uses = buffer_uses(root)
        users = {user for user, _ in uses}
        if copy.op not in users or len(users) != 2:
            return False
        (sdpa,) = users - {copy.op}
        if not isinstance(sdpa, vkc.DispatchOp) or sdpa.parent is not self.block:
            return False
        kernel = sdpa.kernel_op()
        if kernel.kernel.data != "sdpa" or kernel.spec_values().get("OMAP", 0) != 0:
            return False
        if [index for user, index in uses if user is sdpa] != [4] or sdpa.buffers[4] is not root:
            return False
        if dispatch_writes(sdpa) != {root}:
            return False
        push = sdpa.push_values()
        bh, lq, ev = (int(push[k]) for k in ("BH", "L", "EV"))
        n = copy.kernel.n
        if bh * lq * ev != n or _buffer(root).numel != n or n == 0 or n > MAX_COMPOSE:
            return False
        # the copy's dest index of each source word: the inverse of its load map
        loads = source.offset + digit_index(copy.kernel.dims, source.strides)
        if int(loads.min()) != 0 or int(loads.max()) != n - 1:
            return False
        dest_of = np.full(n, -1, dtype=np.int64)
        dest_of[loads] = np.arange(n, dtype=np.int64)
        if (dest_of < 0).any():  # not a permutation
            return False
        found = _strided((bh, lq, ev), dest_of)
        if found is None:
            return False
        offset, (osh, osl, ose) = found
        order = {op: k for k, op in enumerate(self.block.ops)}
        if order[sdpa] > order[copy.op]:
            return False
        if any(order[reader] < order[copy.op] for reader, _ in copy.readers):
            return False
        dest = copy.dest
        if dest in dispatch_reads(sdpa):
            return False
        dest_owner = dest.owner
        assert isinstance(dest_owner, vkc.AllocOp)
        if order[dest_owner] > order[sdpa]:  # defined before its new writer
            dest_owner.detach()
            self.block.insert_op_before(dest_owner, sdpa)
        spec = {**kernel.spec_values(), "OMAP": 1, "OOFF": offset}
        spec.update({"OSH": osh, "OSL": osl, "OSE": ose})
        buffers = [*sdpa.buffers[:4], dest, *sdpa.buffers[5:]]
        new = make_dispatch(self.symbols, "sdpa", spec, buffers, push, sdpa)
        self.block.insert_op_before(new, sdpa)
        erase_dispatch(copy.op)
        erase_dispatch(sdpa)
        return True

    def _composed(self, dims: tuple[int, ...], copy: _Copy) -> tuple[int, tuple[int, ...]] | None:
        """The copy's load map read over `dims` (row-major over the copy's words), when
        strided with offset and strides below 2^31; else None."""
        outer = (1,) * (RANK - len(dims)) + dims
        source = copy.source
        found = compose(
            outer, (0, row_major(outer)), copy.kernel.dims, (source.offset, source.strides)
        )
        if found is None:
            return None
        offset, strides = found
        limit = (1 << 31) - 1
        if offset > limit or any(v > limit for v in strides):
            return None
        return offset, tuple(strides[RANK - len(dims) :])


def _strided(dims: tuple[int, ...], target: np.ndarray) -> tuple[int, tuple[int, ...]] | None:
    """(offset, strides) with target[i] = offset + sum(digit_k(i) * strides_k) over
    row-major `dims`, all in [0, 2^31); else None."""
    offset = int(target[0])
    strides = []
    step = 1
    steps = []
    for d in reversed(dims):
        steps.append(step)
        step *= d
    for d, at in zip(dims, reversed(steps), strict=True):
        strides.append(0 if d == 1 else int(target[at]) - offset)
    limit = (1 << 31) - 1
    if offset < 0 or offset > limit or any(v < 0 or v > limit for v in strides):
        return None
    if not np.array_equal(target, offset + digit_index(dims, strides)):
        return None
    return offset, tuple(strides)


def fold_function(module: ModuleOp, function: func.FuncOp) -> int:
    """Fold `function`'s copies (module docstring); returns how many it folded."""
    return _Folder(module, function.body.block).run()


@dataclass(frozen=True)
class VkcFoldCopiesPass(ModulePass):
    """Drop identity copies and fold copies into the scatters and attentions reading
    them, or out of the attentions writing them (module docstring)."""

    name = "vkc-fold-copies"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_functions(op, fold_function)


__all__ = ["VkcFoldCopiesPass", "fold_function"]
